"""The interval beside every verdict is the inversion of the test that decided (``evalpipe.stats.operating``).

Non-inferior within M ⇔ lower bound > −M, inferior beyond −M ⇔ upper bound < −M — on the d scale and in the
points compare.json stores — for every basis: the e-processes' crossing, the final look, an extended block's
continued e-processes, the fixed look and a fixed design's first-run look after an extension.  Checked on
12,000 random sequences (random discordance, drop, length, margin and α per batch), and the sequential block's
interval (``sequential_decision``) is the gate's at a crossing.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from evalpipe.stats.operating import GateDesign, calibrated_critical_value, gate_decisions, gate_verdict
from evalpipe.stats.sequential import (
    betting_eprocesses,
    eprocess_interval,
    null_mean,
    planned_n_per_unit,
    sequential_decision,
)

#: (share, generations) per batch: every basis the gate has.
DESIGNS: list[tuple[float | None, tuple[int, ...] | None]] = [
    (0.5, None),  # crossing or final look
    (1.0, None),  # crossing or no crossing
    (0.5, (0, 0)),  # extended: crossing or no crossing (sizes filled in per batch)
    (None, None),  # fixed
    (None, (0, 0)),  # fixed, first run
]
BATCHES = 8
PATHS = 300  # per design and batch: 5 × 8 × 300 = 12,000 sequences


def _batch(rng: np.random.Generator, paths: int, units: int) -> np.ndarray:
    psi = rng.uniform(0.02, 0.5)
    drop = rng.uniform(0.0, 0.3)
    gain, loss = psi / 2, min(psi / 2 + drop, 1 - psi / 2)
    draw = rng.random((paths, units))
    return np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))


def _mixed(rng: np.random.Generator, paths: int, units: int) -> np.ndarray:
    """Paths from ten batches of random discordance and drop, so that every verdict occurs."""
    return np.concatenate([_batch(rng, paths // 10, units) for _ in range(10)])


def test_every_verdict_reads_off_its_interval_over_12000_sequences() -> None:
    rng = np.random.default_rng(20261206)
    bases: Counter[tuple[str, int]] = Counter()
    for _ in range(BATCHES):
        margin = float(rng.choice([5.0, 10.0, 13.0, 20.0]))
        alpha = float(rng.choice([0.0125, 0.025, 0.05]))
        units = int(rng.integers(40, 160))
        for share, generations in DESIGNS:
            d = _batch(rng, PATHS, units)
            sizes = None if generations is None else (units // 3, units - units // 3)
            design = GateDesign(units if sizes is None else sizes[0], margin, alpha, share)
            got = gate_decisions(d, design, generations=sizes)
            non_inferior, inferior = got.codes == 1, got.codes == -1
            for bound, side in ((got.lower, non_inferior), (got.upper, ~inferior)):
                assert np.array_equal(bound > -margin / 100, side)
                assert np.array_equal(100 * bound > -margin, side)
            assert (
                np.all(got.lower <= got.upper + 1e-9) or share is not None
            )  # a look's interval is never empty
            kind = "look" if share is None else "sequential"
            for code, crossed, looked in zip(got.codes, got.crossed, got.looked, strict=True):
                basis = "crossing" if crossed else ("look" if looked else "no crossing")
                bases[(f"{kind}{'+extended' if sizes else ''}: {basis}", int(code))] += 1
    # every basis with each of its verdicts was exercised
    for needed in [
        ("sequential: crossing", 1),
        ("sequential: crossing", -1),
        ("sequential: look", 1),
        ("sequential: look", 0),
        ("sequential: no crossing", 0),
        ("sequential+extended: crossing", 1),
        ("sequential+extended: crossing", -1),
        ("sequential+extended: no crossing", 0),
        ("look: look", 1),
        ("look: look", -1),
        ("look+extended: look", 1),
    ]:
        assert bases[needed] >= 10, (needed, bases)


def test_the_interval_is_the_margins_not_rejected() -> None:
    """Just inside the bounds neither e-process has reached 1/α at any look up to the stop; just outside, one
    has: the bounds are the inversion, not merely consistent with the verdict at one margin."""
    rng = np.random.default_rng(3)
    d = _mixed(rng, 40, 120)
    alpha, n = 0.025, 120
    lower, upper = eprocess_interval(d, alpha, planned_n=n)
    for row, lo, hi in zip(d, lower, upper, strict=True):
        for theta, expect_plus, expect_minus in (
            (lo + 1e-6, False, False),
            (hi - 1e-6, False, False),
            (lo - 1e-6, True, False),
            (hi + 1e-6, False, True),
        ):
            if not -1 < theta < 1 or (lo == -1.0 and expect_plus) or (hi == 1.0 and expect_minus):
                continue
            margin_pts = -100 * theta
            if not 0 <= margin_pts < 100:
                continue
            k = betting_eprocesses(row, margin_pts, planned_n=n, alpha=alpha)
            assert (k.wealth_non_inferior.max() >= 1 / alpha) == expect_plus
            assert (k.wealth_inferior.max() >= 1 / alpha) == expect_minus


def test_a_margin_rejected_at_an_earlier_look_stays_rejected() -> None:
    """The bound at the stop counts every look up to it: a path whose K⁺ at −M rose past 1/α and fell back has
    a lower bound above −M even though K⁺ at the stop alone is below 1/α."""
    d = np.array([0.0] * 40 + [-1.0] * 12)
    alpha, n, margin = 0.05, 52, 20.0
    k = betting_eprocesses(d, margin, planned_n=n, alpha=alpha)
    assert k.wealth_non_inferior.max() >= 1 / alpha > k.wealth_non_inferior[-1]
    lower, _ = eprocess_interval(d, alpha, planned_n=n, margin_pts=margin)
    assert lower[()] > -margin / 100
    decision = sequential_decision(d, margin, alpha, planned_n=n)
    assert decision.verdict == "non-inferior" and decision.cs_lower > -margin / 100


def test_the_sequential_blocks_interval_is_the_gates_at_a_crossing() -> None:
    """compare.json's sequential block and its gate read the same e-processes: at a crossing the two intervals
    are the same numbers, and the same verdict."""
    rng = np.random.default_rng(11)
    design = GateDesign(90, 15.0, 0.05, 0.5)
    seen = 0
    for row in _mixed(rng, 150, 90):
        gate = gate_verdict(row, design)
        seq = sequential_decision(row, 15.0, 0.025, planned_n=90)
        if gate.basis != "sequential crossing":
            continue
        seen += 1
        assert gate.verdict == seq.verdict and gate.units_used == seq.units_used
        assert (gate.lower_bound_pts, gate.upper_bound_pts) == (100 * seq.cs_lower, 100 * seq.cs_upper)
    assert seen >= 10


def test_an_extended_blocks_interval_uses_each_generations_plan() -> None:
    """After an extension the interval inverts the continued e-processes — the bets of each generation tuned
    to its own cumulative plan — and reads the same verdict as ``sequential_decision`` on that plan."""
    rng = np.random.default_rng(12)
    sizes = [30, 50]
    for row in _mixed(rng, 60, 80):
        gate = gate_verdict(row, GateDesign(30, 10.0, 0.05, 1.0), generations=sizes)
        seq = sequential_decision(row, 10.0, 0.05, planned_n=planned_n_per_unit(sizes))
        assert gate.verdict == seq.verdict
        assert (gate.lower_bound_pts, gate.upper_bound_pts) == (100 * seq.cs_lower, 100 * seq.cs_upper)


def test_the_repro_of_a_contradicting_interval() -> None:
    """Forty agreeing units at a 20-point margin, planned n 80, α 0.05: non-inferior, and the interval beside it
    now clears −20 (the two-sided empirical-Bernstein sequence printed there said [−38.8, +38.8])."""
    decision = sequential_decision(np.zeros(40), 20.0, 0.05, planned_n=80)
    assert decision.verdict == "non-inferior" and decision.cs_lower > -0.2
    assert null_mean(20.0) == pytest.approx(0.4)


# ------------------------------------------------------------------------------------- z* as ψ → 0


def test_z_star_holds_alpha_as_the_discordance_vanishes() -> None:
    """At ψ → 0 every discordant unit is a loss; the calibration's grid now starts at ψ = 0 and refines its
    maxima, so the two cases that passed 0.02527 > 0.025 and 0.01268 > 0.0125 hold α."""
    from evalpipe.stats.operating import fixed_pass_probability, worst_size

    assert fixed_pass_probability(291, 1e-9, 0.10, 10.0, 0.025) <= 0.025
    assert fixed_pass_probability(159, 1e-9, 0.05, 5.0, 0.0125) <= 0.0125
    z = calibrated_critical_value(100, 10.0, 0.025)
    assert worst_size(100, 10.0, z)[0] <= 0.025


def test_the_plain_bound_errs_most_as_the_discordance_vanishes() -> None:
    """The uncalibrated 95 % bound (z = 1.96) at n = 100, 10 pts: 0.042 at ψ = 0.02, 0.058 as ψ → 0 (exact) —
    the figures docs/statistics.md states."""
    from evalpipe.stats.operating import size_at_margin, worst_size

    assert round(size_at_margin(100, 10.0, 1.959964, 0.02), 3) == 0.042
    worst, where = worst_size(100, 10.0, 1.959964)
    assert round(worst, 3) == 0.058 and where == 0.0
