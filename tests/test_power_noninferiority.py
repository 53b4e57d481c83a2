"""evalpipe.power.noninferiority and evalpipe.power.words: the verdict and the report's sentences."""

from __future__ import annotations

import pytest

from evalpipe.power.mde import (
    MinimumDetectableEffect,
    assumed_noise,
    minimum_detectable_effect,
    sample_size_for_mde,
)
from evalpipe.power.noninferiority import non_inferiority
from evalpipe.power.paired import excess_discordance, paired_difference
from evalpipe.power.words import mde_sentence, noise_sentence, non_inferiority_sentence, sample_size_sentence


@pytest.mark.parametrize(
    ("interval_pts", "margin", "verdict"),
    [
        ((-1.9, 3.0), 2.0, "non-inferior"),
        ((-2.0, 3.0), 2.0, "inconclusive"),  # the bound must clear the margin, not touch it
        ((-2.1, 3.0), 2.0, "inconclusive"),
        ((-9.1, -0.5), 2.0, "inconclusive"),  # a drop, but it cannot be said to exceed 2 pts
        ((-9.1, -2.0), 2.0, "inconclusive"),  # upper bound at the margin: not beyond it
        ((-9.1, -2.1), 2.0, "inferior"),
        ((-1.5, -0.2), 2.0, "non-inferior"),  # a significant drop smaller than the margin
        ((0.0, 1.0), 0.0, "inconclusive"),
        ((0.1, 1.0), 0.0, "non-inferior"),
    ],
)
def test_three_way_verdict(interval_pts: tuple[float, float], margin: float, verdict: str) -> None:
    result = non_inferiority((interval_pts[0] / 100, interval_pts[1] / 100), margin)
    assert result.verdict == verdict
    assert result.passed == (verdict == "non-inferior")
    assert result.lower_bound_pts == pytest.approx(interval_pts[0])


def test_refuses_a_negative_margin_and_a_reversed_interval() -> None:
    with pytest.raises(ValueError):
        non_inferiority((-0.01, 0.01), -2)
    with pytest.raises(ValueError):
        non_inferiority((0.01, -0.01), 2)


def test_sentences_read_as_the_issue_writes_them() -> None:
    ok = non_inferiority((-0.013, 0.02), 2)
    assert (
        non_inferiority_sentence(ok)
        == "non-inferior within 2 pts (95 % lower bound of test − control: -1.3 pts)"
    )
    open_question = non_inferiority((-0.091, 0.01), 2)
    assert non_inferiority_sentence(open_question).startswith(
        "inconclusive: the sample cannot exclude a 9.1-pt drop"
    )
    worse = non_inferiority((-0.2, -0.05), 2.5)
    assert non_inferiority_sentence(worse) == (
        "inferior: the whole 95 % interval lies below -2.5 pts (upper bound -5.0 pts)"
    )


def test_a_bound_next_to_the_margin_prints_enough_decimals() -> None:
    result = non_inferiority((-0.01996, 0.01), 2)
    assert result.verdict == "non-inferior"
    assert "-1.996 pts" in non_inferiority_sentence(result)  # not "-2.0", which would read as a failure


def test_mde_sentence() -> None:
    noise = assumed_noise(0.9)
    mde = MinimumDetectableEffect(
        mde=0.074,
        n=400,
        repeats=1,
        noise=noise,
        noise_second_moment=0.18,
        method="exact McNemar",
        alpha=0.05,
        power=0.8,
    )
    assert mde_sentence(mde) == (
        "this sample detects a drop of ≥ 7.4 pts with 80 % power; smaller regressions cannot be ruled out"
    )
    tiny = minimum_detectable_effect(5, noise, base_accuracy=0.9)
    assert mde_sentence(tiny) == (
        "this sample (5 samples) cannot detect a drop of any size with 80 % power; no regression can be ruled out"
    )


def test_sample_size_sentence() -> None:
    needed = sample_size_for_mde(0.03, assumed_noise(0.96), population=1319)
    assert (
        sample_size_sentence(needed)
        == f"an MDE of 3 pts needs {needed.n_needed} samples (population 1319: reachable)"
    )
    repeated = sample_size_for_mde(0.03, assumed_noise(0.96), repeats=4)
    assert sample_size_sentence(repeated).endswith("× 4 attempts")


def test_end_to_end_from_paired_runs() -> None:
    """160 samples, 5 lost and 2 gained by the test configuration: no verdict within 2 pts."""
    control = [[1.0]] * 150 + [[0.0]] * 10
    test = [[0.0]] * 5 + [[1.0]] * 145 + [[1.0]] * 2 + [[0.0]] * 8
    diff = paired_difference(test, control)
    assert (diff.test_better, diff.control_better) == (2, 5)
    result = non_inferiority(diff.interval, 2)
    assert result.verdict == "inconclusive" and not result.passed
    assert result.excludable_drop_pts == pytest.approx(-100 * diff.interval[0])


def test_noise_sentence_compares_ab_with_aa_on_the_same_samples() -> None:
    """12 samples changed by A/B only, 2 by A/A only (1 by both): exact McNemar on 12 vs 2."""
    ab = [True] * 13 + [False] * 147
    aa = [True] + [False] * 12 + [True] * 2 + [False] * 145
    result = excess_discordance(ab, aa)
    assert (result.ab_changed, result.aa_changed, result.ab_only, result.aa_only) == (13, 3, 12, 2)
    assert result.exceeds
    assert noise_sentence(result) == (
        f"A/B changed 13 of 160 answers, the A/A control 3: more than the server's own noise "
        f"(exact McNemar p = {result.p_value:.3g})"
    )
    same = excess_discordance([True, False, False, True], [False, True, False, True])
    assert not same.exceeds
    assert "not distinguishable" in noise_sentence(same)
    with pytest.raises(ValueError):
        excess_discordance([True], [True, False])
