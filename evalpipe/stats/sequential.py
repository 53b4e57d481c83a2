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

**The interval beside the verdict** is the inversion of the two e-processes that decide (``eprocess_interval``):
at the stop ``τ`` the margins ``θ`` (as ``Δ``, d scale) neither ``K⁺(θ)`` nor ``K⁻(θ)`` has rejected at any
``s ≤ τ`` — ``K⁺_s(θ)`` being the process above with ``m = (1 + θ)/2`` and the same bets.  With the planned bet
truncated at ``c / max(m, 1 − m)`` (``= c/(1 − m)`` at every margin, ``m ≤ 1/2``) each factor
``1 + λ(m)(X − m)`` is non-increasing in ``m`` and ``1 − λ(m)(X − m)`` non-decreasing (where the truncation binds
the derivatives are ``c(X − 1)/(1 − m)²`` or ``−cX/m²`` ≤ 0, resp. their mirror images ≥ 0; elsewhere ``∓λ``), so
``K⁺`` rejects a lower set of margins and ``K⁻`` an upper one, and the margins not rejected are one interval
``[L, U]``: WSR's construction of a confidence sequence from a family of tests (§4, the hedged capital process
inverted), here one-sided per side at the level the gate spends, so ``P(∃t: Δ ∉ [L_t, U_t]) ≤ 2α`` by Ville's
inequality and a union bound.  By construction the verdict at the margin ``M`` reads off it:
"non-inferior within M" ⇔ ``L > −M`` and "inferior beyond −M" ⇔ ``U < −M`` (``eprocess_interval`` seeds its
bisection with the decision at the margin itself, so floating point cannot split them).  (With aGRAPA the bet
depends on ``m`` in no monotone way; the bisection then finds a boundary of the rejected set that agrees with
the verdict at the margin, and the set need not be an interval: aGRAPA is kept for studies, the product bets
to its plan.)

``eb_confidence_sequence`` is WSR Theorem 2 (predictable plug-in empirical Bernstein, PrPl-EB), two-sided at
level α — a descriptive interval that tests no margin, kept for studies (``perf/bench_sequential.py``)::

    λ_t = min( sqrt(2 log(2/α) / (σ̂²_{t−1} t log(1 + t))), c )        v_t = 4 (X_t − μ̂_{t−1})²
    ψ_E(λ) = (−log(1 − λ) − λ) / 4
    C_t = Σλ_i X_i / Σλ_i  ±  (log(2/α) + Σ v_i ψ_E(λ_i)) / Σλ_i

(μ̂, σ̂² as above; confseq ``predmix_empbern_cs`` computes the same bound with ``v_t = (X_t − μ̂_{t−1})²`` and
``ψ = −log(1 − λ) − λ`` — the factor 4 cancels — but an unregularised ``μ̂_{t−1}`` in ``v_t``; either is
predictable, this module follows the paper).  ``P(∃t: Δ ∉ C_t) ≤ α``.  It is never printed beside a verdict:
two-sided and tuned to no margin, it can still hold ``−M`` when ``K⁺`` has rejected it.

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


def agrapa_bets(
    x: FloatArray, m: float | FloatArray, truncation: float = TRUNCATION
) -> tuple[FloatArray, FloatArray]:
    """``(λ⁺_t, λ⁻_t)``: the aGRAPA bet of WSR §5.1 (confseq ``lambda_aKelly``), split by sign and truncated
    at ``c/m`` and ``c/(1 − m)`` (module docstring).  ``λ_t`` uses ``X_1..X_{t−1}`` only."""
    if not 0.0 < truncation < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation}")
    mean_prev, variance_prev = _regularised_moments(x)
    gap = mean_prev - m
    bet = gap / (variance_prev + np.square(gap))
    with np.errstate(divide="ignore"):  # m = 0 or 1 at the ends of the interval's search: no bound there
        plus: FloatArray = np.clip(bet, 0.0, truncation / m)
        minus: FloatArray = np.clip(-bet, 0.0, truncation / (1.0 - m))
    return plus, minus


