"""The non-inferiority gate's rule and its operating characteristic (OC): how often it passes at each true Δ.

A sign-off has two error rates and a user feels both: it must **fail** a release with a drop it was built to
catch and **pass** a release with none.  This module states the gate's rule once (``gate_codes``, vectorised
over simulated paths, and ``gate_verdict`` for one observed sequence — the same code) and computes
``P(pass | Δ)`` for a design, exactly where that is cheap and by seeded simulation otherwise.

**The rule** (one-sided level α at the margin ``−M``; ``GateDesign``):

* *fixed design* (no sequential rule): pass when the Bonett–Price (2012) adjusted Wald lower bound of test −
  control clears ``−M`` (``evalpipe.stats.paired.adjusted_wald_interval``, ``evalpipe.stats.noninferiority``),
  its critical value ``z*`` calibrated so that the look's size at the margin is at most α whatever the
  discordance (``calibrated_critical_value``: with ``z = 1.96`` the 95 % bound passes up to 5.8 % of releases
  at the margin at n = 100, 10 pts, as ψ → 0).  α = 0.025 one-sided is the 95 % two-sided convention of ICH E9 §3.3.2 /
  Piaggio et al. 2012.
* *sequential design*: α is split (a Bonferroni split of the one error): the two betting e-processes of
  ``evalpipe.stats.sequential`` run at level ``α_s = share · α`` over the units in their sequence order, and a
  crossing decides (``K⁺ ≥ 1/α_s``: non-inferior, ``K⁻ ≥ 1/α_s``: inferior) wherever it happens — the run may
  stop there.  Without a crossing, one final fixed look at level ``α_f = α − α_s`` on all the units judges.
  Under ``Δ ≤ −M``: ``P(pass) ≤ P(∃t: K⁺_t ≥ 1/α_s) + P(final look passes) ≤ α_s + α_f = α`` (Ville's inequality
  for the first term, WSR 2024 §2; the fixed interval's level for the second).  The sequential verdict and the
  fixed interval are both one-sided at the margin, so α means the same thing in both designs.
* *after an extension* (``--extend``: the e-process continues over the old units and then the new ones), the
  fixed look was spent at the first run's n: another one would spend ``α_f`` again.  So an extended block is
  judged by its e-processes alone (no crossing: inconclusive), and the bound above holds over the whole chain.
  A fixed design has no e-process to continue: its one look stays at its first run's units whatever an
  extension added (``evalpipe.run.extend`` refuses to extend it; compare judges an older one so).
* *the interval beside the verdict* is the deciding test's (``gate_decisions``): the Bonett–Price interval at
  ``z*`` for a look, the margins the e-processes have not rejected (``evalpipe.stats.sequential.
  eprocess_interval``) otherwise — non-inferior ⇔ lower bound > ``−M``, inferior ⇔ upper bound < ``−M``.

**The model** of a unit's paired difference ``d ∈ {−1, 0, +1}`` (one attempt per arm, the model of
``evalpipe.stats.power``): test-only right (``d = +1``) with probability ``ψ/2``, control-only right (``d = −1``)
with ``ψ/2 + δ``, where ψ is the discordance with no regression and δ ≥ 0 the drop (``Δ = −δ``).  With repeats
the per-sample mean difference is approximated by the same three-point law with the discordance ``m0(k)`` of the
noise model (same mean and second moment).

* ``fixed_pass_probability`` — exact: the sum over the multinomial counts ``(f12, f21)`` of the indicator that
  the Bonett–Price lower bound clears ``−M`` (``(n+1)(n+2)/2`` terms).
* ``simulate_oc`` — any design on seeded paths of that law, every generation of an extension chain judged by
  ``gate_codes`` as compare judges it; its Monte-Carlo standard error ``sqrt(p(1 − p)/paths)`` is reported
  with every figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln

from evalpipe.stats.sequential import (
    betting_eprocesses,
    eprocess_interval,
    first_crossings,
    on_the_margins_side,
    planned_n_per_unit,
)

GateBasis = Literal[
    "fixed",
    "fixed: first run",
    "sequential crossing",
    "final look",
    "sequential: no crossing",
    "extended: no crossing",
]
GateVerdictName = Literal["non-inferior", "inferior", "inconclusive"]
OcMethod = Literal["exact enumeration", "simulation"]

#: Paths simulated at once: a paths × units array of float64 per step small enough to stay in the CPU's cache
#: across the rule's dozen passes over it (256 × 800 units is 1.6 MB; 2000 paths ran ~40 % slower).  The
#: figures do not depend on it: the draws are one stream whatever the chunking, and each path is judged alone.
CHUNK_PATHS = 256


@dataclass(frozen=True)
class GateDesign:
    """One gated block's design: its planned units, margin, one-sided α and (sequential) the e-process share."""

    n: int
    margin_pts: float
    alpha: float = 0.025
    sequential_share: float | None = None
    repeats: int = 1

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"a design needs at least one unit, got n={self.n}")
        if not 0.0 < self.alpha < 0.5:
            raise ValueError(f"alpha must lie in (0, 0.5), got {self.alpha}")
        if self.sequential_share is not None and not 0.0 < self.sequential_share <= 1.0:
            raise ValueError(f"sequential share must lie in (0, 1], got {self.sequential_share}")
        if not 0.0 <= self.margin_pts < 100.0:
            raise ValueError(f"margin must lie in [0, 100) points, got {self.margin_pts}")

    @property
    def sequential(self) -> bool:
        return self.sequential_share is not None

    @property
    def eprocess_alpha(self) -> float | None:
        """``α_s``: the level of each e-process (None: fixed design)."""
        return None if self.sequential_share is None else self.alpha * self.sequential_share

    @property
    def final_alpha(self) -> float:
        """``α_f``: the one-sided level of the fixed look (0: a purely sequential design takes none)."""
        return self.alpha if self.sequential_share is None else self.alpha * (1.0 - self.sequential_share)


