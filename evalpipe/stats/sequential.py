"""Anytime-valid non-inferiority: two betting e-processes at the margin and an empirical-Bernstein confidence sequence.

**The unit.**  One manifest entry with all its attempts done in both arms; its paired difference
``d_i = x̄_i(test) − x̄_i(control) ∈ [−1, 1]`` (``evalpipe.stats.paired``; with one attempt a 0/±1 value, with
repeats the difference of per-sample means).  Units are taken in manifest (seeded rank) order, so that under
the super-population model of ``evalpipe.stats.power`` (samples are independent draws, Miller 2024 §2) the
sequence ``d_1, d_2, …`` is i.i.d. with mean ``Δ`` (test − control).  Any order that depends on the answers —
completion order, which favours short (often right) answers — breaks this, and with it every guarantee below.

**Scale.**  Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting" (JRSS-B 86(1),
2024; arXiv 2010.09686, here "WSR") work with ``X_i ∈ [0, 1]``; the map ``X_i = (1 + d_i)/2`` is affine, so
``Δ = −X`` points (margin ``X`` pts, ``μ = X/100``) becomes the null mean ``m = (1 − μ)/2 ∈ (0, 1/2]``.

**The two nulls** share the boundary ``Δ = −μ``:

* ``K⁺`` tests ``H0⁺: Δ ≤ −μ``; rejecting it (``K⁺_t ≥ 1/α``) says **non-inferior**.
  ``K⁺_t = ∏_{i≤t} (1 + λ⁺_i (X_i − m))`` with ``λ⁺_i ∈ [0, c/m]``.
* ``K⁻`` tests ``H0⁻: Δ ≥ −μ``; rejecting it (``K⁻_t ≥ 1/α``) says **inferior**.
  ``K⁻_t = ∏_{i≤t} (1 − λ⁻_i (X_i − m))`` with ``λ⁻_i ∈ [0, c/(1 − m)]``.

Under its null each is a nonnegative supermartingale (``λ_i`` predictable and ≥ 0, ``E[X_i − m | past]`` ≤ 0
resp. ≥ 0; the truncation ``c < 1`` keeps every factor ≥ ``1 − c > 0``), so by Ville's inequality
``P(∃t: K_t ≥ 1/α) ≤ α`` (WSR §2 and §4, the hedged capital process of eq. (18) split into its two halves):
each verdict is reached with probability at most α under its null, however often one looks and wherever one
stops.  At ``Δ = −μ`` both nulls hold and each verdict has probability ≤ α.

**The bets.**  Two predictable strategies, both from WSR (confseq ``betting_strategies``, read for this module,
``fake_obs = 1``), with the regularised running moments

    μ̂_t = (1/2 + Σ_{i≤t} X_i) / (t + 1)        σ̂²_t = (1/4 + Σ_{i≤t} (X_i − μ̂_i)²) / (t + 1)
    (μ̂_0 = 1/2, σ̂²_0 = 1/4)

and WSR's truncation ``c = 1/2`` (``trunc_scale``):

* **planned** (the default when the fixed-n plan is known): the predictable plug-in bet tuned to a planned
  sample size ``n`` (WSR §3, the predictable plug-in bet with the fixed-time choice of λ; confseq
  ``lambda_predmix_eb(fixed_n=n)``)
  ``λ_t = sqrt(2 log(1/α) / (n σ̂²_{t−1}))``, the same bet on both sides, truncated at the smaller bound:
  ``λ⁺_t = λ⁻_t = min(λ_t, c/(1 − m))`` (``c/(1 − m) ≤ c/m`` as ``m ≤ 1/2``).  Each factor pair multiplies to
  ``1 − λ²(X − m)² ≤ 1``, so ``K⁺K⁻ ≤ 1`` and the two cannot both reach ``1/α``.  Tuned to the plan it stops where the fixed-n test would decide, earlier
  when the truth is far from the margin (``perf/bench_sequential.py``: 165 / 426 / 403 mean units at +5 / 0 /
  −10 points against the design's targets 169 / 426 / 400, fixed n 495).
* **aGRAPA** (WSR §5.1, "approximate growth rate adaptive to the particular alternative"; confseq
  ``lambda_aKelly``): ``λ_t = (μ̂_{t−1} − m) / (σ̂²_{t−1} + (μ̂_{t−1} − m)²)``, split by sign:
  ``λ⁺_t = min(max(λ_t, 0), c/m)``, ``λ⁻_t = min(max(−λ_t, 0), c/(1 − m))`` — only one side bets at a time.
  Needs no plan; near the margin it spends its early wealth learning the sign (at Δ = 0 above: 496 mean units,
  61 % non-inferior by the cap of 742, against 80 % for the planned bet).

**The confidence sequence** is WSR Theorem 2 (predictable plug-in empirical Bernstein, PrPl-EB), two-sided at
level α::

    λ_t = min( sqrt(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))), c )        v_t = 4 (X_t − μ̂_{t−1})²
    ψ_E(λ) = (−log(1 − λ) − λ) / 4
    C_t = Σλ_i X_i / Σλ_i  ±  (log(2/α) + Σ v_i ψ_E(λ_i)) / Σλ_i

(μ̂, σ̂² as above; confseq ``predmix_empbern_cs`` computes the same bound with ``v_t = (X_t − μ̂_{t−1})²`` and
``ψ = −log(1 − λ) − λ`` — the factor 4 cancels — but an unregularised ``μ̂_{t−1}`` in ``v_t``; either is
predictable, this module follows the paper).  ``P(∃t: Δ ∉ C_t) ≤ α``, so the running intersection
``∩_{s≤t} C_s`` is a confidence sequence too; it is the one reported at the stop, mapped back to ``d``
(``2C − 1``); should the intersection be empty (probability ≤ α) the interval ``C_t`` at the stop is reported.

**The rule** (``sequential_decision``): after each unit, "non-inferior" at the first ``t`` with
``K⁺_t ≥ 1/α``, "inferior" at the first with ``K⁻_t ≥ 1/α``; at the cap (default: 1.5 × the
fixed-n plan) or when the units run out, "inconclusive".

Everything here is vectorised along the last axis so that simulations pass a (paths × units) array.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

SequentialVerdict = Literal["non-inferior", "inferior", "inconclusive"]
StopReason = Literal["crossing", "cap", "units exhausted"]
BetStrategy = Literal["planned", "aGRAPA"]

TRUNCATION = 0.5
"""WSR's ``c``: every bet is at most ``c`` times the largest one that keeps the wealth positive."""

