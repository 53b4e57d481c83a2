"""evalpipe.stats.power: minimum detectable effect, its inverse, and the noise models behind them.

The simulation tests generate paired outcomes at the reported MDE under the module's regression model
(a drop of δ turns a share δ of the samples from right to wrong; the noise is symmetric) and apply the
very test the report prints (exact McNemar with one attempt, the paired score test with repeats): the
empirical power must be 0.80 ± 0.03.
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from scipy.stats import multinomial
from statsmodels.stats.contingency_tables import mcnemar

from evalpipe.stats.paired import paired_difference
from evalpipe.stats.power import (
    NoiseModel,
    assumed_noise,
    connor_power,
    connor_sample_size,
    drop_power,
    exact_drop_power,
    largest_drop,
    mcnemar_critical_counts,
    minimum_detectable_effect,
    noise_from_discordance,
    noise_from_runs,
    normal_drop_power,
    sample_size_for_mde,
)

TRIALS = 4000


def test_critical_counts_reproduce_statsmodels_p_values() -> None:
    crit = mcnemar_critical_counts(80)
    for total in range(81):
        for minority in range(total // 2 + 1):
            p = 1.0 if total == 0 else mcnemar([[0, minority], [total - minority, 0]], exact=True).pvalue
            assert (p <= 0.05) == (minority <= crit[total]), (total, minority, p)


@pytest.mark.parametrize(("n", "noise", "drop"), [(20, 0.1, 0.2), (30, 1 / 15, 0.15), (25, 0.3, 0.1)])
def test_exact_power_equals_brute_force_enumeration(n: int, noise: float, drop: float) -> None:
    """Sum over every (control-only, test-only) table of its multinomial probability where statsmodels'
    exact McNemar p ≤ 0.05 and the drop is the direction seen."""
    p_drop, p_gain = noise / 2 + drop, noise / 2
    power = 0.0
    for down in range(n + 1):
        for up in range(n + 1 - down):
            if down > up and mcnemar([[0, down], [up, 0]], exact=True).pvalue <= 0.05:
                power += multinomial.pmf([down, up, n - down - up], n, [p_drop, p_gain, 1 - p_drop - p_gain])
    assert exact_drop_power(n, noise, drop) == pytest.approx(power, abs=1e-12)


@pytest.mark.parametrize(("n", "noise"), [(18, 0.0), (50, 1 / 15), (160, 0.2)])
def test_exact_power_rises_with_the_drop(n: int, noise: float) -> None:
    drops = np.linspace(0.001, largest_drop(noise), 150)
    powers = [exact_drop_power(n, noise, d) for d in drops]
    assert np.all(np.diff(powers) >= -1e-12)


@pytest.mark.parametrize(
    ("n", "noise"),
    [
        (50, noise_from_discordance(1, 15, "aa")),
        (160, assumed_noise(0.9)),
        (400, noise_from_discordance(3, 50, "ab")),
    ],
)
def test_power_at_the_mde_by_simulation_one_attempt(n: int, noise: NoiseModel) -> None:
    mde = minimum_detectable_effect(n, noise)
    assert mde.mde is not None and mde.method == "exact McNemar"
    psi = noise.second_moment(1)
    rng = np.random.default_rng(20261221 + n)
    counts = rng.multinomial(n, [psi / 2 + mde.mde, psi / 2, 1 - psi - mde.mde], size=TRIALS)
    down, up = counts[:, 0], counts[:, 1]
    crit = mcnemar_critical_counts(n)
    detected = (up <= crit[down + up]) & (down > up)
    assert abs(detected.mean() - 0.80) <= 0.03, detected.mean()
    # the vectorised decision is the report's test: spot-check it against paired_difference
    for row in counts[:25]:
        d, u = int(row[0]), int(row[1])
        result = paired_difference(
            [[0.0]] * d + [[1.0]] * u + [[1.0]] * (n - d - u),
            [[1.0]] * d + [[0.0]] * u + [[1.0]] * (n - d - u),
        )
        assert (result.p_value <= 0.05 and result.difference < 0) == bool((u <= crit[d + u]) and d > u)


def _simulate_repeats(
    n: int, k: int, noisy: float, q: float, flips: float, drop: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample differences of per-sample means for TRIALS runs of n samples × k attempts per arm.

    A share ``noisy`` of the samples is answered right with probability q in both arms (within-sample
    noise); a share ``flips`` has a fixed ±1 difference (between-sample noise, symmetric); the rest are
    always right in the control, and a share ``drop`` of all samples is drawn from those and made always
    wrong in the test (the regression)."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(4, p=[noisy, flips / 2, flips / 2, 1 - noisy - flips], size=(TRIALS, n))
    regressed = (kind == 3) & (rng.random((TRIALS, n)) < drop / (1 - noisy - flips))
    q_control = np.select([kind == 0, kind == 1, kind == 2], [q, 0.0, 1.0], 1.0)
    q_test = np.select([kind == 0, kind == 1, kind == 2, regressed], [q, 1.0, 0.0, 0.0], 1.0)
    d = (rng.binomial(k, q_test) - rng.binomial(k, q_control)) / k
    return d.sum(axis=1), np.square(d).sum(axis=1)


@pytest.mark.parametrize(
    ("n", "k", "noisy", "q", "flips"),
    [
        (200, 4, 0.3, 0.5, 0.0),
        (30, 4, 0.3, 0.5, 0.0),
        (400, 2, 0.1, 0.3, 0.0),
        (60, 8, 0.5, 0.5, 0.0),
        (150, 3, 0.2, 0.6, 0.04),
    ],
)
def test_power_at_the_mde_by_simulation_with_repeats(
    n: int, k: int, noisy: float, q: float, flips: float
) -> None:
    noise = NoiseModel(between=flips, within=2 * noisy * q * (1 - q), source="aa", basis="simulated")
    mde = minimum_detectable_effect(n, noise, repeats=k)
    assert mde.mde is not None and mde.method == "normal approximation (score test)"
    total, squares = _simulate_repeats(n, k, noisy, q, flips, mde.mde, seed=20261222 + n + k)
    z = NormalDist().inv_cdf(0.975)
    detected = (squares > 0) & (-total > z * np.sqrt(squares))
    assert abs(detected.mean() - 0.80) <= 0.03, detected.mean()
    # Connor's first-order formula (fixed denominator) would have promised 80 % at a larger drop
    assert connor_power(n, mde.mde, noise.second_moment(k)) < 0.80


@pytest.mark.parametrize(
    "noise",
    [
        noise_from_discordance(1, 15, "aa"),
        noise_from_discordance(0, 15, "aa"),
        NoiseModel(between=0.04, within=0.1, source="aa", basis="x"),
        assumed_noise(0.9),
    ],
)
def test_power_with_repeats_is_well_behaved_from_tiny_samples_up(noise: NoiseModel) -> None:
    """Rises with the drop for every n (the second-order formula is only used where it holds), is about
    α/2 without a drop, and rises with n wherever it is above 10 %."""
    for k in (2, 4, 8):
        m0 = noise.second_moment(k)
        drops = np.linspace(1e-6, largest_drop(m0), 60)
        for n in (1, 3, 5, 10, 18, 30, 60, 200, 1000):
            powers = np.array([drop_power(n, d, noise, k) for d in drops])
            assert np.all(np.diff(powers) >= -1e-12), (k, n)
            assert powers[0] <= 0.06
        for drop in (0.03, 0.1):
            if drop > largest_drop(m0):
                continue
            by_n = np.array([drop_power(n, drop, noise, k) for n in range(1, 1500, 13)])
            rising = np.diff(by_n)[by_n[:-1] > 0.1]
            assert np.all(rising >= -1e-12), (k, drop)


def test_connor_sample_size_by_hand() -> None:
    """Connor (1987): discordance 0.2 under the alternative, drop 0.1 → n = [z_.975 √0.2 + z_.8 √0.19]² / 0.01."""
    z = NormalDist().inv_cdf
    by_hand = (z(0.975) * 0.2**0.5 + z(0.8) * 0.19**0.5) ** 2 / 0.01
    assert connor_sample_size(0.1, 0.1) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(154.6, abs=0.05)


def test_second_order_power_tends_to_connor_as_n_grows() -> None:
    noise = NoiseModel(between=0.01, within=0.04, source="aa", basis="x")
    n = 1_000_000
    drop = 0.0015  # the limit: c = z / (2 sqrt(n m1)) -> 0
    assert normal_drop_power(n, drop, noise, 4) == pytest.approx(
        connor_power(n, drop, noise.second_moment(4)), abs=0.005
    )


def test_repeats_shrink_only_the_within_sample_noise() -> None:
    within_only = NoiseModel(between=0.0, within=0.08, source="aa", basis="x")
    between_only = NoiseModel(between=0.08, within=0.0, source="ab", basis="x")
    mdes = [minimum_detectable_effect(200, within_only, repeats=k).mde or 1.0 for k in (2, 4, 8)]
    assert 1.0 > mdes[0] > mdes[1] > mdes[2]
    flat = {round(minimum_detectable_effect(200, between_only, repeats=k).mde or 0.0, 12) for k in (2, 4, 8)}
    assert len(flat) == 1


@pytest.mark.parametrize(
    ("target", "noise", "k"), [(0.08, noise_from_discordance(1, 15, "aa"), 1), (0.05, assumed_noise(0.8), 4)]
)
def test_sample_size_round_trips(target: float, noise: NoiseModel, k: int) -> None:
    needed = sample_size_for_mde(target, noise, repeats=k, population=1319)
    assert needed.n_needed is not None
    at_n = minimum_detectable_effect(needed.n_needed, noise, repeats=k).mde
    below = minimum_detectable_effect(needed.n_needed - 1, noise, repeats=k).mde
    assert at_n is not None and at_n <= target
    assert below is None or below > target
    assert needed.reachable == (needed.n_needed <= 1319)


def test_no_detectable_drop_in_a_tiny_sample() -> None:
    """Five samples: even losing every one cannot reach p < 0.05 with the exact test."""
    mde = minimum_detectable_effect(5, assumed_noise(0.9), base_accuracy=0.9)
    assert mde.mde is None and mde.mde_pts is None
    assert drop_power(5, 0.85, assumed_noise(0.9)) == 0.0


def test_a_drop_beyond_the_base_accuracy_is_not_plannable() -> None:
    needed = sample_size_for_mde(0.5, assumed_noise(0.3), base_accuracy=0.3)
    assert needed.n_needed is None and needed.reachable is False


def test_noise_sources() -> None:
    aa, ab = noise_from_discordance(1, 15, "aa"), noise_from_discordance(1, 15, "ab")
    assert aa.second_moment(1) == ab.second_moment(1) == pytest.approx(1 / 15)
    assert aa.second_moment(4) == pytest.approx(1 / 60)  # A/A flips are nondeterminism: repeats average it
    assert ab.second_moment(4) == pytest.approx(1 / 15)  # A/B stand-in: repeats are not credited
    default = assumed_noise(0.96)
    assert default.between == pytest.approx(2 * 0.96 * 0.04) and default.within == 0.0
    with pytest.raises(ValueError):
        noise_from_discordance(16, 15, "aa")


def test_noise_measured_from_an_aa_pair_with_repeats() -> None:
    """An A/A pair shares every per-sample probability: the estimate puts the noise within samples."""
    rng = np.random.default_rng(20261223)
    q = rng.choice([1.0, 0.7, 0.4, 0.0], p=[0.6, 0.15, 0.15, 0.1], size=3000)
    first = rng.binomial(1, np.repeat(q[:, None], 4, axis=1)).astype(float)
    second = rng.binomial(1, np.repeat(q[:, None], 4, axis=1)).astype(float)
    noise = noise_from_runs(first.tolist(), second.tolist(), "aa")
    expected_within = 2 * float(np.mean(q * (1 - q)))
    assert noise.within == pytest.approx(expected_within, rel=0.08)
    assert noise.between < 0.01
    single = noise_from_runs(first[:, :1].tolist(), second[:, :1].tolist(), "ab")
    discordant = int(np.sum(first[:, 0] != second[:, 0]))
    assert single.between == pytest.approx(discordant / 3000) and single.within == 0.0
