"""The gate's rule, deterministic checks of ``evalpipe.stats.operating.gate_codes``: a crossing decides and no
look follows it; the fixed look reads all n units of the block, the same look ``fixed_pass_probability``
enumerates; a fixed design extended looks at its first run's units only."""

from __future__ import annotations

import numpy as np

from evalpipe.stats.operating import GateDesign, _ordered_outcomes, gate_codes, gate_verdict, look_codes


def test_a_crossing_decides_and_no_look_follows() -> None:
    """A clean early win (the run stops at the crossing) and a late collapse: the verdict is the crossing's at
    its unit, even though a look on all the units would say otherwise."""
    d = np.array([0.0] * 50 + [-1.0] * 30)
    design = GateDesign(80, 20.0, 0.05, 0.5)
    codes, units, crossed = gate_codes(d, design)
    assert bool(crossed[0]) and int(codes[0]) == 1 and int(units[0]) < 50
    look = look_codes(np.array([d.sum()]), np.array([np.square(d).sum()]), 80, 20.0, 0.025)
    assert int(look[0]) != 1
    verdict = gate_verdict(d, design)
    assert (verdict.basis, verdict.verdict, verdict.units_used) == (
        "sequential crossing",
        "non-inferior",
        int(units[0]),
    )


def test_the_fixed_look_is_the_enumerated_look_on_every_outcome() -> None:
    """Every (discordant, lost) outcome of n = 60 units as a sequence: the gate's fixed verdict is the look at
    n = 60 — the one ``fixed_pass_probability`` sums — for each of them (1,891 outcomes)."""
    n, margin, alpha = 60, 10.0, 0.025
    outcomes = _ordered_outcomes(n, margin / 100)
    rows = []
    for discordant, lost in zip(outcomes.discordant.astype(int), outcomes.losses.astype(int), strict=True):
        rows.append([1.0] * (discordant - lost) + [-1.0] * lost + [0.0] * (n - discordant))
    d = np.array(rows)
    codes, units, _ = gate_codes(d, GateDesign(n, margin, alpha))
    expected = look_codes(outcomes.discordant - 2 * outcomes.losses, outcomes.discordant, n, margin, alpha)
    assert np.array_equal(codes, expected) and np.all(units == n)
    assert {1, 0, -1} <= set(codes.tolist())


def test_a_fixed_design_extended_looks_at_its_first_run_only() -> None:
    d = np.array([-1.0] * 12 + [0.0] * 88 + [0.0] * 200)
    first, _, _ = gate_codes(d[:100], GateDesign(100, 10.0, 0.025))
    grown, units, _ = gate_codes(d, GateDesign(100, 10.0, 0.025), generations=(100, 200))
    whole, _, _ = gate_codes(d, GateDesign(300, 10.0, 0.025))
    assert int(grown[0]) == int(first[0]) == 0 and int(units[0]) == 100 and int(whole[0]) == 1
    assert gate_verdict(d, GateDesign(100, 10.0, 0.025), generations=(100, 200)).basis == "fixed: first run"