FloatArray = NDArray[np.float64]

PlannedN = int | Sequence[int]
"""The planned n of the planned bet: one n for every unit, or one per unit (an extended block, below)."""


def planned_n_per_unit(generation_sizes: Sequence[int]) -> list[int]:
    """The planned n of every unit of a block grown by ``--extend``: the units of generation ``g`` keep the
    bet tuned to the plan they were drawn for, the cumulative size ``n_1 + … + n_g``.

    Why this keeps the guarantee: an extension is decided after the old units were judged, so the plan size
    of unit ``t`` is fixed before ``X_t`` is seen — the bet ``λ_t`` stays predictable (WSR §2 asks no more of
    it), and the e-process of the extended block is the old block's e-process continued, its wealth on the
    old units unchanged.  Restarting instead (re-tuning every bet to the new n and re-ordering the old units
    among the new) looks at the same data twice under two processes, and Ville's inequality bounds neither
    union of looks."""
    sizes = list(generation_sizes)
    if not sizes or any(size < 1 for size in sizes):
        raise ValueError(f"every generation needs at least one unit, got {sizes}")
    out: list[int] = []
    total = 0
    for size in sizes:
        total += size
        out += [total] * size
    return out


def _planned_array(planned_n: PlannedN, units: int) -> FloatArray | int:
    """``planned_n`` as the bets use it: an int, or the first ``units`` per-unit values (refuses a list
    shorter than the units or holding an n < 1)."""
    if isinstance(planned_n, int):
        if planned_n < 1:
            raise ValueError(f"planned n must be >= 1, got {planned_n}")
        return planned_n
    per_unit = np.asarray(list(planned_n), dtype=np.float64)
    if per_unit.ndim != 1 or per_unit.shape[0] < units:
        raise ValueError(f"a per-unit planned n needs one value for each of the {units} units")
    if np.any(per_unit < 1):
        raise ValueError("every per-unit planned n must be >= 1")
    out: FloatArray = per_unit[:units]
    return out


def final_planned_n(planned_n: PlannedN | None) -> int | None:
    """The plan the last unit was tuned to (a per-unit plan's last value): the n a report names."""
    if planned_n is None or isinstance(planned_n, int):
        return planned_n
    values = list(planned_n)
    return int(values[-1]) if values else None


