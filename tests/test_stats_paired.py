"""evalpipe.stats.paired: test − control on the same samples, with and without repeats; McNemar; the bootstrap."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest

from evalpipe.stats.paired import (
    adjusted_wald_interval,
    exact_mcnemar_p,
    paired_bootstrap,
    paired_difference,
)


def _correlated_runs(n: int, seed: int) -> tuple[list[int], list[int]]:
    rng = np.random.default_rng(seed)
    a = rng.binomial(1, 0.7, size=n)
    flip = rng.random(n) < 0.12
    b = np.where(flip, 1 - a, a)
    return a.tolist(), b.tolist()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_attempt_is_mcnemar_and_close_to_the_paired_bootstrap(seed: int) -> None:
    """Counts, difference and McNemar p of the 2×2 table; the Bonett–Price interval close to the bootstrap."""
    a, b = _correlated_runs(200, seed)
    result = paired_difference([[x] for x in a], [[y] for y in b])
    a_only = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    b_only = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    assert (result.test_better, result.control_better) == (a_only, b_only)
    assert result.difference == pytest.approx((sum(a) - sum(b)) / 200)
    assert result.test == "exact McNemar" and result.binary
    assert result.p_value == exact_mcnemar_p(a_only, b_only)
    assert result.second_moment == pytest.approx((a_only + b_only) / 200)
    low, high = paired_bootstrap(a, b, resamples=10_000, seed=20261202, confidence=0.95)
    assert result.interval[0] == pytest.approx(low, abs=0.01)
    assert result.interval[1] == pytest.approx(high, abs=0.01)


def test_miller_standard_error_of_the_paired_differences() -> None:
    a, b = _correlated_runs(120, 4)
    d = np.array(a, dtype=float) - np.array(b, dtype=float)
    result = paired_difference([[x] for x in a], [[y] for y in b])
    var = np.var(a, ddof=1) + np.var(b, ddof=1) - 2 * np.cov(a, b, ddof=1)[0, 1]
    assert result.standard_error == pytest.approx(np.std(d, ddof=1) / 120**0.5)
    assert result.standard_error == pytest.approx((var / 120) ** 0.5)


def test_bonett_price_interval_by_hand() -> None:
    """7 test-only and 2 control-only pairs out of 50, Bonett & Price (2012) written out."""
    z = NormalDist().inv_cdf(0.975)
    p12, p21 = (7 + 1) / 52, (2 + 1) / 52
    half = z * ((p12 + p21 - (p12 - p21) ** 2) / 52) ** 0.5
    test = [[1.0]] * 7 + [[0.0]] * 2 + [[1.0]] * 30 + [[0.0]] * 11
    control = [[0.0]] * 7 + [[1.0]] * 2 + [[1.0]] * 30 + [[0.0]] * 11
    result = paired_difference(test, control)
    assert result.difference == pytest.approx(5 / 50)
    assert result.interval == pytest.approx((p12 - p21 - half, p12 - p21 + half), abs=1e-12)


def test_no_discordant_pair_still_has_a_width() -> None:
    """50 identical answers do not prove a 0-pt difference: about ±5 pts remain (Wald would give 0)."""
    result = paired_difference([[1.0]] * 45 + [[0.0]] * 5, [[1.0]] * 45 + [[0.0]] * 5)
    assert result.standard_error == 0.0
    assert result.p_value == 1.0
    low, high = result.interval
    assert low == pytest.approx(-high) and 0.05 < high < 0.06


def test_repeats_use_the_score_test() -> None:
    """Per-sample differences 0.5, 0.25, -0.25, 0.5: z = 1.0 / sqrt(0.625)."""
    test = [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]]
    control = [[1.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    result = paired_difference(test, control)
    assert result.test == "paired score test" and not result.binary
    assert result.difference == pytest.approx(0.25)
    assert result.second_moment == pytest.approx(0.625 / 4)
    assert result.p_value == pytest.approx(2 * (1 - NormalDist().cdf(1.0 / 0.625**0.5)))
    assert (result.test_better, result.control_better) == (3, 1)


def test_repeats_that_never_disagree_keep_the_design_test() -> None:
    """The test is chosen by the design (k attempts), not by whether the answers happened to agree."""
    result = paired_difference([[1.0, 1.0]] * 8 + [[0.0, 0.0]] * 2, [[1.0, 1.0]] * 10)
    assert result.test == "paired score test"


def test_refuses_unpaired_runs() -> None:
    with pytest.raises(ValueError, match="not paired"):
        paired_difference([[1.0]], [[1.0], [0.0]])


# Regular regime (15+ expected discordant pairs): coverage within 93-97 %.  Few discordant pairs: the
# +1/+1 adjustment makes the interval conservative (up to 99.99 % with 2 expected pairs) — never below
# 93 %; that is the price of never calling 0 flips in 100 samples "non-inferior within 2 pts".
@pytest.mark.parametrize(
    ("n", "p_test_only", "p_control_only", "upper"),
    [
        (400, 0.01, 0.05, 0.97),
        (200, 0.05, 0.10, 0.97),
        (50, 0.10, 0.20, 0.97),
        (1000, 0.03, 0.05, 0.97),
        (50, 0.02, 0.08, 1.0),
        (160, 0.03, 0.03, 1.0),
        (100, 0.0, 0.02, 1.0),
    ],
)
def test_interval_coverage_one_attempt(
    n: int, p_test_only: float, p_control_only: float, upper: float
) -> None:
    """Coverage of the true difference over 3000 simulated paired runs (nominal 95 %)."""
    rng = np.random.default_rng(20261219 + n)
    counts = rng.multinomial(n, [p_test_only, p_control_only, 1 - p_test_only - p_control_only], size=3000)
    truth = p_test_only - p_control_only
    covered = 0
    for up, down, _ in counts:
        d = np.concatenate([np.ones(up), -np.ones(down), np.zeros(n - up - down)])
        low, high = adjusted_wald_interval(d)
        covered += low <= truth <= high
    assert 0.93 <= covered / 3000 <= upper, covered / 3000


@pytest.mark.parametrize(("n", "k", "upper"), [(400, 4, 0.97), (300, 2, 0.97), (60, 4, 1.0)])
def test_interval_coverage_with_repeats(n: int, k: int, upper: float) -> None:
    """Per-sample probabilities differ between arms on some samples (a real, mixed effect) and answers
    vary within samples; coverage of E[q_test − q_control] over 3000 runs (60 samples: conservative)."""
    rng = np.random.default_rng(20261220 + n)
    q_control = rng.choice([1.0, 0.8, 0.5, 0.0], p=[0.5, 0.2, 0.2, 0.1], size=(3000, n))
    shift = rng.choice([0.0, -0.3, 0.2], p=[0.8, 0.12, 0.08], size=(3000, n))
    q_test = np.clip(q_control + shift, 0.0, 1.0)
    truth = float(np.mean(q_test - q_control))  # the mixture's expectation, to Monte Carlo precision
    d = (rng.binomial(k, q_test) - rng.binomial(k, q_control)) / k
    covered = 0
    for row in d:
        low, high = adjusted_wald_interval(row)
        covered += low <= truth <= high
    assert 0.93 <= covered / 3000 <= upper, covered / 3000
