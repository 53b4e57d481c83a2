"""evalpipe.stats.paired: test − control on the same samples, with and without repeats; McNemar; the bootstrap."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from scipy.stats import binomtest

from evalpipe.stats.paired import (
    adjusted_wald_interval,
    exact_mcnemar_p,
    excess_discordance,
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


def test_exact_mcnemar_is_the_two_sided_binomial_test_on_the_discordant_pairs() -> None:
    """Every table with up to 30 discordant pairs against scipy's exact binomial test (p = 1/2)."""
    assert exact_mcnemar_p(0, 0) == 1.0
    for total in range(1, 31):
        for first_only in range(total + 1):
            expected = binomtest(first_only, total, 0.5).pvalue
            assert exact_mcnemar_p(first_only, total - first_only) == pytest.approx(expected, rel=1e-9)


def test_excess_discordance_counts_samples_changed_by_one_pair_only() -> None:
    """12 samples changed by A/B only, 2 by A/A only (1 by both): exact McNemar on 12 vs 2."""
    ab = [True] * 13 + [False] * 147
    aa = [True] + [False] * 12 + [True] * 2 + [False] * 145
    result = excess_discordance(ab, aa)
    assert (result.ab_changed, result.aa_changed, result.ab_only, result.aa_only) == (13, 3, 12, 2)
    assert result.p_value == exact_mcnemar_p(12, 2) and result.exceeds
    same = excess_discordance([True, False, False, True], [False, True, False, True])
    assert not same.exceeds
    with pytest.raises(ValueError):
        excess_discordance([True], [True, False])


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


# Coverage of the paired bootstrap (the interval compare.json prints next to the first-attempt difference),
# independently of its formula: paired 0/1 outcomes drawn from a known 2×2 table (test-only, control-only,
# both right, both wrong), the truth is P(test-only) − P(control-only).  1000 resamples per interval (the
# percentile's coverage hardly depends on it; compare.json uses 10 000); measured with 4000 replications:
# 0.954 at n = 50 (15 expected discordant pairs), 0.953 at n = 160 (16), 0.954 at n = 200 (36).  With 1500
# (1000 at n = 160) replications the Monte Carlo standard deviation is ~0.006 (0.007), so 0.93-0.97 is
# nominal ± 3.5 (3) SD.
def _bootstrap_coverage(
    n: int, p_test_only: float, p_control_only: float, *, trials: int, seed: int, confidence: float = 0.95
) -> float:
    rng = np.random.default_rng(seed)
    rest = (1.0 - p_test_only - p_control_only) / 2
    counts = rng.multinomial(n, [p_test_only, p_control_only, rest, rest], size=trials)
    truth = p_test_only - p_control_only
    covered = 0
    for trial, (up, down, both, neither) in enumerate(counts):
        a = [1] * up + [0] * down + [1] * both + [0] * neither
        b = [0] * up + [1] * down + [1] * both + [0] * neither
        low, high = paired_bootstrap(a, b, resamples=1000, seed=seed + trial, confidence=confidence)
        covered += low <= truth <= high
    return covered / trials


@pytest.mark.parametrize(("n", "p_test_only", "p_control_only"), [(50, 0.10, 0.20), (160, 0.05, 0.05)])
def test_paired_bootstrap_coverage_by_simulation(n: int, p_test_only: float, p_control_only: float) -> None:
    coverage = _bootstrap_coverage(
        n, p_test_only, p_control_only, trials=1000 if n > 100 else 1500, seed=20261206 + n
    )
    assert 0.93 <= coverage <= 0.97, coverage


def test_paired_bootstrap_coverage_check_fails_a_too_narrow_interval() -> None:
    """Negative control: the same simulation, an 85 % interval reported as 95 % (0.74 × the half-width),
    falls below the band (measured 0.84-0.86)."""
    coverage = _bootstrap_coverage(50, 0.10, 0.20, trials=1500, seed=20261256, confidence=0.85)
    assert coverage < 0.93, coverage


def test_paired_bootstrap_undercovers_with_few_discordant_pairs() -> None:
    """Where the percentile bootstrap is not supposed to hold: 3 expected discordant pairs (n = 50, 2 % and
    4 %) — a resample of a table without discordant pairs has no spread, and coverage falls to ~0.86.  This is
    why the non-inferiority verdict reads the Bonett–Price interval (``test_interval_coverage_one_attempt``:
    ≥ 0.93 in that regime), not this one."""
    coverage = _bootstrap_coverage(50, 0.02, 0.04, trials=1000, seed=20261207)
    assert coverage < 0.93, coverage
    low, high = adjusted_wald_interval(np.zeros(50))
    assert paired_bootstrap([1] * 50, [1] * 50, resamples=1000, seed=1, confidence=0.95) == (0.0, 0.0)
    assert low < 0.0 < high
