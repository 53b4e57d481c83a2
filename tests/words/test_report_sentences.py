"""evalpipe.words.sentences: the words compare.md, the report and ``evalpipe plan`` print for the statistics."""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import Discordance
from evalpipe.stats.noninferiority import non_inferiority
from evalpipe.stats.paired import excess_discordance
from evalpipe.stats.power import (
    MinimumDetectableEffect,
    assumed_noise,
    minimum_detectable_effect,
    sample_size_for_mde,
)
from evalpipe.words.numbers import fmt_pts, fmt_signed_pts_from_fraction
from evalpipe.words.sentences import (
    aa_sentence,
    mde_sentence,
    noise_sentence,
    non_inferiority_sentence,
    sample_size_sentence,
)


def test_one_helper_per_unit() -> None:
    """Points stay points (one decimal, unsigned); a fraction becomes signed points."""
    assert fmt_pts(7.44) == "7.4"
    assert fmt_pts(-1.25) == "-1.2"
    assert fmt_signed_pts_from_fraction(0.031) == "+3.1"
    assert fmt_signed_pts_from_fraction(-0.0125) == "-1.2"
    assert fmt_signed_pts_from_fraction(0.0) == "+0.0"


def test_aa_sentence_names_responses_only_when_they_were_compared() -> None:
    aa = Discordance(n_pairs=50, first_better=2, second_better=1, discordant=3, second_moment=0.06)
    assert (
        aa_sentence(aa) == "A/A: the score changed on 3 of 50 samples (2 better the first time, 1 the second)"
    )
    hashed = aa.model_copy(update={"responses_compared": 50, "responses_differed": 7})
    assert aa_sentence(hashed) == (
        "A/A: 7 of 50 responses differed byte for byte; "
        "the score changed on 3 of 50 samples (2 better the first time, 1 the second)"
    )


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


def test_noise_sentence_compares_ab_with_aa_on_the_same_samples() -> None:
    """12 samples changed by A/B only, 2 by A/A only (1 by both): the counts are tested in test_stats_paired."""
    result = excess_discordance(
        [True] * 13 + [False] * 147, [True] + [False] * 12 + [True] * 2 + [False] * 145
    )
    assert noise_sentence(result) == (
        f"A/B changed 13 of 160 answers, the A/A control 3: more than the server's own noise "
        f"(exact McNemar p = {result.p_value:.3g})"
    )
    same = excess_discordance([True, False, False, True], [False, True, False, True])
    assert noise_sentence(same) == (
        "A/B changed 2 of 4 answers, the A/A control 2: not distinguishable from the server's own noise "
        "(exact McNemar p = 1)"
    )