def unit_probabilities(discordance: float, drop: float) -> tuple[float, float]:
    """``(P(d = +1), P(d = −1)) = (ψ/2, ψ/2 + δ)`` (module docstring); refuses a law that is not one."""
    if not 0.0 <= discordance <= 1.0 or drop < 0.0:
        raise ValueError(f"discordance {discordance} outside [0, 1] or negative drop {drop}")
    gain, loss = discordance / 2.0, discordance / 2.0 + drop
    if gain + loss > 1.0 + 1e-12:
        raise ValueError(f"discordance {discordance} and drop {drop} exceed probability 1")
    return gain, min(loss, 1.0 - gain)


@dataclass(frozen=True)
class _Outcomes:
    """Every count pair ``(D, f21)`` of n units (``D`` discordant, ``f21`` of them control-only), ordered by the
    fixed look's statistic ``W``, largest first."""

    discordant: NDArray[np.float64]
    losses: NDArray[np.float64]
    statistic: NDArray[np.float64]
    log_coefficient: NDArray[np.float64]  # log of n! / (gains! losses! ties!)
    gains: NDArray[np.float64]  # discordant − losses
    ties: NDArray[np.float64]  # n − discordant


def _statistic(
    n: int, margin: float, discordant: NDArray[np.float64], losses: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``W = (d̄_BP + m) / s_BP``: the Bonett–Price lower bound clears ``−m`` exactly when ``W > z``."""
    n_adj = n + 2
    centre = (discordant - 2.0 * losses) / n_adj
    spread = np.sqrt(np.maximum(0.0, (discordant + 2.0) / n_adj - centre * centre)) / math.sqrt(n_adj)
    safe = np.where(spread > 0.0, spread, 1.0)
    w: NDArray[np.float64] = np.where(spread > 0.0, (centre + margin) / safe, np.inf)
    return w


@lru_cache(maxsize=64)
def _ordered_outcomes(n: int, margin: float) -> _Outcomes:
    total = np.arange(n + 1, dtype=np.float64)
    d_grid, f_grid = np.meshgrid(total, total, indexing="ij")
    valid = f_grid <= d_grid
    discordant, losses = d_grid[valid], f_grid[valid]
    w = _statistic(n, margin, discordant, losses)
    order = np.argsort(-w, kind="stable")
    discordant, losses = discordant[order], losses[order]
    coefficient = gammaln(n + 1.0) - gammaln(discordant - losses + 1.0) - gammaln(losses + 1.0)
    coefficient -= gammaln(n - discordant + 1.0)
    return _Outcomes(discordant, losses, w[order], coefficient, discordant - losses, n - discordant)


def _nuisance_grid(margin: float, points: int) -> NDArray[np.float64]:
    """Discordances ψ at the margin (``ψ/2 + m ≤ 1 − ψ/2``), from ψ = 0 itself (every discordant unit a loss:
    the limit where the plain bound errs most) and denser near 0, where the worst case sits."""
    top = 1.0 - margin
    u = np.linspace(0.0, 1.0, points + 1)
    grid: NDArray[np.float64] = top * np.square(u)
    return grid


def _pmf_at_margin(outcomes: _Outcomes, n: int, margin: float, psi: float, k: int) -> NDArray[np.float64]:
    """The probabilities of the first ``k`` ordered outcomes at ``Δ = −m`` and discordance ψ: the trinomial
    ``n!/(g! l! t!) (ψ/2)^g (ψ/2 + m)^l (1 − ψ − m)^t`` (g gains, l losses, t ties), in logs."""
    return _trinomial(outcomes, n, psi / 2.0, psi / 2.0 + margin, k)


def _trinomial(outcomes: _Outcomes, n: int, gain: float, loss: float, k: int) -> NDArray[np.float64]:
    """``P(g gains, l losses)`` of the first ``k`` ordered outcomes with unit probabilities ``gain``/``loss``."""
    log_p = (
        outcomes.log_coefficient[:k]
        + _xlog(outcomes.gains[:k], gain)
        + _xlog(outcomes.losses[:k], loss)
        + _xlog(outcomes.ties[:k], max(0.0, 1.0 - gain - loss))
    )
    pmf: NDArray[np.float64] = np.exp(log_p)
    return pmf


def _xlog(counts: NDArray[np.float64], probability: float) -> NDArray[np.float64]:
    """``scipy.special.xlogy(counts, probability)`` for one probability: ``count · log p``, 0 where the count is
    0 (so ``0 · log 0 = 0``).  The same values, with the logarithm taken once instead of once per outcome — the
    calibration and the plan's reach search evaluate this over ~10⁵ outcomes thousands of times."""
    if probability > 0.0:
        out: NDArray[np.float64] = counts * math.log(probability)
        return out
    return np.where(counts > 0.0, -np.inf if probability == 0.0 else np.nan, 0.0)


def _tail_at_margin(outcomes: _Outcomes, n: int, margin: float, psi: float) -> NDArray[np.float64]:
    """``P(W ≥ W_(k))`` for every k (cumulative over the ordered outcomes) at ``Δ = −m`` and discordance ψ."""
    tail: NDArray[np.float64] = np.cumsum(_pmf_at_margin(outcomes, n, margin, psi, outcomes.statistic.size))
    return tail


def size_at_margin(n: int, margin_pts: float, z: float, psi: float) -> float:
    """Exact size of the look ``W > z`` at ``Δ = −margin`` and discordance ψ: the sum over the outcomes it
    passes of their multinomial probability (module docstring)."""
    margin = margin_pts / 100.0
    outcomes = _ordered_outcomes(n, margin)
    k = int(np.count_nonzero(outcomes.statistic > z))
    return float(np.sum(_pmf_at_margin(outcomes, n, margin, psi, k)))


def worst_size(n: int, margin_pts: float, z: float, *, points: int = 64) -> tuple[float, float]:
    """``max_ψ`` of ``size_at_margin`` and the ψ where it is reached: the grid of ``_nuisance_grid`` (ψ = 0
    included), then every local maximum on it refined by a bounded Brent search between its neighbours (the
    size is a polynomial of degree n in ψ, smooth between grid points)."""
    # import cost: scipy, only on this path
    from scipy.optimize import minimize_scalar

    margin = margin_pts / 100.0
    outcomes = _ordered_outcomes(n, margin)
    k = int(np.count_nonzero(outcomes.statistic > z))
    return _worst_of_region(outcomes, n, margin, k, points, minimize_scalar)


def _worst_of_region(
    outcomes: _Outcomes, n: int, margin: float, k: int, points: int, minimize_scalar: Any
) -> tuple[float, float]:
    if k == 0:
        return 0.0, 0.0
    grid = _nuisance_grid(margin, points)
    sizes = np.array([float(np.sum(_pmf_at_margin(outcomes, n, margin, float(p), k))) for p in grid])
    best, where = float(sizes.max()), float(grid[int(sizes.argmax())])
    for i in range(len(grid)):
        left, right = sizes[i - 1] if i else -1.0, sizes[i + 1] if i + 1 < len(grid) else -1.0
        if sizes[i] < left or sizes[i] < right:
            continue
        lo, hi = float(grid[max(i - 1, 0)]), float(grid[min(i + 1, len(grid) - 1)])
        found = minimize_scalar(
            lambda p: -float(np.sum(_pmf_at_margin(outcomes, n, margin, p, k))),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-10},
        )
        if -found.fun > best:
            best, where = -float(found.fun), float(found.x)
    return best, where