def planned_bets(
    x: FloatArray, m: float | FloatArray, planned_n: PlannedN, alpha: float, truncation: float = TRUNCATION
) -> tuple[FloatArray, FloatArray]:
    """``(λ⁺_t, λ⁻_t)``: WSR's predictable plug-in bet for a planned n, ``sqrt(2 log(1/α)/(n σ̂²_{t−1}))``
    (WSR §3, fixed-time choice; confseq ``lambda_predmix_eb(fixed_n=n)``), the same on both sides, truncated at
    ``c / max(m, 1 − m)`` — ``c/(1 − m)`` at every margin (``m ≤ 1/2``), ``c/m`` above (the interval's
    inversion, module docstring), so every factor of either process stays ≥ ``1 − c``.  ``planned_n`` per unit (``planned_n_per_unit``): unit ``t`` is tuned to
    its own ``n_t``, known before ``X_t`` (an extension is decided after the old units), so still predictable."""
    if not 0.0 < truncation < 1.0:
        raise ValueError(f"truncation must lie in (0, 1), got {truncation}")
    both: FloatArray = np.minimum(_planned_raw(x, planned_n, alpha), truncation / np.maximum(m, 1.0 - m))
    return both, both.copy()


def _planned_raw(x: FloatArray, planned_n: PlannedN, alpha: float) -> FloatArray:
    """The planned bet before its truncation, ``sqrt(2 log(1/α)/(n σ̂²_{t−1}))``: the same at every margin."""
    n = _planned_array(planned_n, x.shape[-1])
    _, variance_prev = _regularised_moments(x)
    raw: FloatArray = np.sqrt(2.0 * math.log(1.0 / alpha) / (n * variance_prev))
    return raw


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
    plus, minus = _bets(x, m, planned_n, alpha, truncation)
    wealth_plus, wealth_minus = _wealth(x, m, plus, minus)
    return BettingProcesses(
        null_mean=m,
        bets_non_inferior=plus,
        bets_inferior=minus,
        wealth_non_inferior=wealth_plus,
        wealth_inferior=wealth_minus,
    )


def _bets(
    x: FloatArray, m: float | FloatArray, planned_n: PlannedN | None, alpha: float, truncation: float
) -> tuple[FloatArray, FloatArray]:
    """The bets at null mean ``m``: planned when ``planned_n`` is given, aGRAPA otherwise."""
    if planned_n is None:
        return agrapa_bets(x, m, truncation)
    return planned_bets(x, m, planned_n, alpha, truncation)


