"""Scores from repeated attempts: the sample is the cluster, not the attempt.

A sample asked k times gives k answers that share the prompt, so they are not k independent trials.
Following Miller, "Adding Error Bars to Evals: A Statistical Approach to Language Model Evaluations"
(arXiv 2411.00640, 2024), §3.1 (resampling) and Appendix A (clustered standard errors), the score is
the mean over samples of the per-sample means ``x̄_i`` (each of ``k_i`` attempts; ``k_i`` may differ
when an attempt failed and was dropped), and its standard error is that of a mean of n independent
clusters::

    estimate = (1/n) Σ_i x̄_i          SE = sqrt( Σ_i (x̄_i − estimate)² / (n (n − 1)) )

With equal ``k`` this is exactly inspect_ai's clustered ``stderr(cluster=...)`` (Miller's Appendix A
with the finite-cluster factor C/(C−1)); with unequal ``k`` it is the standard error of the
equal-weight mean of cluster means, which is the score this module reports.

The 95 % interval is the Wilson score interval (the rest of evalpipe's single-run intervals, see
``evalpipe.stats``) at the effective sample size ``n_eff = p̂(1 − p̂) / SE²`` (Kish, *Survey Sampling*,
1965, design effect; Korn & Graubard 1998 — the same device as ``evalpipe.stats.stratified_proportion``),
kept within ``[n, Σ k_i]``.  For per-sample means in [0, 1] the spread of the ``x̄_i`` never exceeds
p̂(1 − p̂) (up to the n/(n − 1) of the unbiased variance, hence the floor at n), so repeats can only
narrow the interval, by at most what the within-sample noise allows, and never beyond the number of
attempts.  With one attempt per sample (or answers that never vary within a sample) ``n_eff = n``
exactly and the interval is the plain Wilson interval the summary already reports.  When every sample
has the same mean (SE = 0), ``n_eff = n`` if that mean is 0 or 1 (nothing was learnt about variation:
stay with the clusters) and ``Σ k_i`` otherwise (all variation is within samples: the attempts are
the trials).

Nondeterminism is measured, not modelled: the share of samples (with at least two attempts) whose
answers were not all identical, by response hash, and separately whose scores were not all equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from evalpipe.stats import wilson_interval

Z_CONFIDENCE = 0.95


@dataclass(frozen=True)
class ClusteredMean:
    """The score of one run with repeats (see the module docstring for every formula)."""

    n_samples: int
    n_attempts: int
    estimate: float
    standard_error: float
    effective_sample_size: float
    interval: tuple[float, float]


@dataclass(frozen=True)
class Attempt:
    """One answer to one sample: its score as the summary counts it, and the hash of the response text."""

    score: float
    response_sha256: str | None = None


@dataclass(frozen=True)
class Nondeterminism:
    """How often k answers to one prompt were not identical (the server's own noise, measured)."""

    samples_with_repeats: int
    responses_compared: int
    responses_differed: int
    scores_differed: int

    @property
    def response_share(self) -> float | None:
        """Share of compared samples whose responses were not all byte-identical."""
        return self.responses_differed / self.responses_compared if self.responses_compared else None

    @property
    def score_share(self) -> float | None:
        """Share of samples with repeats whose scores were not all equal (a flip within the sample)."""
        return self.scores_differed / self.samples_with_repeats if self.samples_with_repeats else None


def per_sample_means(samples: Sequence[Sequence[float]]) -> NDArray[np.float64]:
    """``x̄_i`` for every sample; refuses a sample without attempts or a score outside [0, 1].

    A sample whose every attempt failed has no answer: the caller decides how it counts (the audit's
    rule counts it wrong, i.e. passes ``[0.0]``), this module never guesses.
    """
    if not samples:
        return np.empty(0, dtype=np.float64)
    lengths = [len(a) for a in samples]
    if min(lengths) == 0:
        raise ValueError(f"sample {lengths.index(0)} has no attempts")
    if min(lengths) == max(lengths):  # the usual case: one k for every sample, one array
        values = np.asarray(samples, dtype=np.float64).reshape(len(samples), lengths[0])
        _check_scores(values)
        means: NDArray[np.float64] = values.mean(axis=1)
        return means
    means = np.empty(len(samples), dtype=np.float64)
    for i, attempts in enumerate(samples):
        row = np.asarray(attempts, dtype=np.float64)
        _check_scores(row)
        means[i] = float(row.mean())
    return means


def _check_scores(values: NDArray[np.float64]) -> None:
    bad = (values < 0.0) | (values > 1.0) | np.isnan(values)
    if np.any(bad):
        raise ValueError(f"scores must lie in [0, 1], got {values[bad][:5].tolist()}")


def clustered_mean(samples: Sequence[Sequence[float]], confidence: float = Z_CONFIDENCE) -> ClusteredMean:
    """Mean of per-sample means, its clustered standard error and Wilson interval at Kish's n_eff.

    A single sample has no between-sample variance estimate; its standard error is the Bernoulli
    maximum ``sqrt(1/4)`` (the conservative rule ``evalpipe.stats`` uses for one-entry strata).
    """
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


def nondeterminism(samples: Sequence[Sequence[Attempt]]) -> Nondeterminism:
    """Count samples whose repeated answers differ: by response hash, and by score.

    Only samples with at least two attempts can show a difference and form the denominators.  A sample
    whose attempts lack a response hash is left out of the response comparison (it cannot be compared)
    but still counts for the score comparison.
    """
    with_repeats = compared = responses_differed = scores_differed = 0
    for attempts in samples:
        if len(attempts) < 2:
            continue
        with_repeats += 1
        if len({a.score for a in attempts}) > 1:
            scores_differed += 1
        hashes = [a.response_sha256 for a in attempts]
        if any(h is None for h in hashes):
            continue
        compared += 1
        if len(set(hashes)) > 1:
            responses_differed += 1
    return Nondeterminism(
        samples_with_repeats=with_repeats,
        responses_compared=compared,
        responses_differed=responses_differed,
        scores_differed=scores_differed,
    )
