"""evalpipe.stats.intervals: Wilson, the stratified proportion and the clustered mean.

Wilson against known values (the textbook 8 of 10, the edges 0 and n); the stratified
proportion against Cochran's formula written out and, independently, by a coverage simulation over finite
populations; the clustered mean against inspect_ai's clustered standard error and by simulation.
"""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.stats.intervals import StratumData, clustered_mean, stratified_proportion, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (8, 10, 0.4902, 0.9433),  # the textbook example
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (45, 50, 0.7864, 0.9565),
    ],
)
def test_wilson_known_values(k: int, n: int, lo: float, hi: float) -> None:
    ci = wilson_interval(k, n)
    assert ci is not None
    assert ci[0] == pytest.approx(lo, abs=5e-5)
    assert ci[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_is_statsmodels_float_for_float() -> None:
    """The interval is statsmodels' ``proportion_confint(method="wilson")`` written out (z looked up once):
    the same floats at integer and fractional counts (the effective sample sizes), the ends and other levels."""
    from statsmodels.stats.proportion import proportion_confint

    rng = np.random.default_rng(11)
    cases = [(0, 7), (7, 7), (1, 1), (0.0, 0.5)]
    cases += [(int(k), int(n)) for n in rng.integers(1, 3000, 80) for k in [rng.integers(0, n + 1)]]
    cases += [(float(f * n), float(n)) for n, f in zip(rng.uniform(0.5, 2000, 80), rng.random(80), strict=True)]
    for confidence in (0.95, 0.99):
        for k, n in cases:
            lo, hi = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
            assert wilson_interval(k, n, confidence) == (max(0.0, float(lo)), min(1.0, float(hi))), (k, n)


def test_wilson_empty_and_invalid() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_stratified_hand_computed() -> None:
    # N = (100, 300), n = (10, 10), k = (5, 2)
    res = stratified_proportion(
        [
            StratumData("a", 100, [1.0] * 5 + [0.0] * 5),
            StratumData("b", 300, [1.0] * 2 + [0.0] * 8),
        ]
    )
    assert res is not None
    w1, w2 = 0.25, 0.75
    p = w1 * 0.5 + w2 * 0.2
    s1 = 10 / 9 * 0.25  # sample variance (ddof=1) of five 1s and five 0s
    s2 = 10 / 9 * 0.16
    var = w1**2 * (1 - 10 / 100) * s1 / 10 + w2**2 * (1 - 10 / 300) * s2 / 10
    assert res.estimate == pytest.approx(p)
    assert res.variance == pytest.approx(var)
    assert res.standard_error == pytest.approx(var**0.5)
    n_eff = min(20, p * (1 - p) / var)
    assert res.effective_sample_size == pytest.approx(n_eff)
    expected = wilson_interval(p * n_eff, n_eff)
    assert expected is not None
    assert res.interval == pytest.approx(expected)
    assert res.interval[0] < p < res.interval[1]


def test_stratified_live_code_bench_like_equal_allocation() -> None:
    # 2 per difficulty, N = 100/200/50: easy 2/2, medium 1/2, hard 0/2 → p = 200/350
    res = stratified_proportion(
        [
            StratumData("easy", 100, [1.0, 1.0]),
            StratumData("medium", 200, [1.0, 0.0]),
            StratumData("hard", 50, [0.0, 0.0]),
        ]
    )
    assert res is not None
    assert res.estimate == pytest.approx(4 / 7)
    assert res.variance == pytest.approx((4 / 7) ** 2 * (1 - 2 / 200) * 0.5 / 2)
    assert res.effective_sample_size == pytest.approx((4 / 7) * (3 / 7) / res.variance)
    assert res.effective_sample_size < 6


def test_stratified_zero_variance_caps_effective_n() -> None:
    # all-correct and all-wrong strata: Var = 0, n_eff falls back to n (never a zero-width interval)
    res = stratified_proportion([StratumData("a", 10, [1.0] * 3), StratumData("b", 30, [0.0] * 3)])
    assert res is not None
    assert res.estimate == pytest.approx(0.25)
    assert res.variance == 0
    assert res.effective_sample_size == 6
    assert res.interval[1] - res.interval[0] > 0.3


def test_stratified_single_entry_stratum_is_conservative() -> None:
    res = stratified_proportion([StratumData("a", 50, [1.0]), StratumData("b", 50, [1.0, 0.0, 1.0])])
    assert res is not None
    # stratum a contributes s^2 = 1/4, not 0
    assert res.variance == pytest.approx(0.25 * (1 - 1 / 50) * 0.25 + 0.25 * (1 - 3 / 50) * (1 / 3) / 3)


def test_stratified_proportional_allocation_matches_simple_mean() -> None:
    res = stratified_proportion(
        [StratumData("a", 100, [1.0, 0.0]), StratumData("b", 200, [1.0, 1.0, 0.0, 0.0])]
    )
    assert res is not None
    assert res.estimate == pytest.approx(3 / 6)


def test_stratified_rejects_sample_larger_than_population() -> None:
    with pytest.raises(ValueError):
        stratified_proportion([StratumData("a", 1, [1.0, 0.0])])
    assert stratified_proportion([]) is None


# Coverage of the stratified interval, independently of its formula: finite populations with known strata
# (N_h entries, a known share correct), samples drawn without replacement per stratum (hypergeometric), equal
# allocation over unequal strata as LiveCodeBench's per-difficulty plan does.  The truth is the population
# proportion sum_h N_h P_h / N.  Measured with 20 000 replications (seed 1): 0.943, 0.954 and 0.945 for the
# three designs below (n_eff below the cap in ~99 %, 74 % and 87 % of the draws); at 6 per stratum 0.984, where
# the cap at n and the s^2 = 1/4 rule make it conservative, as the module says.  With 2000 replications the
# Monte Carlo standard deviation is ~0.005, so 0.93-0.97 is nominal ± 4 SD.
STRATIFIED_DESIGNS = [
    ((1000, 100), (0.7, 0.4), (20, 20)),
    ((600, 300, 100), (0.8, 0.6, 0.3), (20, 20, 20)),
    ((800, 150, 50), (0.85, 0.5, 0.2), (30, 30, 30)),
]


def _stratified_coverage(
    populations: tuple[int, ...], shares: tuple[float, ...], sizes: tuple[int, ...], *, trials: int, seed: int
) -> dict[str, float]:
    """Share of simulated samples whose interval covers the population proportion, for the stratified
    interval and for two deliberately wrong ones on the same draws: half as wide (Wilson at 4 n_eff) and
    the pooled Wilson interval of the unweighted sample (the equal-allocation score taken for the population's)."""
    rng = np.random.default_rng(seed)
    pops = np.array(populations)
    ones = np.round(np.array(shares) * pops).astype(int)
    truth = ones.sum() / pops.sum()
    drawn = np.stack(
        [rng.hypergeometric(ones[h], pops[h] - ones[h], sizes[h], size=trials) for h in range(len(pops))],
        axis=1,
    )
    covered = {"stratified": 0, "too narrow": 0, "unweighted": 0}
    for row in drawn:
        strata = [
            StratumData(str(h), int(pops[h]), [1.0] * int(k) + [0.0] * (sizes[h] - int(k)))
            for h, k in enumerate(row)
        ]
        result = stratified_proportion(strata)
        assert result is not None
        narrow = wilson_interval(
            4 * result.effective_sample_size * result.estimate, 4 * result.effective_sample_size
        )
        pooled = wilson_interval(int(row.sum()), sum(sizes))
        assert narrow is not None and pooled is not None
        for name, (low, high) in (
            ("stratified", result.interval),
            ("too narrow", narrow),
            ("unweighted", pooled),
        ):
            covered[name] += low <= truth <= high
    return {name: hits / trials for name, hits in covered.items()}


@pytest.mark.parametrize(("populations", "shares", "sizes"), STRATIFIED_DESIGNS)
def test_stratified_interval_coverage_by_simulation(
    populations: tuple[int, ...], shares: tuple[float, ...], sizes: tuple[int, ...]
) -> None:
    coverage = _stratified_coverage(populations, shares, sizes, trials=2000, seed=20261204)
    assert 0.93 <= coverage["stratified"] <= 0.97, coverage
    # negative controls on the same draws: the check fails an interval half as wide (0.67-0.69 here) and
    # the unweighted score's interval (0.0-0.57: it estimates the equal-difficulty score, not the population's)
    assert coverage["too narrow"] < 0.93, coverage
    assert coverage["unweighted"] < 0.93, coverage


def test_stratified_interval_is_conservative_at_six_per_stratum() -> None:
    """LiveCodeBench's plan (6 per difficulty): all-correct strata and the cap at n widen the interval."""
    coverage = _stratified_coverage((800, 150, 50), (0.85, 0.5, 0.2), (6, 6, 6), trials=2000, seed=20261205)
    assert 0.95 <= coverage["stratified"] <= 1.0, coverage


# ------------------------------------------------------------------ clustered mean (repeats)


def test_one_attempt_per_sample_is_the_plain_wilson_interval() -> None:
    result = clustered_mean([[1.0]] * 48 + [[0.0]] * 2)
    assert result.estimate == pytest.approx(0.96)
    assert result.effective_sample_size == 50
    assert result.interval == pytest.approx(wilson_interval(48, 50))
    assert result.standard_error == pytest.approx(np.std([1.0] * 48 + [0.0] * 2, ddof=1) / 50**0.5)


def test_standard_error_is_inspect_ais_clustered_stderr_when_k_is_constant() -> None:
    """inspect_ai ``stderr(cluster=...)``: sqrt(C/(C-1) · Σ_c (Σ_i (s_ic − mean))²) / N, written out here."""
    rng = np.random.default_rng(7)
    scores = rng.binomial(1, rng.uniform(0, 1, size=(40, 1)), size=(40, 3)).astype(float)
    mean = scores.mean()
    clusters = len(scores)
    inspect = (clusters / (clusters - 1) * np.sum((scores - mean).sum(axis=1) ** 2)) ** 0.5 / scores.size
    assert clustered_mean(scores.tolist()).standard_error == pytest.approx(inspect, rel=1e-12)


def test_unequal_attempt_counts_weight_samples_equally() -> None:
    """A sample that lost three of its four attempts still counts as one sample (attempt-weighted: 0.8)."""
    result = clustered_mean([[1.0, 1.0, 1.0, 1.0], [0.0]])
    assert result.estimate == 0.5
    assert result.n_attempts == 5


def test_repeats_narrow_the_interval_only_through_within_sample_noise() -> None:
    deterministic = clustered_mean([[1.0] * 4] * 45 + [[0.0] * 4] * 15)
    single = clustered_mean([[1.0]] * 45 + [[0.0]] * 15)
    assert deterministic.effective_sample_size == 60  # identical answers: 4 attempts add nothing
    assert deterministic.interval == pytest.approx(single.interval)
    noisy = clustered_mean([[1.0, 0.0, 1.0, 0.0]] * 30 + [[1.0] * 4] * 30)
    assert 60 < noisy.effective_sample_size <= 240
    assert noisy.interval[1] - noisy.interval[0] < single.interval[1] - single.interval[0]


def test_all_variation_within_samples_uses_the_attempts() -> None:
    result = clustered_mean([[1.0, 0.0]] * 20)
    assert result.estimate == 0.5
    assert result.effective_sample_size == 40


@pytest.mark.parametrize("bad", [[[]], [[1.5]], [[-0.1, 1.0]], [[float("nan")]]])
def test_clustered_mean_refuses_samples_without_attempts_or_out_of_range(bad: list[list[float]]) -> None:
    with pytest.raises(ValueError):
        clustered_mean(bad)


@pytest.mark.parametrize(("n", "k"), [(60, 4), (40, 1)])
def test_clustered_interval_coverage_by_simulation(n: int, k: int) -> None:
    """Per-sample probabilities from a skewed mixture (most samples easy, some hard, some coin flips):
    the 95 % interval covers the super-population mean E[q] in 93-97 % of 3000 simulated runs."""
    rng = np.random.default_rng(20261218)
    q_values, q_weights = np.array([1.0, 0.9, 0.5, 0.1, 0.0]), np.array([0.45, 0.2, 0.15, 0.1, 0.1])
    truth = float(q_values @ q_weights)
    trials = 3000
    q = rng.choice(q_values, p=q_weights, size=(trials, n))
    correct = rng.binomial(k, q)
    covered = 0
    for row in correct:
        attempts = (np.arange(k) < row[:, None]).astype(float)  # row i: c_i ones, then zeros
        low, high = clustered_mean(attempts.tolist()).interval
        covered += low <= truth <= high
    assert 0.93 <= covered / trials <= 0.97, covered / trials