def _wealth(
    x: FloatArray, m: float | FloatArray, plus: FloatArray, minus: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """``(K⁺_t, K⁻_t)`` for every t: the one computation the verdict and its interval share (a wealth past
    the largest float is +inf, which crosses every threshold, as it should)."""
    with np.errstate(over="ignore"):
        wealth_plus: FloatArray = np.exp(np.cumsum(np.log1p(plus * (x - m)), axis=-1))
        wealth_minus: FloatArray = np.exp(np.cumsum(np.log1p(-minus * (x - m)), axis=-1))
    return wealth_plus, wealth_minus


#: Width (d scale) at which the interval's bisection stops: 1e-8 points.
INTERVAL_TOLERANCE = 1e-10


def eprocess_interval(
    differences: ArrayLike,
    alpha: float,
    *,
    planned_n: PlannedN | None = None,
    stop: ArrayLike | None = None,
    margin_pts: float | None = None,
    truncation: float = TRUNCATION,
) -> tuple[FloatArray, FloatArray]:
    """The margins the deciding e-processes have not rejected by the stop (module docstring): per path
    (last axis = units) ``(L, U)`` on the d scale, ``L`` the smallest margin ``θ`` that no ``K⁺_s(θ)``, ``s ≤
    stop``, reached ``1/α`` for, ``U`` the largest that no ``K⁻_s(θ)`` did (−1 / +1 when nothing was rejected
    on that side); found by bisection to ``INTERVAL_TOLERANCE``.

    ``margin_pts``: the margin the verdict was decided at.  The bisection starts from the decision there, so
    ``K⁺`` rejected ``−M`` ⇔ ``L > −M`` and ``K⁻`` rejected ``−M`` ⇔ ``U < −M`` hold exactly, on the d scale
    and in points (``100·L`` against ``−M``; a bound within rounding of the margin is moved, by a few ulps at
    most, to the side the decision says)."""
    x = to_unit_interval(differences)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie in (0, 1), got {alpha}")
    batch, units = x.shape[:-1], x.shape[-1]
    last = np.broadcast_to(np.asarray(units if stop is None else stop, dtype=np.int64), batch)
    if np.any(last < 1) or np.any(last > units):
        raise ValueError(f"stop must lie in [1, {units}]")
    seen = np.arange(units) < last[..., None]
    threshold = 1.0 / alpha
    raw = None if planned_n is None else _planned_raw(x, planned_n, alpha)

    log_threshold = math.log(threshold)

    def bets(m: FloatArray) -> tuple[FloatArray, FloatArray]:
        if raw is None:
            return agrapa_bets(x, m, truncation)
        both: FloatArray = np.minimum(raw, truncation / np.maximum(m, 1.0 - m))
        return both, both

    def rejected(m: FloatArray) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """Whether ``K⁺`` / ``K⁻`` at null mean ``m`` (one per path) reached ``1/α`` by the stop, computed
        exactly as the verdict computes them (``_wealth``)."""
        mm = m[..., None]
        plus, minus = bets(mm)
        wealth_plus, wealth_minus = _wealth(x, mm, plus, minus)
        return (
            np.any((wealth_plus >= threshold) & seen, axis=-1),
            np.any((wealth_minus >= threshold) & seen, axis=-1),
        )

    def side_rejected(m: FloatArray, sign: float) -> NDArray[np.bool_]:
        """One side's ``rejected`` in log space (the bisection's midpoints: only the margin is the verdict's)."""
        mm = m[..., None]
        plus, minus = bets(mm)
        log_wealth = np.cumsum(np.log1p(sign * (plus if sign > 0 else minus) * (x - mm)), axis=-1)
        out: NDArray[np.bool_] = np.max(np.where(seen, log_wealth, -np.inf), axis=-1) >= log_threshold
        return out

    ones = np.ones(batch)
    # K⁺ rejects θ ≤ L: low_lo rejected (or −1), low_hi not; K⁻ rejects θ ≥ U: up_lo not, up_hi rejected (or +1)
    low_lo, low_hi, up_lo, up_hi = -ones, ones.copy(), -ones, ones.copy()
    floor_rejected, _ = rejected(np.zeros(batch))
    _, ceiling_rejected = rejected(ones.copy())
    plus_at = minus_at = np.zeros(batch, dtype=bool)
    if margin_pts is not None:  # the decision itself: the null mean the verdict was computed at, exactly
        plus_at, minus_at = rejected(np.full(batch, null_mean(margin_pts)))
        theta = np.full(batch, 2.0 * null_mean(margin_pts) - 1.0)
        low_lo, low_hi = np.where(plus_at, theta, low_lo), np.where(plus_at, low_hi, theta)
        up_lo, up_hi = np.where(minus_at, up_lo, theta), np.where(minus_at, theta, up_hi)
    while np.any(low_hi - low_lo > INTERVAL_TOLERANCE) or np.any(up_hi - up_lo > INTERVAL_TOLERANCE):
        low_mid, up_mid = (low_lo + low_hi) / 2.0, (up_lo + up_hi) / 2.0  # width halves: ~35 steps
        plus_mid = side_rejected((1.0 + low_mid) / 2.0, 1.0)
        minus_mid = side_rejected((1.0 + up_mid) / 2.0, -1.0)
        low_lo, low_hi = np.where(plus_mid, low_mid, low_lo), np.where(plus_mid, low_hi, low_mid)
        up_lo, up_hi = np.where(minus_mid, up_lo, up_mid), np.where(minus_mid, up_mid, up_hi)
    lower: FloatArray = np.where(floor_rejected | plus_at, low_hi, -1.0)
    upper: FloatArray = np.where(ceiling_rejected | minus_at, up_lo, 1.0)
    if margin_pts is not None:
        lower = on_the_margins_side(lower, margin_pts, above=plus_at)
        upper = on_the_margins_side(upper, margin_pts, above=~minus_at)
    return lower, upper


def on_the_margins_side(bound: ArrayLike, margin_pts: float, *, above: ArrayLike) -> FloatArray:
    """``bound`` (d scale) moved by the fewest ulps that put it strictly above ``−M`` where ``above`` (the
    verdict says so) and at or below it elsewhere, on the d scale and in points (``100 · bound``), so that a
    bound printed beside a verdict never reads the other way through rounding.  A move of more than 1e-9 is a
    bound that disagrees with its verdict, not rounding: refused."""
    b = np.array(bound, dtype=np.float64)
    want = np.broadcast_to(np.asarray(above, dtype=bool), b.shape)
    margins = (2.0 * null_mean(margin_pts) - 1.0, -margin_pts / 100.0)  # the d scale, two roundings of −M/100

    def ok(v: FloatArray) -> NDArray[np.bool_]:
        high = (v > max(margins)) & (100.0 * v > -margin_pts)
        low = (v <= min(margins)) & (100.0 * v <= -margin_pts)
        result: NDArray[np.bool_] = np.where(want, high, low)
        return result

    start = b.copy()
    for _ in range(64):
        good = ok(b)
        if np.all(good):
            break
        b = np.where(good, b, np.where(want, np.nextafter(b, np.inf), np.nextafter(b, -np.inf)))
    if not np.all(ok(b)) or np.any(np.abs(b - start) > 1e-9):
        raise ValueError(f"a bound disagrees with its verdict at the margin {margin_pts} pts")
    return b


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
    "inconclusive" at the cap / the last unit; the e-values, and the margins the two e-processes have not
    rejected by the stop (``eprocess_interval``: non-inferior ⇔ ``cs_lower > −M``, inferior ⇔ ``cs_upper < −M``).
    The planned bet when ``planned_n`` is given
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
    lower, upper = eprocess_interval(d, alpha, planned_n=planned_n, stop=stop, margin_pts=margin_pts)
    plus, minus = processes.wealth_non_inferior[:stop], processes.wealth_inferior[:stop]
    cs_lower, cs_upper = float(lower), float(upper)
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
    """The evidence after ``unit`` units: both e-values and the margins the e-processes had not rejected by
    then (``eprocess_interval``, ``d`` scale), as the rule saw it at that look."""

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
    the same bets (planned when ``planned_n`` is given) and the same interval (``eprocess_interval``)."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1:
        raise ValueError("one sequence of paired differences expected")
    if not 1 <= stop <= len(d) or looks < 1:
        raise ValueError(f"stop must lie in [1, {len(d)}] and looks >= 1, got stop={stop}, looks={looks}")
    processes = betting_eprocesses(d, margin_pts, planned_n=planned_n, alpha=alpha)
    every = math.ceil(stop / looks)
    units = sorted({*range(every, stop + 1, every), stop})
    lower, upper = eprocess_interval(
        np.broadcast_to(d, (len(units), len(d))),
        alpha,
        planned_n=planned_n,
        stop=units,
        margin_pts=margin_pts,
    )
    out = [
        SequentialLook(
            unit=unit,
            e_value_non_inferior=float(processes.wealth_non_inferior[unit - 1]),
            e_value_inferior=float(processes.wealth_inferior[unit - 1]),
            cs_lower=float(lo),
            cs_upper=float(hi),
        )
        for unit, lo, hi in zip(units, lower, upper, strict=True)
    ]
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
