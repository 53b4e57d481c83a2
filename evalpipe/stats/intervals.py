"""Interval estimates of one run's score: Wilson, stratified, clustered.

* Simple proportions use the Wilson score interval (Wilson 1927, "Probable inference, the law of
  succession, and statistical inference", *JASA* 22; ``statsmodels`` ``proportion_confint``'s formula, its
  float operations in their order, with ``z`` looked up once per level — the same floats without its
  per-call overhead):
  it keeps its coverage near 0 and 1 and at the small n of a sampled sign-off, where the Wald interval
  fails (Brown, Cai & DasGupta 2001, "Interval estimation for a binomial proportion", *Stat. Sci.* 16).
* A stratified sample whose strata were not sampled proportionally (LiveCodeBench 6 per difficulty)
  gives an equal-difficulty score, not a population score.  The population-weighted estimate is
  ``p = sum_h W_h p_h`` (W_h = N_h / N) with the textbook stratified variance
  ``Var = sum_h W_h^2 (1 - n_h/N_h) s_h^2 / n_h`` (Cochran, *Sampling Techniques*, 5.6; neither scipy
  nor statsmodels ships a survey-design estimator, so the sum is written out; the per-stratum
  variances come from numpy).  Its interval is the Wilson interval at the effective sample size
  ``n_eff = p(1-p)/Var`` (Korn & Graubard 1998), with ``n_eff`` capped at ``n`` — the rule of the NCHS
  presentation standards for survey proportions — so that strata that happen to be all-correct or
  all-wrong (``Var = 0`` at n_h = 6) never yield a zero-width interval.  Coverage of the population
  proportion by simulation over finite populations (``tests/stats/test_stats_intervals.py``): 0.94–0.96 for equal
  allocation over unequal strata at 20–30 per stratum; conservative (0.98) at 6 per stratum, where the cap binds.
* A run whose samples were asked k times: the sample is the cluster, not the attempt (the attempts share
  the prompt, so they are not k independent trials).  Following Miller, "Adding Error Bars to Evals: A
  Statistical Approach to Language Model Evaluations" (arXiv 2411.00640, 2024), §3.1 (resampling) and
  Appendix A (clustered standard errors), the score is the mean over samples of the per-sample means
  ``x̄_i`` (each of ``k_i`` attempts; ``k_i`` may differ when an attempt failed and was dropped), and its
  standard error is that of a mean of n independent clusters::

      estimate = (1/n) Σ_i x̄_i          SE = sqrt( Σ_i (x̄_i − estimate)² / (n (n − 1)) )

  With equal ``k`` this is exactly inspect_ai's clustered ``stderr(cluster=...)`` (Miller's Appendix A
  with the finite-cluster factor C/(C−1)); with unequal ``k`` it is the standard error of the
  equal-weight mean of cluster means, which is the score reported.

  The 95 % interval is the Wilson score interval at the effective sample size ``n_eff = p̂(1 − p̂) / SE²``
  (Kish, *Survey Sampling*, 1965, design effect; Korn & Graubard 1998 — the same device as the stratified
  proportion above), kept within ``[n, Σ k_i]``.  For per-sample means in [0, 1] the spread of the
  ``x̄_i`` never exceeds p̂(1 − p̂) (up to the n/(n − 1) of the unbiased variance, hence the floor at n), so
  repeats can only narrow the interval, by at most what the within-sample noise allows, and never beyond
  the number of attempts.  With one attempt per sample (or answers that never vary within a sample)
  ``n_eff = n`` exactly and the interval is the plain Wilson interval the summary already reports.  When
  every sample has the same mean (SE = 0), ``n_eff = n`` if that mean is 0 or 1 (nothing was learnt about
  variation: stay with the clusters) and ``Σ k_i`` otherwise (all variation is within samples: the
  attempts are the trials).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

Z_CONFIDENCE = 0.95

STRATIFIED_METHOD = (
    "stratified estimator sum_h W_h p_h (W_h = N_h/N); Var = sum_h W_h^2 (1-n_h/N_h) s_h^2/n_h; "
    "Wilson interval at n_eff = p(1-p)/Var capped at n"
)


def wilson_interval(correct: float, n: float, confidence: float = Z_CONFIDENCE) -> tuple[float, float] | None:
    """Wilson (1927) score interval for ``correct`` successes in ``n`` trials; None when ``n`` is 0."""
    if n <= 0:
        return None
    if correct < 0 or correct > n:
        raise ValueError(f"correct={correct} outside [0, n={n}]")
    crit = two_sided_z(confidence)
    crit2 = crit**2
    q = correct / n
    denom = 1 + crit2 / n
    center = (q + crit2 / (2 * n)) / denom
    dist = crit * math.sqrt(q * (1.0 - q) / n + crit2 / (4.0 * n**2))
    dist /= denom
    return min(1.0, max(0.0, float(center - dist))), min(1.0, max(0.0, float(center + dist)))


@lru_cache(maxsize=64)
def two_sided_z(confidence: float) -> float:
    """``z`` of a two-sided interval at ``confidence`` (1.96 at 0.95): ``norm.isf((1 − confidence) / 2)``,
    remembered per confidence — scipy's call costs ~0.2 ms, most of an interval's time, and callers judging
    many intervals (coverage simulations, compare's per-unit intervals) ask for one level."""
    # import cost: scipy, only on this path
    from scipy.stats import norm

    return float(norm.isf((1.0 - confidence) / 2.0))


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
    """Population-weighted proportion, its variance and interval (Cochran 5.6, Korn & Graubard 1998:
    module docstring).

    A stratum with a single sampled entry has no within-stratum variance estimate; it contributes the
    Bernoulli maximum s_h^2 = 1/4 (conservative) instead of zero.
    """
    # import cost: numpy, only on this path
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


@dataclass(frozen=True)
class ClusteredMean:
    """The score of one run with repeats (see the module docstring for every formula)."""

    n_samples: int
    n_attempts: int
    estimate: float
    standard_error: float
    effective_sample_size: float
    interval: tuple[float, float]


def clustered_mean(samples: Sequence[Sequence[float]], confidence: float = Z_CONFIDENCE) -> ClusteredMean:
    """Mean of per-sample means, its clustered standard error (Miller 2024, Appendix A) and Wilson interval
    at Kish's n_eff (module docstring).

    A single sample has no between-sample variance estimate; its standard error is the Bernoulli
    maximum ``sqrt(1/4)`` (the conservative rule ``stratified_proportion`` uses for one-entry strata).
    """
    # import cost: numpy (also through stats.repeats), only for clustered samples
    import numpy as np

    from evalpipe.stats.repeats import per_sample_means

    means = per_sample_means(samples)
    n = len(means)
    if n == 0:
        raise ValueError("no samples")
    attempts = sum(len(a) for a in samples)
    estimate = float(means.mean())
    if n >= 2:
        standard_error = float(np.std(means, ddof=1)) / n**0.5
    else:
        standard_error = 0.5
    bernoulli = estimate * (1.0 - estimate)
    if n >= 2 and standard_error > 0.0:
        n_eff = min(float(attempts), bernoulli / standard_error**2)
    elif 0.0 < estimate < 1.0 and n >= 2:
        n_eff = float(attempts)
    else:
        n_eff = float(n)
    n_eff = max(n_eff, float(n))
    interval = wilson_interval(estimate * n_eff, n_eff, confidence)
    assert interval is not None  # n_eff >= n >= 1
    return ClusteredMean(
        n_samples=n,
        n_attempts=attempts,
        estimate=estimate,
        standard_error=standard_error,
        effective_sample_size=n_eff,
        interval=interval,
    )
