"""evalpipe.stats.sequential: aGRAPA betting e-processes at the margin and the PrPl-EB confidence sequence
(Waudby-Smith & Ramdas 2024, arXiv 2010.09686: §5.1 and Theorem 2; confseq's ``lambda_aKelly`` and
``predmix_empbern_cs`` read for the formulas).

Hand-computed cases follow the paper's formulas step by step; the simulations (seeded, ~0.3 s each) check
the guarantee itself — each verdict at most α of the time at the margin under a look after every unit, the
confidence sequence covering uniformly over time — and a negative control shows a rule without the guarantee
(a fixed-n z-test looked at after every unit) breaking it on the same paths.  The expected sample numbers
against the issue's figures are in ``perf/bench_sequential.py`` (20 000 paths).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from numpy.typing import NDArray

from evalpipe.stats.sequential import (
    agrapa_bets,
    betting_eprocesses,
    eb_confidence_sequence,
    first_crossings,
    null_mean,
    planned_bets,
    sequential_decision,
    sequential_path,
    to_unit_interval,
)

ALPHA = 0.05
MARGIN_PTS = 5.0


def discordant_paths(
    rng: np.random.Generator, mean: float, discordance: float, paths: int, units: int
) -> NDArray[np.float64]:
    """One attempt per arm: d = +1 with probability (ψ + Δ)/2, −1 with (ψ − Δ)/2, else 0."""
    u = rng.random((paths, units))
    up, down = (discordance + mean) / 2.0, (discordance - mean) / 2.0
    return np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))


def repeated_paths(
    rng: np.random.Generator, mean: float, repeats: int, paths: int, units: int
) -> NDArray[np.float64]:
    """k attempts per arm sharing the sample's difficulty (beta-binomial): control p ~ Beta(2, 1) (mean 2/3),
    test q = p (1 + 1.5 Δ), so E[q − p] = Δ exactly; d = mean of test attempts − mean of control attempts."""
    p = rng.beta(2.0, 1.0, size=(paths, units))
    q = np.clip(p * (1.0 + 1.5 * mean), 0.0, 1.0)
    control = rng.binomial(repeats, p) / repeats
    test = rng.binomial(repeats, q) / repeats
    return np.asarray(test - control, dtype=np.float64)


# ------------------------------------------------------------------------------------- by hand


def test_agrapa_wealth_by_hand() -> None:
    """d = +1, +1, −1 at a 5-pt margin: X = 1, 1, 0 against m = 0.475 (WSR §5.1, fake_obs = 1)."""
    m = 0.475
    assert null_mean(MARGIN_PTS) == pytest.approx(m)
    # t = 1: μ̂0 = 1/2, σ̂²0 = 1/4
    lam1 = (0.5 - m) / (0.25 + (0.5 - m) ** 2)
    # t = 2: μ̂1 = (1/2 + 1)/2 = 0.75, σ̂²1 = (1/4 + (1 − 0.75)²)/2; the bet exceeds c/m and is truncated
    mu1, var1 = 0.75, (0.25 + 0.25**2) / 2
    lam2_raw = (mu1 - m) / (var1 + (mu1 - m) ** 2)
    assert lam2_raw > 0.5 / m
    lam2 = 0.5 / m
    # t = 3: μ̂2 = (1/2 + 2)/3, σ̂²2 = (1/4 + 0.25² + (1 − μ̂2)²)/3; truncated again
    mu2 = 2.5 / 3
    var2 = (0.25 + 0.25**2 + (1 - mu2) ** 2) / 3
    assert (mu2 - m) / (var2 + (mu2 - m) ** 2) > 0.5 / m
    lam3 = 0.5 / m
    expected_plus = np.cumprod([1 + lam1 * (1 - m), 1 + lam2 * (1 - m), 1 + lam3 * (0 - m)])

    result = betting_eprocesses([1.0, 1.0, -1.0], MARGIN_PTS)
    np.testing.assert_allclose(result.bets_non_inferior, [lam1, lam2, lam3], rtol=1e-12)
    np.testing.assert_allclose(result.wealth_non_inferior, expected_plus, rtol=1e-12)
    np.testing.assert_allclose(result.bets_inferior, 0.0)  # the inferior side never bets here
    np.testing.assert_allclose(result.wealth_inferior, 1.0)
    assert result.wealth_non_inferior[2] == pytest.approx(expected_plus[1] * 0.5)


def test_inferior_side_by_hand() -> None:
    """d = −1, −1, −1, 0 at a 5-pt margin: the first bet is on the non-inferior side (μ̂0 = 1/2 > m), the later
    ones on the inferior side: μ̂1 = 1/4, σ̂²1 = (1/4 + 1/16)/2, λ = (m − 1/4)/(σ̂²1 + (1/4 − m)²) = 1.088,
    truncated at c/(1 − m) = 0.952; at t = 4, μ̂3 = 1/8, σ̂²3 = (1/4 + 1/16 + 1/36 + 1/64)/4 — truncated too."""
    m = 0.475
    lam1 = (0.5 - m) / (0.25 + (0.5 - m) ** 2)
    var1 = (0.25 + 0.0625) / 2
    assert (m - 0.25) / (var1 + (0.25 - m) ** 2) > 0.5 / (1 - m)
    var3 = (0.25 + 1 / 16 + 1 / 36 + 1 / 64) / 4
    assert (m - 0.125) / (var3 + (0.125 - m) ** 2) > 0.5 / (1 - m)
    cap = 0.5 / (1 - m)
    result = betting_eprocesses([-1.0, -1.0, -1.0, 0.0], MARGIN_PTS)
    np.testing.assert_allclose(result.bets_non_inferior, [lam1, 0.0, 0.0, 0.0], rtol=1e-12)
    np.testing.assert_allclose(result.bets_inferior, [0.0, cap, cap, cap], rtol=1e-12)
    np.testing.assert_allclose(result.wealth_non_inferior, [1 - lam1 * m] * 4, rtol=1e-12)
    grow = 1 + cap * m  # X = 0: the inferior side wins c m / (1 − m) of its wealth
    np.testing.assert_allclose(
        result.wealth_inferior, [1.0, grow, grow**2, grow**2 * (1 - cap * (0.5 - m))], rtol=1e-12
    )


def test_planned_bets_by_hand() -> None:
    """Planned n = 495, α = 0.05, d = +1, 0: λ1 = √(2 log 20 / (495 · 1/4)) on both sides; after X1 = 1,
    μ̂1 = 3/4 and σ̂²1 = (1/4 + 1/16)/2, so λ2 = √(2 log 20 / (495 σ̂²1)); K⁺ and K⁻ move in opposite ways."""
    m = 0.475
    lam1 = math.sqrt(2 * math.log(20) / (495 * 0.25))
    lam2 = math.sqrt(2 * math.log(20) / (495 * (0.25 + 0.0625) / 2))
    result = betting_eprocesses([1.0, 0.0], MARGIN_PTS, planned_n=495, alpha=ALPHA)
    np.testing.assert_allclose(result.bets_non_inferior, [lam1, lam2], rtol=1e-12)
    np.testing.assert_allclose(result.bets_inferior, [lam1, lam2], rtol=1e-12)
    np.testing.assert_allclose(
        result.wealth_non_inferior,
        [1 + lam1 * (1 - m), (1 + lam1 * (1 - m)) * (1 + lam2 * (0.5 - m))],
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        result.wealth_inferior,
        [1 - lam1 * (1 - m), (1 - lam1 * (1 - m)) * (1 - lam2 * (0.5 - m))],
        rtol=1e-12,
    )
    assert np.all(result.wealth_non_inferior * result.wealth_inferior <= 1.0)


def test_planned_bets_truncate_at_the_smaller_bound() -> None:
    """A tiny planned n asks for bets above c/(1 − m): both sides are cut there, so every factor stays ≥ 1 − c."""
    m = null_mean(MARGIN_PTS)
    plus, minus = planned_bets(np.array([0.5, 0.5, 0.5]), m, planned_n=1, alpha=ALPHA)
    np.testing.assert_allclose(plus, 0.5 / (1 - m))
    np.testing.assert_allclose(minus, 0.5 / (1 - m))
    with pytest.raises(ValueError):
        planned_bets(np.array([0.5]), m, planned_n=0, alpha=ALPHA)


def _reference_eb_cs(x: list[float], alpha: float, c: float = 0.5) -> list[tuple[float, float]]:
    """WSR Theorem 2 written as the paper states it, one step at a time, on the [0, 1] scale."""
    out = []
    total, squares = 0.0, 0.0
    mu_prev, var_prev = 0.5, 0.25
    sum_lam = sum_lam_x = sum_v_psi = 0.0
    for t, xt in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (var_prev * t * math.log(1 + t))), c)
        v = 4 * (xt - mu_prev) ** 2
        psi = (-math.log(1 - lam) - lam) / 4
        sum_lam += lam
        sum_lam_x += lam * xt
        sum_v_psi += v * psi
        centre = sum_lam_x / sum_lam
        half = (math.log(2 / alpha) + sum_v_psi) / sum_lam
        out.append((max(centre - half, 0.0), min(centre + half, 1.0)))
        total += xt
        mu_t = (0.5 + total) / (t + 1)
        squares += (xt - mu_t) ** 2
        mu_prev, var_prev = mu_t, (0.25 + squares) / (t + 1)
    return out


def test_eb_confidence_sequence_matches_the_theorem_step_by_step() -> None:
    rng = np.random.default_rng(7)
    d = discordant_paths(rng, -0.03, 0.2, 1, 400)[0]
    lower, upper = eb_confidence_sequence(d, ALPHA)
    reference = _reference_eb_cs(list((1 + d) / 2), ALPHA)
    np.testing.assert_allclose(lower, [2 * lo - 1 for lo, _ in reference], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(upper, [2 * hi - 1 for _, hi in reference], rtol=1e-10, atol=1e-12)
    assert upper[-1] - lower[-1] < 0.25  # the bets are no longer truncated at t = 400: a real width


def test_eb_first_unit_by_hand() -> None:
    """X1 = 1: λ1 = min(√(2 log 40 / (1/4 · log 2)), 1/2) = 1/2, v1 = 4 (1 − 1/2)² = 1,
    half-width (log 40 + (log 2 − 1/2)/4) / (1/2) > 1: the interval is the whole range."""
    lower, upper = eb_confidence_sequence([1.0], ALPHA)
    assert (lower[0], upper[0]) == (-1.0, 1.0)
    half = (math.log(40) + (math.log(2) - 0.5) / 4) / 0.5
    assert half > 1


def test_bets_are_predictable() -> None:
    """λ_t depends on X_1..X_{t−1} only: changing X_t leaves λ_1..λ_t unchanged."""
    rng = np.random.default_rng(3)
    x = to_unit_interval(discordant_paths(rng, 0.0, 0.3, 1, 50)[0])
    m = null_mean(MARGIN_PTS)
    plus, minus = agrapa_bets(x, m)
    changed = x.copy()
    changed[20] = 1.0 - changed[20]
    plus2, minus2 = agrapa_bets(changed, m)
    np.testing.assert_array_equal(plus[:21], plus2[:21])
    np.testing.assert_array_equal(minus[:21], minus2[:21])
    assert not np.array_equal(plus[21:], plus2[21:]) or not np.array_equal(minus[21:], minus2[21:])
    planned, _ = planned_bets(x, m, 5000, ALPHA)  # the same lagged moments (n large: no truncation)
    planned2, _ = planned_bets(changed, m, 5000, ALPHA)
    np.testing.assert_array_equal(planned[:21], planned2[:21])
    assert not np.array_equal(planned[21:], planned2[21:])


def test_refuses_values_outside_the_range() -> None:
    with pytest.raises(ValueError):
        betting_eprocesses([0.5, 1.5], MARGIN_PTS)
    with pytest.raises(ValueError):
        betting_eprocesses([0.5], 100.0)
    with pytest.raises(ValueError):
        sequential_decision([], MARGIN_PTS)
    with pytest.raises(ValueError):
        sequential_decision([0.0], MARGIN_PTS, cap=0)


# ------------------------------------------------------------------------------------- the decision


def test_decision_stops_at_the_first_crossing_for_a_clean_win() -> None:
    """A test arm that never loses a sample: non-inferior long before the data run out, the e-value crossing
    1/α exactly at the stop.  The confidence sequence there is two-sided at α and tuned for no alternative, so
    at 26 units it is still wide; it contains the running mean."""
    d = np.array([0.0, 1.0, 0.0, 0.0] * 100)
    decision = sequential_decision(d, MARGIN_PTS, ALPHA, cap=400)
    assert decision.verdict == "non-inferior" and decision.stop_reason == "crossing"
    plus = betting_eprocesses(d, MARGIN_PTS).wealth_non_inferior
    assert plus[decision.units_used - 1] >= 1 / ALPHA > plus[: decision.units_used - 1].max()
    assert decision.units_used < 100 and decision.units_left == 400 - decision.units_used
    assert decision.e_value_non_inferior >= 20.0 > decision.e_value_inferior
    running_mean = 100 * d[: decision.units_used].mean()
    assert decision.cs_lower_pts < running_mean < decision.cs_upper_pts


def test_decision_inferior_on_a_planted_regression() -> None:
    d = np.array([-1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0] * 60)
    decision = sequential_decision(d, MARGIN_PTS, ALPHA)
    assert decision.verdict == "inferior" and decision.e_value_inferior >= 20.0
    assert (decision.bets, decision.planned_n) == ("aGRAPA", None)
    planned = sequential_decision(d, MARGIN_PTS, ALPHA, planned_n=200)
    assert (planned.verdict, planned.bets, planned.planned_n) == ("inferior", "planned", 200)
    assert decision.cs_lower_pts < 100 * d[: decision.units_used].mean() < decision.cs_upper_pts
    longer = sequential_decision(np.tile(d, 4), MARGIN_PTS, ALPHA, cap=10_000)  # stops at the same unit
    assert longer.units_used == decision.units_used and longer.units_left == 2400 - decision.units_used


def test_decision_inconclusive_at_the_cap_and_when_units_run_out() -> None:
    d = np.array([1.0, -1.0, 0.0, 0.0] * 50)  # mean 0, 2.5 margin: no verdict in 200 or 120 units
    capped = sequential_decision(d, 2.5, ALPHA, cap=120)
    assert (capped.verdict, capped.stop_reason, capped.units_used, capped.units_left) == (
        "inconclusive",
        "cap",
        120,
        80,
    )
    exhausted = sequential_decision(d, 2.5, ALPHA, cap=500)
    assert (exhausted.verdict, exhausted.stop_reason, exhausted.units_used) == (
        "inconclusive",
        "units exhausted",
        200,
    )
    assert exhausted.cs_lower < 0.0 < exhausted.cs_upper


def test_wealth_short_of_one_over_alpha_is_no_verdict() -> None:
    """A verdict needs ``K ≥ 1/α`` (Ville's inequality at α); no difference at a 10-point margin over 60 units
    lifts ``K⁺`` past ``1/(2α)`` but not to ``1/α``: inconclusive (a rule at ``1/(2α)`` holds at 2α only)."""
    alpha = 0.05
    d = np.zeros(60)
    processes = betting_eprocesses(d, 10.0, planned_n=60, alpha=alpha)
    assert 1 / (2 * alpha) <= processes.wealth_non_inferior.max() < 1 / alpha
    units, code = first_crossings(processes, alpha)
    assert (int(units), int(code)) == (60, 0)
    decision = sequential_decision(d, 10.0, alpha, planned_n=60)
    assert (decision.verdict, decision.stop_reason, decision.units_used) == (
        "inconclusive",
        "units exhausted",
        60,
    )


def test_the_interval_at_the_stop_is_the_running_intersection() -> None:
    """A margin rejected at any look stays rejected: the interval at the stop lies inside the interval of every
    earlier look (the looks of ``sequential_path``), and inside the descriptive PrPl-EB sequence's here too."""
    d = np.array([1.0, -1.0, 0.0, 0.0] * 50)
    decision = sequential_decision(d, 2.5, ALPHA, cap=120, planned_n=120)
    path = sequential_path(d, 2.5, decision.units_used, ALPHA, planned_n=120, looks=12)
    for look in path.looks:
        assert look.cs_lower <= decision.cs_lower and decision.cs_upper <= look.cs_upper
    assert path.looks[-1].cs_lower == decision.cs_lower and path.looks[-1].cs_upper == decision.cs_upper
    assert path.looks[0].cs_lower < decision.cs_lower


# ------------------------------------------------------------------------------------- validity by simulation


def _mc_slack(paths: int) -> float:
    """Three Monte-Carlo standard errors of a rate of α over ``paths`` paths."""
    return 3.0 * math.sqrt(ALPHA * (1 - ALPHA) / paths)


@pytest.mark.parametrize("planned_n", [None, 100, 495])
@pytest.mark.parametrize("discordance", [0.05, 0.2, 0.4])
def test_each_verdict_at_most_alpha_at_the_margin(discordance: float, planned_n: int | None) -> None:
    """Δ = −5 pts (both nulls hold), one attempt per arm, a look after every one of 1000 units: each verdict
    is reached at most α of the time (2000 paths; bound + 3 Monte-Carlo SE = 0.065), aGRAPA or planned bets."""
    rng = np.random.default_rng(20261204)
    d = discordant_paths(rng, -MARGIN_PTS / 100, discordance, 2000, 1000)
    _, verdict = first_crossings(betting_eprocesses(d, MARGIN_PTS, planned_n=planned_n), ALPHA)
    assert np.mean(verdict == 1) <= ALPHA + _mc_slack(2000)
    assert np.mean(verdict == -1) <= ALPHA + _mc_slack(2000)


@pytest.mark.parametrize("planned_n", [None, 300])
def test_each_verdict_at_most_alpha_with_correlated_repeats(planned_n: int | None) -> None:
    """k = 4 attempts per arm sharing each sample's difficulty (beta-binomial), Δ = −5 pts exactly."""
    rng = np.random.default_rng(11)
    d = repeated_paths(rng, -MARGIN_PTS / 100, 4, 2000, 800)
    assert abs(float(d.mean()) + 0.05) < 0.002
    _, verdict = first_crossings(betting_eprocesses(d, MARGIN_PTS, planned_n=planned_n), ALPHA)
    assert np.mean(verdict == 1) <= ALPHA + _mc_slack(2000)
    assert np.mean(verdict == -1) <= ALPHA + _mc_slack(2000)


@pytest.mark.parametrize("planned_n", [None, 495])
def test_verdicts_are_rare_beyond_the_nulls_and_the_right_one_is_reached(planned_n: int | None) -> None:
    """At +5 pts "inferior" essentially never happens and "non-inferior" almost always does (cap 742)."""
    rng = np.random.default_rng(5)
    d = discordant_paths(rng, 0.05, 0.2, 2000, 742)
    units, verdict = first_crossings(betting_eprocesses(d, MARGIN_PTS, planned_n=planned_n), ALPHA, cap=742)
    assert np.mean(verdict == -1) <= 0.005
    assert np.mean(verdict == 1) >= 0.99
    assert units.mean() < 250


def test_planned_bets_match_the_fixed_n_plan_at_zero() -> None:
    """ψ = 0.2, 5-pt margin, plan n = 495 (80 % one-sided power at Δ = 0), cap 742: the planned bet reaches
    "non-inferior" about as often as the fixed-n test (0.80 in perf/bench_sequential.py) and aGRAPA less
    often (0.61) — the reason the plan's n tunes the bet."""
    rng = np.random.default_rng(8)
    d = discordant_paths(rng, 0.0, 0.2, 2000, 742)
    _, planned = first_crossings(betting_eprocesses(d, MARGIN_PTS, planned_n=495), ALPHA, cap=742)
    _, agrapa = first_crossings(betting_eprocesses(d, MARGIN_PTS), ALPHA, cap=742)
    assert 0.76 <= np.mean(planned == 1) <= 0.84
    assert np.mean(agrapa == 1) < np.mean(planned == 1) - 0.1


def test_naive_z_test_looked_at_after_every_unit_breaks_the_bound() -> None:
    """Negative control on the same kind of paths: a one-sided fixed-n z-test of Δ > −margin at α, checked
    after every unit from the 10th, declares non-inferiority far more often than α at the margin."""
    rng = np.random.default_rng(20261204)
    d = discordant_paths(rng, -MARGIN_PTS / 100, 0.2, 2000, 1000)
    t = np.arange(1, d.shape[1] + 1)
    mean = np.cumsum(d, axis=1) / t
    var = np.maximum(np.cumsum(d * d, axis=1) / t - mean**2, 1e-12)
    z = (mean + MARGIN_PTS / 100) / np.sqrt(var / t)
    naive = (z[:, 9:] > 1.6448536269514722).any(axis=1).mean()
    assert naive > 3 * ALPHA
    at_fixed_n = (z[:, -1] > 1.6448536269514722).mean()  # the same test looked at once is fine
    assert at_fixed_n <= ALPHA + _mc_slack(2000)


@pytest.mark.parametrize(("mean", "discordance"), [(-0.05, 0.2), (0.0, 0.05), (0.1, 0.4)])
def test_confidence_sequence_covers_uniformly_over_time(mean: float, discordance: float) -> None:
    """P(∃ t ≤ 1000: Δ ∉ C_t) ≤ α (2000 paths; bound + 3 Monte-Carlo SE)."""
    rng = np.random.default_rng(17)
    d = discordant_paths(rng, mean, discordance, 2000, 1000)
    lower, upper = eb_confidence_sequence(d, ALPHA)
    missed = ((lower > mean) | (upper < mean)).any(axis=1).mean()
    assert missed <= ALPHA + _mc_slack(2000)


def test_fixed_n_interval_read_after_every_unit_does_not_cover_uniformly() -> None:
    """Negative control for the CS: the 95 % Wald interval of the mean, read after every unit, misses the truth
    at some time on far more than α of the paths."""
    rng = np.random.default_rng(17)
    d = discordant_paths(rng, -0.05, 0.2, 2000, 1000)
    t = np.arange(1, d.shape[1] + 1)
    mean = np.cumsum(d, axis=1) / t
    half = 1.959963984540054 * np.sqrt(np.maximum(np.cumsum(d * d, axis=1) / t - mean**2, 1e-12) / t)
    missed = ((mean[:, 9:] - half[:, 9:] > -0.05) | (mean[:, 9:] + half[:, 9:] < -0.05)).any(axis=1).mean()
    assert missed > 3 * ALPHA


def test_completion_order_breaks_the_guarantee() -> None:
    """Negative control for the consumption order: Δ = −5 pts, ψ = 0.2, control right on 70 %; a wrong answer
    is longer (lognormal around 9000 tokens vs 4000), a unit completes when its slower arm does.  In seeded
    order each verdict stays within α; in completion order the early units are mostly both-right pairs
    (d = 0 > −margin) and "non-inferior" is declared far more often than α (perf: 0.57)."""
    rng = np.random.default_rng(99)
    paths, units = 2000, 742
    p_tr_cw, p_tw_cr = 0.075, 0.125  # (ψ + Δ)/2 and (ψ − Δ)/2
    p_both = 0.7 - p_tw_cr
    u = rng.random((paths, units))
    test_right = (u < p_both) | ((u >= p_both) & (u < p_both + p_tr_cw))
    control_right = (u < p_both) | ((u >= p_both + p_tr_cw) & (u < p_both + p_tr_cw + p_tw_cr))
    d = test_right.astype(np.float64) - control_right.astype(np.float64)

    def length(right: NDArray[np.bool_]) -> NDArray[np.float64]:
        centre = np.where(right, math.log(4000), math.log(9000))
        return np.asarray(np.exp(centre + 0.5 * rng.standard_normal(right.shape)), dtype=np.float64)

    done = np.maximum(length(test_right), length(control_right))
    by_completion = np.take_along_axis(d, np.argsort(done, axis=1), axis=1)
    _, seeded = first_crossings(betting_eprocesses(d, MARGIN_PTS, planned_n=495), ALPHA)
    _, completed = first_crossings(betting_eprocesses(by_completion, MARGIN_PTS, planned_n=495), ALPHA)
    assert np.mean(seeded == 1) <= ALPHA + _mc_slack(paths)
    assert np.mean(completed == 1) > 5 * ALPHA


def test_sequential_path_thins_the_looks_and_finds_each_sides_first_crossing() -> None:
    """``sequential_path``: every ceil(stop/10)-th unit and the stop, the values the processes hold there,
    the running intersection of the CS; a crossing after an earlier stop is reported as such."""
    from evalpipe.stats.sequential import betting_eprocesses, sequential_path

    rng = np.random.default_rng(5)
    d = np.where(rng.random(300) < 0.3, -1.0, np.where(rng.random(300) < 0.05, 1.0, 0.0))  # a clear drop
    decision = sequential_decision(d, 5.0, 0.05, planned_n=300)
    assert decision.verdict == "inferior"
    path = sequential_path(d, 5.0, decision.units_used, 0.05, planned_n=300)
    units = [x.unit for x in path.looks]
    assert units[-1] == decision.units_used and path.every == -(-decision.units_used // 10)
    assert units[:-1] == list(range(path.every, decision.units_used, path.every))[: len(units) - 1]
    processes = betting_eprocesses(d, 5.0, planned_n=300, alpha=0.05)
    assert path.looks[-1].e_value_inferior == pytest.approx(
        processes.wealth_inferior[decision.units_used - 1]
    )
    assert (path.looks[-1].cs_lower, path.looks[-1].cs_upper) == pytest.approx(
        (decision.cs_lower, decision.cs_upper)
    )
    assert all(
        a.cs_lower <= b.cs_lower and b.cs_upper <= a.cs_upper for a, b in itertools.pairwise(path.looks)
    )
    assert path.first_crossing_inferior == decision.units_used and path.first_crossing_non_inferior is None
    early = sequential_path(d, 5.0, 5, 0.05, planned_n=300)  # stopped (capped) at 5: the crossing comes later
    assert [x.unit for x in early.looks] == [1, 2, 3, 4, 5]
    assert early.first_crossing_inferior == decision.units_used > 5
    with pytest.raises(ValueError):
        sequential_path(d, 5.0, 0, 0.05)