@lru_cache(maxsize=256)
def calibrated_critical_value(n: int, margin_pts: float, alpha: float, grid: int = 64) -> float:
    """The fixed look's critical value ``z*``: the smallest value of the Bonett–Price statistic ``W`` whose
    size at the margin, maximised over the nuisance discordance ψ, is at most α — an exact unconditional test
    of the matched-pairs design (Suissa & Shuster 1991, "The 2 × 2 matched-pairs trial: exact unconditional
    design and analysis", Biometrics 47(2); Berger & Boos 1994 maximise over the nuisance parameter the same
    way).  Why: at the non-inferiority boundary the plain 95 % Bonett–Price bound (``z = 1.96``) passes far
    more than 2.5 % of releases at the margin when ψ is small — 0.058 at n = 100, 10 pts as ψ → 0, exact
    (``worst_size``; 0.044 at ψ = 0.02).  The maximum is taken over ``grid`` + 1 values of ψ from 0,
    quadratically spaced (denser near 0, where the worst case sits), and then over ψ itself: every local
    maximum of the chosen region's size is refined between its grid neighbours (``worst_size``) and, should it
    exceed α there, the region shrinks by one outcome class until it does not.  ``tests/stats/
    test_calibration.py`` checks size ≤ α over n 50–400, margins 5–20 pts, α 0.0125–0.05 on a finer grid."""
    # import cost: scipy, only on this path
    from scipy.optimize import minimize_scalar

    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha}")
    margin = margin_pts / 100.0
    outcomes = _ordered_outcomes(n, margin)
    worst = np.zeros(outcomes.statistic.size)
    for psi in _nuisance_grid(margin, grid):
        worst = np.maximum(worst, _tail_at_margin(outcomes, n, margin, float(psi)))
    k = int(np.searchsorted(worst, alpha + 1e-15, side="right"))
    w = outcomes.statistic
    while True:
        while 0 < k < w.size and w[k - 1] == w[k]:  # never split outcomes with the same statistic
            k -= 1
        if k == 0 or _worst_of_region(outcomes, n, margin, k, grid, minimize_scalar)[0] <= alpha + 1e-15:
            break
        k -= 1
    return float(w[k]) if k < w.size else math.inf