def to_unit_interval(differences: ArrayLike) -> FloatArray:
    """``X = (1 + d)/2`` for paired differences ``d ∈ [−1, 1]`` (module docstring); refuses anything outside."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim == 0 or d.shape[-1] == 0:
        raise ValueError("no paired differences")
    if np.any(np.isnan(d)) or np.any(d < -1.0) or np.any(d > 1.0):
        raise ValueError("paired differences must lie in [-1, 1]")
    x: FloatArray = (1.0 + d) / 2.0
    return x


def null_mean(margin_pts: float) -> float:
    """The boundary ``Δ = −margin`` on the [0, 1] scale: ``m = (1 − margin/100)/2``."""
    if not 0.0 <= margin_pts < 100.0:
        raise ValueError(f"margin must lie in [0, 100) points, got {margin_pts}")
    return (1.0 - margin_pts / 100.0) / 2.0


def _lagged(values: FloatArray, first: float) -> FloatArray:
    """``values`` shifted one step later along the last axis, ``first`` in front: the predictable version."""
    out = np.empty_like(values)
    out[..., 0] = first
    out[..., 1:] = values[..., :-1]
    return out


def _regularised_moments(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """``(μ̂_{t−1}, σ̂²_{t−1})`` for t = 1..T (module docstring; WSR Theorem 2 and §5.1)."""
    t = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    mean = (0.5 + np.cumsum(x, axis=-1)) / (t + 1.0)
    variance = (0.25 + np.cumsum(np.square(x - mean), axis=-1)) / (t + 1.0)
    return _lagged(mean, 0.5), _lagged(variance, 0.25)


@dataclass(frozen=True)
class BettingProcesses:
    """``K⁺_t`` (against "Δ ≤ −margin") and ``K⁻_t`` (against "Δ ≥ −margin") after each unit, with their bets."""

    null_mean: float
    bets_non_inferior: FloatArray
    bets_inferior: FloatArray
    wealth_non_inferior: FloatArray
    wealth_inferior: FloatArray


def agrapa_bets(x: FloatArray, m: float, truncation: float = TRUNCATION) -> tuple[FloatArray, FloatArray]:
    """``(λ⁺_t, λ⁻_t)``: the aGRAPA bet of WSR §5.1 (confseq ``lambda_aKelly``), split by sign and truncated
    at ``c/m`` and ``c/(1 − m)`` (module docstring).  ``λ_t`` uses ``X_1..X_{t−1}`` only."""
    if not 0.0 < truncation < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation}")
    mean_prev, variance_prev = _regularised_moments(x)
    gap = mean_prev - m
    bet = gap / (variance_prev + np.square(gap))
    plus: FloatArray = np.clip(bet, 0.0, truncation / m)
    minus: FloatArray = np.clip(-bet, 0.0, truncation / (1.0 - m))
    return plus, minus


def planned_bets(
    x: FloatArray, m: float, planned_n: PlannedN, alpha: float, truncation: float = TRUNCATION
) -> tuple[FloatArray, FloatArray]:
    """``(λ⁺_t, λ⁻_t)``: WSR's predictable plug-in bet for a planned n, ``sqrt(2 log(1/α)/(n σ̂²_{t−1}))``
    (WSR §3, fixed-time choice; confseq ``lambda_predmix_eb(fixed_n=n)``), the same on both sides, truncated at
    ``c/(1 − m)`` (module docstring).  ``planned_n`` per unit (``planned_n_per_unit``): unit ``t`` is tuned to
    its own ``n_t``, known before ``X_t`` (an extension is decided after the old units), so still predictable."""
    if not 0.0 < truncation < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation}")
    n = _planned_array(planned_n, x.shape[-1])
    _, variance_prev = _regularised_moments(x)
    bet = np.sqrt(2.0 * math.log(1.0 / alpha) / (n * variance_prev))
    both: FloatArray = np.minimum(bet, truncation / (1.0 - m))
    return both, both.copy()


def betting_eprocesses(
    differences: ArrayLike,
    margin_pts: float,
    *,
    planned_n: PlannedN | None = None,
    alpha: float = 0.05,
    truncation: float = TRUNCATION,
) -> BettingProcesses:
    """``K⁺_t = ∏(1 + λ⁺_i(X_i − m))`` and ``K⁻_t = ∏(1 − λ⁻_i(X_i − m))`` (WSR §4–5; module docstring),
    accumulated as sums of logarithms; the planned bet when ``planned_n`` is given (``alpha`` is its level),
    aGRAPA otherwise (an int, or one n per unit: ``planned_n_per_unit``)."""
    x = to_unit_interval(differences)
    m = null_mean(margin_pts)
    if planned_n is None:
        plus, minus = agrapa_bets(x, m, truncation)
    else:
        plus, minus = planned_bets(x, m, planned_n, alpha, truncation)
    wealth_plus: FloatArray = np.exp(np.cumsum(np.log1p(plus * (x - m)), axis=-1))
    wealth_minus: FloatArray = np.exp(np.cumsum(np.log1p(-minus * (x - m)), axis=-1))
    return BettingProcesses(
        null_mean=m,
        bets_non_inferior=plus,
        bets_inferior=minus,
        wealth_non_inferior=wealth_plus,
        wealth_inferior=wealth_minus,
    )


def eb_confidence_sequence(
    differences: ArrayLike, alpha: float = 0.05, truncation: float = TRUNCATION
) -> tuple[FloatArray, FloatArray]:
    """WSR Theorem 2 (PrPl-EB) for the mean paired difference after each unit, on the ``d`` scale, not
    intersected (module docstring): ``P(∃t: Δ ∉ [lower_t, upper_t]) ≤ α``."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    x = to_unit_interval(differences)
    t = np.arange(1, x.shape[-1] + 1, dtype=np.float64)
    mean_prev, variance_prev = _regularised_moments(x)
    log_term = math.log(2.0 / alpha)
    lam = np.minimum(np.sqrt(2.0 * log_term / (variance_prev * t * np.log1p(t))), truncation)
    v = 4.0 * np.square(x - mean_prev)
    psi = (-np.log1p(-lam) - lam) / 4.0
    weight = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * x, axis=-1) / weight
    half = (log_term + np.cumsum(v * psi, axis=-1)) / weight
    lower: FloatArray = 2.0 * np.maximum(centre - half, 0.0) - 1.0
    upper: FloatArray = 2.0 * np.minimum(centre + half, 1.0) - 1.0
    return lower, upper


