"""The gate's type I error at the margin, simulated in every path (``evalpipe.stats.operating``).

At ``Δ = −margin`` a block may pass at most α of the time — with the fixed look, with the in-run stop (the
e-processes at ``share × α`` and one final look at the rest), after a resume (the stop is recomputed from the
same units: the same rule on the same sequence), after ``--extend`` once and twice (the e-process continues, no
second fixed look), a fixed design extended once and twice (its look stays at the first run's units; ``evalpipe
run --extend`` refuses it), and for a pool whose members differ.  Each check is 20 000 seeded paths of
``simulate_oc``, which judges every generation with ``gate_codes`` exactly as compare does, and allows α plus
three Monte-Carlo standard errors.  The α split is checked part by part at three discordances: the crossings
are exactly those of e-processes at ``α_s`` (never at α), the final look passes no more than an exact look at
``α_f``.  The negative controls show the checks can fail: the plain 95 % Bonett–Price bound (z = 1.96) at small
discordance, a second fixed look after an extension, a fresh fixed look per extension, and the restarted
e-process.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from evalpipe.stats.operating import (
    GateDesign,
    fixed_pass_probability,
    gate_codes,
    gate_verdict,
    look_codes,
    simulate_oc,
    unit_probabilities,
)
from evalpipe.stats.sequential import betting_eprocesses, first_crossings

#: By hand in the integration tier: no process is started, but 20 000 paths per path kind cost ~25 s of CPU,
#: which would double the unit tier (``make test`` runs them; ``make test-fast`` does not).
pytestmark = pytest.mark.integration

ALPHA = 0.025
PATHS = 20_000
MARGIN = 10.0


def _bench_gate_oc() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_gate_oc", Path(__file__).parents[2] / "perf/bench_gate_oc.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _limit(alpha: float = ALPHA, paths: int = PATHS) -> float:
    return alpha + 3.0 * math.sqrt(alpha * (1 - alpha) / paths)


def _paths(psi: float, n: int, seed: int, drop: float = MARGIN / 100) -> np.ndarray:
    gain, loss = unit_probabilities(psi, drop)
    draw = np.random.default_rng(seed).random((PATHS, n))
    return np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))


@pytest.mark.parametrize("psi", [0.02, 0.1, 0.3])
def test_fixed_look_at_the_margin(psi: float) -> None:
    design = GateDesign(153, MARGIN, ALPHA)
    simulated = simulate_oc(design, psi, MARGIN / 100, paths=PATHS, seed=1)
    exact = fixed_pass_probability(153, psi, MARGIN / 100, MARGIN, ALPHA)
    assert exact <= ALPHA
    assert simulated.p_pass <= _limit()
    assert abs(simulated.p_pass - exact) <= 4 * simulated.standard_error + 1e-9


def test_the_plain_bonett_price_bound_is_a_negative_control() -> None:
    """z = 1.96 (the uncalibrated 95 % bound) passes far more than 2.5 % at the margin when ψ is small."""
    n, psi = 100, 0.02
    gain, loss = unit_probabilities(psi, MARGIN / 100)
    rng = np.random.default_rng(7)
    draw = rng.random((PATHS, n))
    d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
    centre = d.sum(axis=1) / (n + 2)
    second = (np.square(d).sum(axis=1) + 2) / (n + 2)
    lower = centre - 1.959964 * np.sqrt(np.maximum(0, second - centre**2)) / math.sqrt(n + 2)
    assert float(np.mean(100 * lower > -MARGIN)) > _limit()
    calibrated = look_codes(d.sum(axis=1), np.square(d).sum(axis=1), n, MARGIN, ALPHA)
    assert float(np.mean(calibrated == 1)) <= _limit()


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_in_run_stop_at_the_margin(share: float) -> None:
    """The e-processes looked at after every unit, the run stopped at the first crossing, the final look when
    none: a resume recomputes this same stop from the same units, so it is this path too."""
    simulated = simulate_oc(GateDesign(198, MARGIN, ALPHA, share), 0.1, MARGIN / 100, paths=PATHS, seed=2)
    assert simulated.p_pass <= _limit()


@pytest.mark.parametrize("generations", [(100, 200), (100, 200, 300), (100, 200, 700)])
def test_extend_once_and_twice_at_the_margin(generations: tuple[int, ...]) -> None:
    """A path passes when any run of the chain passes (a user extends every run that did not pass)."""
    design = GateDesign(generations[0], MARGIN, ALPHA, 0.5)
    simulated = simulate_oc(design, 0.1, MARGIN / 100, paths=PATHS, seed=3, generations=generations)
    assert simulated.p_pass <= _limit()


@pytest.mark.parametrize("generations", [(100, 200), (100, 200, 700)])
@pytest.mark.parametrize("psi", [0.02, 0.1])
def test_a_fixed_design_extended_once_and_twice_at_the_margin(
    generations: tuple[int, ...], psi: float
) -> None:
    """100 → 300 and 100 → 300 → 1000: the fixed look stays at the first run's 100 units (``gate_codes``, as
    compare judges it), so the chain passes exactly as often as the first run — at most α, exactly."""
    design = GateDesign(generations[0], MARGIN, ALPHA)
    simulated = simulate_oc(design, psi, MARGIN / 100, paths=PATHS, seed=4, generations=generations)
    exact = fixed_pass_probability(100, psi, MARGIN / 100, MARGIN, ALPHA)
    assert exact <= ALPHA and simulated.p_pass <= _limit()
    assert abs(simulated.p_pass - exact) <= 4 * simulated.standard_error
    assert simulated.mean_units == 100.0


def test_a_fresh_fixed_look_per_extension_is_a_negative_control() -> None:
    """What compare did with a fixed design extended 100 → 300 → 1000: a full-α look at each run's n, a path
    passing when any passes — well above α (0.041–0.050 at ψ 0.1–0.02, perf/bench_gate_oc.py)."""
    d = _paths(0.1, 1000, 9)
    passed = np.zeros(PATHS, dtype=bool)
    for n in (100, 300, 1000):
        codes, _, _ = gate_codes(d[:, :n], GateDesign(n, MARGIN, ALPHA))
        passed |= codes == 1
    assert float(passed.mean()) > _limit()


@pytest.mark.parametrize("psi", [0.02, 0.1, 0.3])
def test_the_alpha_split_part_by_part(psi: float) -> None:
    """share 0.5 of α 0.025 at n 198: the gate's crossings are exactly those of the two e-processes at α_s =
    0.0125 (bets tuned to 0.0125, threshold 80) on the same paths, which pass at most α_s; the final look at α_f
    = 0.0125 passes no more than the exact look at 0.0125 — a look at α would pass about twice as often, and
    e-processes at α cross at other units; the whole at most α."""
    n, alpha_s, alpha_f = 198, 0.0125, 0.0125
    d = _paths(psi, n, 11)
    codes, units, crossed = gate_codes(d, GateDesign(n, MARGIN, ALPHA, 0.5))
    reference_units, reference = first_crossings(
        betting_eprocesses(d, MARGIN, planned_n=n, alpha=alpha_s), alpha_s
    )
    assert np.array_equal(crossed, reference != 0)
    assert np.array_equal(codes[crossed], reference[crossed]) and np.array_equal(
        units[crossed], reference_units[crossed]
    )
    crossing_passes = float(np.mean(crossed & (codes == 1)))
    look_passes = float(np.mean(~crossed & (codes == 1)))
    assert crossing_passes <= _limit(alpha_s)
    exact_look = fixed_pass_probability(n, psi, MARGIN / 100, MARGIN, alpha_f)
    assert exact_look <= alpha_f
    assert look_passes <= exact_look + 3 * math.sqrt(exact_look * (1 - exact_look) / PATHS)
    assert crossing_passes + look_passes <= _limit()


def test_a_restarted_e_process_after_an_extension_is_a_negative_control() -> None:
    """What --extend did before: each larger run judged afresh (its units re-ordered, bets re-tuned, from unit
    1) — 100 → 300 → 1000 units, a path passing when any run passes — exceeds α.  The simulation is the one
    ``perf/bench_gate_oc.py`` prints."""
    assert _bench_gate_oc().restarted_extension_passes(PATHS, MARGIN, ALPHA) > _limit()


def test_a_pool_of_unequal_members_at_the_margin() -> None:
    """Members with different discordances interleaved in the pool's order, the pool at Δ = −margin."""
    rng = np.random.default_rng(5)
    n = 153
    member_psi = np.where(np.arange(n) < 90, 0.04, 0.2)  # AIME-like and HMMT-like members
    design = GateDesign(n, MARGIN, ALPHA, 0.5)
    passed = 0
    for _ in range(PATHS // 2000):
        order = rng.permuted(np.tile(member_psi, (2000, 1)), axis=1)
        gain, loss = order / 2, order / 2 + MARGIN / 100
        draw = rng.random((2000, n))
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        codes, _, _ = gate_codes(d, design)
        passed += int(np.sum(codes == 1))
    assert passed / PATHS <= _limit()


def test_gate_verdict_is_gate_codes_on_one_sequence() -> None:
    rng = np.random.default_rng(6)
    for share in (None, 0.5, 1.0):
        for generations in (None, (40, 40)):
            design = GateDesign(80 if generations is None else 40, MARGIN, ALPHA, share)
            for _ in range(30):
                d = rng.choice([-1.0, 0.0, 1.0], size=80, p=[0.12, 0.8, 0.08])
                codes, units, _ = gate_codes(d, design, generations=generations)
                verdict = gate_verdict(d, design, generations=generations)
                assert {1: "non-inferior", -1: "inferior", 0: "inconclusive"}[
                    int(codes[0])
                ] == verdict.verdict
                assert verdict.units_used == int(units[0])


def test_an_extended_block_takes_no_second_fixed_look() -> None:
    """60 agreeing units: the e-processes (at 0.0125) never reach 80, the fixed look passes; once the block is
    an extension of a 30-unit run, the fixed look was spent there, so the verdict is the e-processes' alone."""
    design = GateDesign(60, MARGIN, ALPHA, 0.5)
    fresh = gate_verdict(np.zeros(60), design)
    assert (fresh.verdict, fresh.basis) == ("non-inferior", "final look")
    grown = gate_verdict(np.zeros(60), GateDesign(30, MARGIN, ALPHA, 0.5), generations=(30, 30))
    assert (grown.verdict, grown.basis) == ("inconclusive", "extended: no crossing")
