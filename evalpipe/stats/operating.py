"""The non-inferiority gate's rule and its operating characteristic (OC): how often it passes at each true Δ.

A sign-off has two error rates and a user feels both: it must **fail** a release with a drop it was built to
catch and **pass** a release with none.  This module states the gate's rule once (``gate_codes``, vectorised
over simulated paths, and ``gate_verdict`` for one observed sequence — the same code) and computes
``P(pass | Δ)`` for a design, exactly where that is cheap and by seeded simulation otherwise.

**The rule** (one-sided level α at the margin ``−M``; ``GateDesign``):

* *fixed design* (no sequential rule): pass when the Bonett–Price (2012) adjusted Wald lower bound of test −
  control clears ``−M`` (``evalpipe.stats.paired.adjusted_wald_interval``, ``evalpipe.stats.noninferiority``),
  its critical value ``z*`` calibrated so that the look's size at the margin is at most α whatever the
  discordance (``calibrated_critical_value``: with ``z = 1.96`` the 95 % bound passes up to 4 % of releases at
  the margin when ψ is small).  α = 0.025 one-sided is the 95 % two-sided convention of ICH E9 §3.3.2 /
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

**The model** of a unit's paired difference ``d ∈ {−1, 0, +1}`` (one attempt per arm, the model of
``evalpipe.stats.power``): test-only right (``d = +1``) with probability ``ψ/2``, control-only right (``d = −1``)
with ``ψ/2 + δ``, where ψ is the discordance with no regression and δ ≥ 0 the drop (``Δ = −δ``).  With repeats
the per-sample mean difference is approximated by the same three-point law with the discordance ``m0(k)`` of the
noise model (same mean and second moment).

* ``fixed_pass_probability`` — exact: the sum over the multinomial counts ``(f12, f21)`` of the indicator that
  the Bonett–Price lower bound clears ``−M`` (``(n+1)(n+2)/2`` terms).
* ``simulate_oc`` — the sequential design (and, as a check, the fixed one) on seeded paths of that law; its
  Monte-Carlo standard error ``sqrt(p(1 − p)/paths)`` is reported with every figure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.stats import binom

from evalpipe.stats.sequential import betting_eprocesses, first_crossings

GateBasis = Literal["fixed", "sequential crossing", "final look", "extended: no crossing"]
GateVerdictName = Literal["non-inferior", "inferior", "inconclusive"]
OcMethod = Literal["exact enumeration", "simulation"]

#: Paths simulated at once (a paths × units array of float64 per step keeps memory bounded).
CHUNK_PATHS = 2000


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


def _statistic(n: int, margin: float, discordant: NDArray[np.float64], losses: NDArray[np.float64]) -> NDArray[np.float64]:
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
    return _Outcomes(discordant[order], losses[order], w[order])


def _nuisance_grid(margin: float, points: int) -> NDArray[np.float64]:
    """Discordances ψ at the margin (``ψ/2 + m ≤ 1 − ψ/2``), denser near 0 where the worst case sits."""
    top = 1.0 - margin
    u = np.linspace(0.0, 1.0, points + 1)[1:]
    grid: NDArray[np.float64] = top * np.square(u)
    return grid


def _tail_at_margin(outcomes: _Outcomes, n: int, margin: float, psi: float) -> NDArray[np.float64]:
    """``P(W ≥ W_(k))`` for every k (cumulative over the ordered outcomes) at ``Δ = −m`` and discordance ψ."""
    psi1 = psi + margin
    share = (psi / 2.0 + margin) / psi1
    pmf = binom.pmf(outcomes.discordant, n, psi1) * binom.pmf(outcomes.losses, outcomes.discordant, share)
    tail: NDArray[np.float64] = np.cumsum(pmf)
    return tail


@lru_cache(maxsize=256)
def calibrated_critical_value(n: int, margin_pts: float, alpha: float, grid: int = 64) -> float:
    """The fixed look's critical value ``z*``: the smallest value of the Bonett–Price statistic ``W`` whose
    size at the margin, maximised over the nuisance discordance ψ, is at most α — an exact unconditional test
    of the matched-pairs design (Suissa & Shuster 1991, "The 2 × 2 matched-pairs trial: exact unconditional
    design and analysis", Biometrics 47(2); Berger & Boos 1994 maximise over the nuisance parameter the same
    way).  Why: at the non-inferiority boundary the plain 95 % Bonett–Price bound (``z = 1.96``) passes up to
    4 % of releases at small ψ (n = 100, ψ = 0.02, 10 pts: 0.042 exact), not 2.5 %.  The maximum is taken over
    ``grid`` values of ψ, quadratically spaced (denser near 0, where the worst case sits); the boundary
    simulations (``tests/stats/test_gate_error_rates.py``) check the result between the grid points."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must lie in (0, 0.5), got {alpha}")
    margin = margin_pts / 100.0
    outcomes = _ordered_outcomes(n, margin)
    worst = np.zeros(outcomes.statistic.size)
    for psi in _nuisance_grid(margin, grid):
        worst = np.maximum(worst, _tail_at_margin(outcomes, n, margin, float(psi)))
    k = int(np.searchsorted(worst, alpha + 1e-15, side="right"))
    w = outcomes.statistic
    while 0 < k < w.size and w[k - 1] == w[k]:  # never split outcomes with the same statistic
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