def first_crossings(
    processes: BettingProcesses, alpha: float, cap: int | None = None
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per path: the unit count at the stop and the verdict code (+1 non-inferior, −1 inferior, 0 none).

    The stop is the first ``t ≤ cap`` with ``K⁺_t ≥ 1/α`` or ``K⁻_t ≥ 1/α``; without a crossing it is the cap
    (or the last unit).  The two cannot cross at the same unit (aGRAPA bets on one side at a time; the planned
    bet keeps ``K⁺K⁻ ≤ 1``), so a crossing has one verdict."""
    threshold = 1.0 / alpha
    plus, minus = processes.wealth_non_inferior, processes.wealth_inferior
    horizon = plus.shape[-1] if cap is None else min(cap, plus.shape[-1])
    crossed_plus = plus[..., :horizon] >= threshold
    crossed_minus = minus[..., :horizon] >= threshold
    crossed = crossed_plus | crossed_minus
    any_crossed = crossed.any(axis=-1)
    first = np.where(any_crossed, crossed.argmax(axis=-1), horizon - 1)
    at_first = np.take_along_axis(crossed_plus, first[..., None], axis=-1)[..., 0]
    verdict = np.where(any_crossed, np.where(at_first, 1, -1), 0).astype(np.int64)
    units: NDArray[np.int64] = (first + 1).astype(np.int64)
    return units, verdict


@dataclass(frozen=True)
class SequentialDecision:
    """The sequential verdict on a sequence of units: where it stopped, why, and the evidence there."""

    margin_pts: float
    alpha: float
    bets: BetStrategy
    planned_n: int | None
    cap: int
    units_available: int
    units_used: int
    verdict: SequentialVerdict
    stop_reason: StopReason
    e_value_non_inferior: float
    e_value_inferior: float
    max_e_value_non_inferior: float
    max_e_value_inferior: float
    cs_lower: float
    cs_upper: float

    @property
    def units_left(self) -> int:
        """Units the stop leaves unused (of those available)."""
        return self.units_available - self.units_used

    @property
    def cs_lower_pts(self) -> float:
        return 100.0 * self.cs_lower

    @property
    def cs_upper_pts(self) -> float:
        return 100.0 * self.cs_upper


def sequential_decision(
    differences: ArrayLike,
    margin_pts: float,
    alpha: float = 0.05,
    cap: int | None = None,
    *,
    planned_n: PlannedN | None = None,
) -> SequentialDecision:
    """The rule of the module docstring on one sequence of paired differences in consumption order:
    the verdict at the first crossing of ``1/α`` by ``K⁺`` or ``K⁻`` (WSR §4–5, Ville's inequality), or
    "inconclusive" at the cap / the last unit; the e-values and the running intersection of the
    PrPl-EB confidence sequence (WSR Theorem 2) at the stop.  The planned bet when ``planned_n`` is given
    (one n, or one per unit for an extended block: ``planned_n_per_unit``), aGRAPA otherwise."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError("one sequence of paired differences expected")
    if cap is not None and cap < 1:
        raise ValueError(f"cap must be >= 1, got {cap}")
    processes = betting_eprocesses(d, margin_pts, planned_n=planned_n, alpha=alpha)
    units, code = first_crossings(processes, alpha, cap)
    stop = int(units)
    verdict: SequentialVerdict
    reason: StopReason
    if int(code) == 1:
        verdict, reason = "non-inferior", "crossing"
    elif int(code) == -1:
        verdict, reason = "inferior", "crossing"
    else:
        verdict = "inconclusive"
        reason = "cap" if cap is not None and stop == cap else "units exhausted"
    lower, upper = eb_confidence_sequence(d[:stop], alpha)
    plus, minus = processes.wealth_non_inferior[:stop], processes.wealth_inferior[:stop]
    cs_lower, cs_upper = float(lower.max()), float(upper.min())
    if cs_lower > cs_upper:  # an empty intersection (probability <= alpha): the sequence's own interval
        cs_lower, cs_upper = float(lower[-1]), float(upper[-1])
    return SequentialDecision(
        margin_pts=margin_pts,
        alpha=alpha,
        bets="aGRAPA" if planned_n is None else "planned",
        planned_n=final_planned_n(planned_n),
        cap=len(d) if cap is None else cap,
        units_available=len(d),
        units_used=stop,
        verdict=verdict,
        stop_reason=reason,
        e_value_non_inferior=float(plus[-1]),
        e_value_inferior=float(minus[-1]),
        max_e_value_non_inferior=float(plus.max()),
        max_e_value_inferior=float(minus.max()),
        cs_lower=cs_lower,
        cs_upper=cs_upper,
    )


@dataclass(frozen=True)
class SequentialLook:
    """The evidence after ``unit`` units: both e-values and the running intersection of the confidence
    sequence (``d`` scale), as the rule saw it at that look."""

    unit: int
    e_value_non_inferior: float
    e_value_inferior: float
    cs_lower: float
    cs_upper: float


@dataclass(frozen=True)
class SequentialPath:
    """A thinned record of the rule's looks: every ``every``-th unit up to the stop, the stop itself, and the
    first unit at which each e-process reached ``1/α`` over all the units available (``None``: never) — a
    crossing after the stop says what a longer run would have seen, not the verdict."""

    every: int
    looks: tuple[SequentialLook, ...]
    first_crossing_non_inferior: int | None
    first_crossing_inferior: int | None


def sequential_path(
    differences: ArrayLike,
    margin_pts: float,
    stop: int,
    alpha: float = 0.05,
    *,
    planned_n: PlannedN | None = None,
    looks: int = 10,
) -> SequentialPath:
    """The looks of ``sequential_decision`` on the same sequence, thinned to about ``looks`` entries up to
    ``stop`` (every ``ceil(stop/looks)``-th unit and the stop), with each side's first crossing of ``1/α``;
    the same bets (planned when ``planned_n`` is given) and the same running intersection of the CS."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError("one sequence of paired differences expected")
    if not 1 <= stop <= len(d) or looks < 1:
        raise ValueError(f"stop must lie in [1, {len(d)}] and looks >= 1, got stop={stop}, looks={looks}")
    processes = betting_eprocesses(d, margin_pts, planned_n=planned_n, alpha=alpha)
    lower, upper = eb_confidence_sequence(d[:stop], alpha)
    running_lower, running_upper = np.maximum.accumulate(lower), np.minimum.accumulate(upper)
    every = math.ceil(stop / looks)
    units = sorted({*range(every, stop + 1, every), stop})
    out = []
    for unit in units:
        i = unit - 1
        lo, hi = float(running_lower[i]), float(running_upper[i])
        if lo > hi:  # an empty intersection (probability <= alpha): the sequence's own interval
            lo, hi = float(lower[i]), float(upper[i])
        out.append(
            SequentialLook(
                unit=unit,
                e_value_non_inferior=float(processes.wealth_non_inferior[i]),
                e_value_inferior=float(processes.wealth_inferior[i]),
                cs_lower=lo,
                cs_upper=hi,
            )
        )
    threshold = 1.0 / alpha

    def first(wealth: FloatArray) -> int | None:
        hits = np.flatnonzero(wealth >= threshold)
        return int(hits[0]) + 1 if hits.size else None

    return SequentialPath(
        every=every,
        looks=tuple(out),
        first_crossing_non_inferior=first(processes.wealth_non_inferior),
        first_crossing_inferior=first(processes.wealth_inferior),
    )
