"""Repeated attempts: per-sample means, and the measured nondeterminism of the server.

A sample asked k times gives k answers that share the prompt; the sample is the cluster (Miller, "Adding
Error Bars to Evals", arXiv 2411.00640, 2024, §3.1): ``x̄_i = (1/k_i) Σ_j x_ij`` is the unit every
paired and clustered statistic (``evalpipe.stats.paired``, ``evalpipe.stats.intervals.clustered_mean``)
works on.

Nondeterminism is measured, not modelled: the share of samples (with at least two attempts) whose
answers were not all identical, by response hash, and separately whose scores were not all equal
(counts over samples; no formula beyond the share).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


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
    """``x̄_i`` for every sample (Miller 2024 §3.1: the cluster mean); refuses a sample without attempts or a
    score outside [0, 1].

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