def look_bounds(total: float, square: float, n: int, margin_pts: float, alpha: float) -> tuple[float, float, float]:
    """The fixed look's interval (d scale) — Bonett–Price at the calibrated ``z*`` — and ``z*``."""
    z = calibrated_critical_value(n, float(margin_pts), float(alpha))
    n_adj = n + 2
    centre = total / n_adj
    spread = math.sqrt(max(0.0, (square + 2.0) / n_adj - centre * centre)) / math.sqrt(n_adj)
    return max(-1.0, centre - z * spread), min(1.0, centre + z * spread), z


def fixed_pass_probability(n: int, discordance: float, drop: float, margin_pts: float, alpha: float) -> float:
    """Exact ``P(pass)`` of the fixed look (``look_codes``) with n units of the module's law: the sum over
    ``D ~ Binomial(n, ψ₁)`` discordant units and ``f21 | D ~ Binomial(D, (ψ/2 + δ)/ψ₁)`` of the indicator that
    the look passes."""
    gain, loss = unit_probabilities(discordance, drop)
    outcomes = _ordered_outcomes(n, margin_pts / 100.0)
    sums = outcomes.discordant - 2.0 * outcomes.losses
    passed = look_codes(sums, outcomes.discordant, n, margin_pts, alpha) == 1
    psi1 = gain + loss
    if psi1 <= 0.0:
        return float(passed[(outcomes.discordant == 0)].any())
    pmf = binom.pmf(outcomes.discordant, n, psi1) * binom.pmf(outcomes.losses, outcomes.discordant, loss / psi1)
    return float(np.sum(np.where(passed, pmf, 0.0)))


def gate_codes(
    differences: ArrayLike,
    design: GateDesign,
    *,
    planned_n: int | Sequence[int] | NDArray[np.int64] | None = None,
    extended: bool = False,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.bool_]]:
    """The gate's rule (module docstring) on each path (last axis = units in sequence order): per path the
    verdict code (+1 non-inferior, −1 inferior, 0 inconclusive), the units used (the crossing, else all), and
    whether the e-processes crossed.  ``planned_n`` tunes the planned bet (default: the design's n; a per-unit
    sequence after an extension); ``extended``: no fixed look (module docstring)."""
    d = np.asarray(differences, dtype=np.float64)
    squeeze = d.ndim == 1
    d2 = d[None, :] if squeeze else d
    n_units = d2.shape[-1]
    codes = np.zeros(d2.shape[:-1], dtype=np.int64)
    units = np.full(d2.shape[:-1], n_units, dtype=np.int64)
    crossed = np.zeros(d2.shape[:-1], dtype=bool)
    if design.sequential:
        alpha_s = design.eprocess_alpha
        assert alpha_s is not None
        tuned = design.n if planned_n is None else planned_n
        processes = betting_eprocesses(d2, design.margin_pts, planned_n=tuned, alpha=alpha_s)  # type: ignore[arg-type]  # a per-unit plan after an extension
        units, verdict = first_crossings(processes, alpha_s)
        crossed = verdict != 0
        codes = verdict.copy()
    look = ~crossed & (design.final_alpha > 0.0) & (not extended)
    if np.any(look):
        total, square = d2.sum(axis=-1), np.square(d2).sum(axis=-1)
        final = look_codes(total, square, n_units, design.margin_pts, design.final_alpha)
        codes = np.where(look, final, codes)
        units = np.where(look, n_units, units)
    if squeeze:
        return codes[:1], units[:1], crossed[:1]
    return codes, units, crossed