def look_codes(
    total: NDArray[np.float64], square: NDArray[np.float64], n: int, margin_pts: float, alpha: float
) -> NDArray[np.int64]:
    """The fixed look on ``Σd`` and ``Σd²`` over n units: +1 when ``W > z*`` (the Bonett–Price bound at ``z*``
    clears ``−M``: non-inferior), −1 when ``W < −z*`` (the upper bound is below ``−M``: inferior), else 0."""
    z = calibrated_critical_value(n, float(margin_pts), float(alpha))
    margin = margin_pts / 100.0
    n_adj = n + 2
    centre = total / n_adj
    spread = np.sqrt(np.maximum(0.0, (square + 2.0) / n_adj - centre * centre)) / math.sqrt(n_adj)
    safe = np.where(spread > 0.0, spread, 1.0)
    w = np.where(spread > 0.0, (centre + margin) / safe, np.where(centre + margin > 0.0, np.inf, -np.inf))
    codes: NDArray[np.int64] = np.where(w > z, 1, np.where(w < -z, -1, 0)).astype(np.int64)
    return codes


def look_bounds(
    total: ArrayLike, square: ArrayLike, n: int, margin_pts: float, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """The fixed look's interval (d scale, per path) — Bonett–Price at the calibrated ``z*`` — and ``z*``:
    ``W > z*`` ⇔ its lower bound clears ``−M`` (``look_codes``)."""
    z = calibrated_critical_value(n, float(margin_pts), float(alpha))
    n_adj = n + 2
    centre = np.asarray(total, dtype=np.float64) / n_adj
    spread = np.sqrt(np.maximum(0.0, (np.asarray(square, dtype=np.float64) + 2.0) / n_adj - centre * centre))
    spread = spread / math.sqrt(n_adj)
    lower: NDArray[np.float64] = np.maximum(-1.0, centre - z * spread)
    upper: NDArray[np.float64] = np.minimum(1.0, centre + z * spread)
    return lower, upper, z


def fixed_pass_probability(n: int, discordance: float, drop: float, margin_pts: float, alpha: float) -> float:
    """Exact ``P(pass)`` of the fixed look (``look_codes``) with n units of the module's law: the sum over
    ``D ~ Binomial(n, ψ₁)`` discordant units and ``f21 | D ~ Binomial(D, (ψ/2 + δ)/ψ₁)`` of the indicator that
    the look passes."""
    gain, loss = unit_probabilities(discordance, drop)
    outcomes = _ordered_outcomes(n, margin_pts / 100.0)
    sums = outcomes.discordant - 2.0 * outcomes.losses
    passed = look_codes(sums, outcomes.discordant, n, margin_pts, alpha) == 1
    pmf = _trinomial(outcomes, n, gain, loss, outcomes.statistic.size)
    return float(np.sum(np.where(passed, pmf, 0.0)))


def _plan(generations: Sequence[int] | None, units: int) -> list[int]:
    """The units per generation of a block (``[units]`` when never extended); refuses sizes < 1 or fewer
    planned units than there are."""
    sizes = [units] if generations is None else [int(g) for g in generations]
    if not sizes or any(g < 1 for g in sizes) or sum(sizes) < units:
        raise ValueError(f"generation sizes {sizes} do not plan the {units} units given")
    return sizes


def gate_codes(
    differences: ArrayLike,
    design: GateDesign,
    *,
    generations: Sequence[int] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """The gate's rule (module docstring) on each path (last axis = units in the block's order): per path the
    verdict code (+1 non-inferior, −1 inferior, 0 inconclusive), the units the deciding test read, and
    whether the e-processes crossed.  The one rule of compare, the run and every simulation (``simulate_oc``).

    ``generations``: the units per generation of the plan (``[n_1, n_2, …]`` after ``--extend``; default: one
    generation of ``design.n``).  A sequential design's bets are tuned to the plan (``design.n``, or per unit
    the cumulative sizes after an extension: ``planned_n_per_unit``); its final look at ``α_f`` is taken only
    on a block never extended.  A fixed design's one look is at its first generation's units whatever was
    added later: the look spent α there."""
    d = np.asarray(differences, dtype=np.float64)
    rule = _gate(d[None, :] if d.ndim == 1 else d, design, generations)
    return rule.codes, rule.units, rule.crossed


@dataclass(frozen=True)
class _Rule:
    codes: NDArray[np.int64]
    units: NDArray[np.int64]
    crossed: NDArray[np.bool_]
    looked: NDArray[np.bool_]
    look_units: int
    sizes: list[int]


def _gate(d2: NDArray[np.float64], design: GateDesign, generations: Sequence[int] | None) -> _Rule:
    n_units = d2.shape[-1]
    sizes = _plan(generations if generations is not None else [max(design.n, n_units)], n_units)
    extended = len(sizes) > 1
    codes = np.zeros(d2.shape[:-1], dtype=np.int64)
    units = np.full(d2.shape[:-1], n_units, dtype=np.int64)
    crossed = np.zeros(d2.shape[:-1], dtype=bool)
    if design.sequential:
        alpha_s = design.eprocess_alpha
        assert alpha_s is not None
        processes = betting_eprocesses(d2, design.margin_pts, planned_n=_tuned(design, sizes), alpha=alpha_s)
        units, verdict = first_crossings(processes, alpha_s)
        crossed = verdict != 0
        codes = verdict.copy()
        look = ~crossed & (design.final_alpha > 0.0) & (not extended)
        seen = n_units
    else:
        look = np.ones(d2.shape[:-1], dtype=bool)
        seen = min(sizes[0], n_units)
    if np.any(look):
        first = d2[..., :seen]
        total, square = first.sum(axis=-1), np.square(first).sum(axis=-1)
        final = look_codes(total, square, seen, design.margin_pts, design.final_alpha)
        codes = np.where(look, final, codes)
        units = np.where(look, seen, units)
    return _Rule(codes, units, crossed, look, seen, sizes)


def _tuned(design: GateDesign, sizes: list[int]) -> int | list[int]:
    """The plan the bets are tuned to: the design's n, or per unit the cumulative plan of an extended block."""
    return planned_n_per_unit(sizes) if len(sizes) > 1 else design.n


@dataclass(frozen=True)
class GateDecisions:
    """``gate_codes`` with the interval each verdict reads off (d scale, per path): for a crossing or an
    e-process verdict the margins the e-processes have not rejected at ``α_s`` by the stop
    (``evalpipe.stats.sequential.eprocess_interval``), for a look the Bonett–Price interval at its ``z*``.
    Either way non-inferior ⇔ ``lower > −M`` and inferior ⇔ ``upper < −M``."""

    codes: NDArray[np.int64]
    units: NDArray[np.int64]
    crossed: NDArray[np.bool_]
    looked: NDArray[np.bool_]
    lower: NDArray[np.float64]
    upper: NDArray[np.float64]


def gate_decisions(
    differences: ArrayLike, design: GateDesign, *, generations: Sequence[int] | None = None
) -> GateDecisions:
    """``gate_codes`` and the interval beside each verdict (``GateDecisions``), on every path at once."""
    d = np.asarray(differences, dtype=np.float64)
    d2 = d[None, :] if d.ndim == 1 else d
    rule = _gate(d2, design, generations)
    codes, units, looked = rule.codes, rule.units, rule.looked
    lower = np.full(codes.shape, np.nan)
    upper = np.full(codes.shape, np.nan)
    if np.any(looked):
        first = d2[..., : rule.look_units]
        total, square = first.sum(axis=-1), np.square(first).sum(axis=-1)
        lo, hi, _ = look_bounds(total, square, rule.look_units, design.margin_pts, design.final_alpha)
        lower = np.where(looked, lo, lower)
        upper = np.where(looked, hi, upper)
    if np.any(~looked):
        alpha_s = design.eprocess_alpha
        assert alpha_s is not None  # only a sequential design leaves a path without a look
        rows = np.flatnonzero(~looked)
        lo, hi = eprocess_interval(
            d2[rows],
            alpha_s,
            planned_n=_tuned(design, rule.sizes),
            stop=units[rows],
            margin_pts=design.margin_pts,
        )
        lower[rows], upper[rows] = lo, hi
    lower = on_the_margins_side(lower, design.margin_pts, above=codes == 1)
    upper = on_the_margins_side(upper, design.margin_pts, above=codes != -1)
    return GateDecisions(codes, units, rule.crossed, looked, lower, upper)


@dataclass(frozen=True)
class GateVerdict:
    """The gate's decision on one block: the verdict, what decided it, the units it read, and the interval
    printed beside it (points; ``GateDecisions``: non-inferior ⇔ lower > −M, inferior ⇔ upper < −M)."""

    verdict: GateVerdictName
    basis: GateBasis
    units_used: int
    lower_bound_pts: float
    upper_bound_pts: float
    critical_value: float | None
    alpha_spent: float


def gate_verdict(
    differences: ArrayLike, design: GateDesign, *, generations: Sequence[int] | None = None
) -> GateVerdict:
    """The gate's decision on one observed sequence: ``gate_decisions`` on it, with its basis and the α the
    deciding test spends (``α_s`` for the e-processes, ``α_f`` — α for a fixed design — for a look)."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("one non-empty sequence of paired differences expected")
    one = gate_decisions(d, design, generations=generations)
    code, used = int(one.codes[0]), int(one.units[0])
    names: dict[int, GateVerdictName] = {1: "non-inferior", -1: "inferior", 0: "inconclusive"}
    extended = generations is not None and len(generations) > 1
    lower, upper = 100.0 * float(one.lower[0]), 100.0 * float(one.upper[0])
    if not one.looked[0]:
        alpha_s = design.eprocess_alpha
        assert alpha_s is not None
        basis: GateBasis = (
            "sequential crossing"
            if one.crossed[0]
            else ("extended: no crossing" if extended else "sequential: no crossing")
        )
        return GateVerdict(names[code], basis, used, lower, upper, None, alpha_s)
    z = calibrated_critical_value(used, float(design.margin_pts), float(design.final_alpha))
    if design.sequential:
        basis = "final look"
    else:
        basis = "fixed: first run" if extended else "fixed"
    return GateVerdict(names[code], basis, used, lower, upper, z, design.final_alpha)


@dataclass(frozen=True)
class PassProbability:
    """``P(pass)`` at one true Δ, how it was computed, and the design's mean units there."""

    delta_pts: float
    p_pass: float
    standard_error: float
    method: OcMethod
    mean_units: float
    p_inferior: float | None = None


def simulate_oc(
    design: GateDesign,
    discordance: float,
    drop: float,
    *,
    paths: int,
    seed: int,
    generations: Sequence[int] | None = None,
) -> PassProbability:
    """``P(pass)`` by simulation: ``paths`` seeded sequences of the module's law judged by ``gate_codes`` —
    the function compare judges a block with, called as compare calls it.

    ``generations``: unit counts of a run and its extensions (e.g. ``(100, 200, 700)`` for 100 → 300 → 1000):
    the gate is judged at the end of each generation in turn, on all the units so far with the generations so
    far (``gate_codes(d[:, :end], design, generations=sizes[:g])``, compare's call on that run), whatever the
    design — a sequential one by its continued e-processes, a fixed one by its first run's look — and a path
    passes when any of those verdicts passes: a user extends every run that did not pass, an "inferior" one
    too, until one does.  ``p_inferior``: the paths that never passed and were judged inferior last."""
    if paths < 1:
        raise ValueError("paths must be >= 1")
    sizes = list(generations) if generations is not None else [design.n]
    if any(s < 1 for s in sizes):
        raise ValueError(f"generation sizes must be >= 1, got {sizes}")
    first = GateDesign(sizes[0], design.margin_pts, design.alpha, design.sequential_share, design.repeats)
    gain, loss = unit_probabilities(discordance, drop)
    rng = np.random.default_rng(seed)
    passed = inferior = 0
    units_sum = 0.0
    done = 0
    while done < paths:
        size = min(CHUNK_PATHS, paths - done)
        draw = rng.random((size, sum(sizes)))
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        ok = np.zeros(size, dtype=bool)
        bad = np.zeros(size, dtype=bool)
        used = np.zeros(size, dtype=np.float64)
        end = 0
        for g, grow in enumerate(sizes):
            end += grow
            codes, units, _ = gate_codes(d[:, :end], first, generations=sizes[: g + 1] if g else None)
            live = ~ok
            used = np.where(live, units, used)
            ok |= live & (codes == 1)
            bad = np.where(live, codes == -1, bad)
        passed += int(ok.sum())
        inferior += int((bad & ~ok).sum())
        units_sum += float(used.sum())
        done += size
    p = passed / paths
    return PassProbability(
        delta_pts=-100.0 * drop,
        p_pass=p,
        standard_error=math.sqrt(max(p * (1.0 - p), 1.0 / paths) / paths),
        method="simulation",
        mean_units=units_sum / paths,
        p_inferior=inferior / paths,
    )


@lru_cache(maxsize=1024)
def pass_probability(
    design: GateDesign, discordance: float, drop: float, *, paths: int = 4000, seed: int = 20261205
) -> PassProbability:
    """``P(pass | Δ = −drop)``: exact for the fixed design, simulated for the sequential one.  Remembered per
    process (a pure function of its arguments, the simulation seeded; the result frozen): ``evalpipe plan``'s rows,
    its reach search and its sign-off ask for the same points again, each a fraction of a second."""
    if not design.sequential:
        p = fixed_pass_probability(design.n, discordance, drop, design.margin_pts, design.alpha)
        return PassProbability(-100.0 * drop, p, 0.0, "exact enumeration", float(design.n))
    return simulate_oc(design, discordance, drop, paths=paths, seed=seed)
