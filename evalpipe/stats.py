"""Interval estimates for sampled accuracy.

* Simple proportions use the Wilson score interval (``statsmodels`` ``proportion_confint``): it keeps
  its coverage near 0 and 1 and at the small n of a sampled sign-off, where the Wald interval fails.
* A stratified sample whose strata were not sampled proportionally (LiveCodeBench 6 per difficulty)
  gives an equal-difficulty score, not a population score.  The population-weighted estimate is
  ``p = sum_h W_h p_h`` (W_h = N_h / N) with the textbook stratified variance
  ``Var = sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h`` (Cochran, *Sampling Techniques*, 5.6; neither scipy
  nor statsmodels ships a survey-design estimator, so the sum is written out; the per-stratum
  variances come from numpy).  Its interval is the Wilson interval at the effective sample size
  ``n_eff = p(1-p)/Var`` (Korn & Graubard 1998), with ``n_eff`` capped at ``n`` — the rule of the NCHS
  presentation standards for survey proportions — so that strata that happen to be all-correct or
  all-wrong (``Var = 0`` at n_h = 6) never yield a zero-width interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalpipe.artifacts.schema.metrics import Interval

Z_CONFIDENCE = 0.95

STRATIFIED_METHOD = (
    "stratified estimator sum_h W_h p_h (W_h = N_h/N); Var = sum_h W_h^2 (1-n_h/N_h) s_h^2/n_h; "
    "Wilson interval at n_eff = p(1-p)/Var capped at n"
)


def wilson_interval(correct: float, n: float, confidence: float = Z_CONFIDENCE) -> tuple[float, float] | None:
    """Wilson score interval for ``correct`` successes in ``n`` trials; None when ``n`` is 0."""
    if n <= 0:
        return None
    if correct < 0 or correct > n:
        raise ValueError(f"correct={correct} outside [0, n={n}]")
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(correct, n, alpha=1 - confidence, method="wilson")
    return max(0.0, float(lo)), min(1.0, float(hi))


def wilson_ci(correct: int, n: int) -> Interval | None:
    """The Wilson score interval of ``correct``/``n`` as the summary's ``Interval``; None when ``n`` is 0."""
    ci = wilson_interval(correct, n)
    return Interval(lower=ci[0], upper=ci[1], method="wilson") if ci else None


@dataclass(frozen=True)
class StratumData:
    """One stratum: its population size and the 0/1 outcomes of the sampled entries."""

    name: str
    population: int
    outcomes: Sequence[float]


@dataclass(frozen=True)
class StratifiedResult:
    estimate: float
    variance: float
    standard_error: float
    effective_sample_size: float
    interval: tuple[float, float]


def stratified_proportion(
    strata: Sequence[StratumData], confidence: float = Z_CONFIDENCE
) -> StratifiedResult | None:
    """Population-weighted proportion, its variance and interval (see the module docstring).

    A stratum with a single sampled entry has no within-stratum variance estimate; it contributes the
    Bernoulli maximum s_h^2 = 1/4 (conservative) instead of zero.
    """
    import numpy as np

    used = [s for s in strata if len(s.outcomes) > 0]
    if not used:
        return None
    big_n = sum(s.population for s in used)
    if big_n <= 0:
        return None
    estimate = 0.0
    variance = 0.0
    n_total = 0
    for s in used:
        y = np.asarray(s.outcomes, dtype=float)
        n_h = len(y)
        if s.population < n_h:
            raise ValueError(f"stratum {s.name!r}: population {s.population} < sample size {n_h}")
        w_h = s.population / big_n
        estimate += w_h * float(y.mean())
        s2 = float(np.var(y, ddof=1)) if n_h >= 2 else 0.25
        fpc = 1.0 - n_h / s.population
        variance += w_h * w_h * fpc * s2 / n_h
        n_total += n_h
    estimate = min(1.0, max(0.0, estimate))
    pq = estimate * (1.0 - estimate)
    n_eff = float(n_total) if variance <= 0 or pq <= 0 else min(float(n_total), pq / variance)
    interval = wilson_interval(estimate * n_eff, n_eff, confidence)
    assert interval is not None
    return StratifiedResult(
        estimate=estimate,
        variance=variance,
        standard_error=variance**0.5,
        effective_sample_size=n_eff,
        interval=interval,
    )