@dataclass(frozen=True)
class GateVerdict:
    """The gate's verdict on one observed sequence: what decided it and the bound it read (points)."""

    verdict: GateVerdictName
    basis: GateBasis
    units_used: int
    lower_bound_pts: float
    upper_bound_pts: float
    critical_value: float | None


def gate_verdict(
    differences: ArrayLike,
    design: GateDesign,
    *,
    planned_n: int | Sequence[int] | None = None,
    extended: bool = False,
    sequence_bounds: tuple[float, float] | None = None,
) -> GateVerdict:
    """``gate_codes`` on one sequence, with the bound it read: the fixed look's interval, or at a crossing the
    confidence sequence's bounds (``sequence_bounds``, d scale, from ``evalpipe.stats.sequential``)."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise ValueError("one non-empty sequence of paired differences expected")
    codes, units, crossed = gate_codes(d, design, planned_n=planned_n, extended=extended)
    code, used, did_cross = int(codes[0]), int(units[0]), bool(crossed[0])
    names: dict[int, GateVerdictName] = {1: "non-inferior", -1: "inferior", 0: "inconclusive"}
    if did_cross or (design.sequential and (extended or design.final_alpha == 0.0)):
        lo, hi = sequence_bounds if sequence_bounds is not None else (float("nan"), float("nan"))
        basis: GateBasis = "sequential crossing" if did_cross else "extended: no crossing"
        return GateVerdict(names[code], basis, used, 100.0 * lo, 100.0 * hi, None)
    lower, upper, z = look_bounds(float(d.sum()), float(np.square(d).sum()), d.size, design.margin_pts, design.final_alpha)
    basis = "final look" if design.sequential else "fixed"
    return GateVerdict(names[code], basis, used, 100.0 * lower, 100.0 * upper, z)


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
    """``P(pass)`` by simulation: ``paths`` seeded sequences of the module's law judged by ``gate_codes``.

    ``generations``: unit counts of a run and its extensions (e.g. ``(300, 700)`` for 300 → 1000): the gate is
    judged at the end of each generation in turn — the first run with its fixed look, every extension by the
    continued e-process alone (the bets tuned to each generation's cumulative plan) — and a path passes when
    any of those verdicts passes (a user extends until it does)."""
    if paths < 1:
        raise ValueError("paths must be >= 1")
    sizes = list(generations) if generations is not None else [design.n]
    if sum(sizes) < 1 or any(s < 1 for s in sizes):
        raise ValueError(f"generation sizes must be >= 1, got {sizes}")
    gain, loss = unit_probabilities(discordance, drop)
    rng = np.random.default_rng(seed)
    passed = inferior = 0
    units_sum = 0.0
    tuned = np.repeat(np.cumsum(sizes), sizes).astype(np.int64)
    done = 0
    while done < paths:
        size = min(CHUNK_PATHS, paths - done)
        draw = rng.random((size, sum(sizes)))
        d = np.where(draw < gain, 1.0, np.where(draw < gain + loss, -1.0, 0.0))
        ok = np.zeros(size, dtype=bool)
        bad = np.zeros(size, dtype=bool)
        used = np.zeros(size, dtype=np.float64)
        end = 0
        for i, grow in enumerate(sizes):
            end += grow
            first = GateDesign(end, design.margin_pts, design.alpha, design.sequential_share, design.repeats)
            codes, units, _ = gate_codes(d[:, :end], first, planned_n=tuned[:end] if i else None, extended=i > 0)
            live = ~ok & ~bad
            used = np.where(live, units, used)
            ok |= live & (codes == 1)
            bad |= live & (codes == -1)
            if not design.sequential:
                break
        passed += int(ok.sum())
        inferior += int(bad.sum())
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


def pass_probability(
    design: GateDesign, discordance: float, drop: float, *, paths: int = 4000, seed: int = 20261205
) -> PassProbability:
    """``P(pass | Δ = −drop)``: exact for the fixed design, simulated for the sequential one."""
    if not design.sequential:
        p = fixed_pass_probability(design.n, discordance, drop, design.margin_pts, design.alpha)
        return PassProbability(-100.0 * drop, p, 0.0, "exact enumeration", float(design.n))
    return simulate_oc(design, discordance, drop, paths=paths, seed=seed)
