"""evalpipe.power.repeats: the score of a run with repeats, the sample as the cluster."""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.power.repeats import Attempt, clustered_mean, nondeterminism
from evalpipe.stats import wilson_interval


def test_one_attempt_per_sample_is_the_plain_wilson_interval() -> None:
    result = clustered_mean([[1.0]] * 48 + [[0.0]] * 2)
    assert result.estimate == pytest.approx(0.96)
    assert result.effective_sample_size == 50
    assert result.interval == pytest.approx(wilson_interval(48, 50))
    assert result.standard_error == pytest.approx(np.std([1.0] * 48 + [0.0] * 2, ddof=1) / 50**0.5)


def test_standard_error_is_inspect_ais_clustered_stderr_when_k_is_constant() -> None:
    """inspect_ai ``stderr(cluster=...)``: sqrt(C/(C-1) · Σ_c (Σ_i (s_ic − mean))²) / N, written out here."""
    rng = np.random.default_rng(7)
    scores = rng.binomial(1, rng.uniform(0, 1, size=(40, 1)), size=(40, 3)).astype(float)
    mean = scores.mean()
    clusters = len(scores)
    inspect = (clusters / (clusters - 1) * np.sum((scores - mean).sum(axis=1) ** 2)) ** 0.5 / scores.size
    assert clustered_mean(scores.tolist()).standard_error == pytest.approx(inspect, rel=1e-12)


def test_unequal_attempt_counts_weight_samples_equally() -> None:
    """A sample that lost three of its four attempts still counts as one sample (attempt-weighted: 0.8)."""
    result = clustered_mean([[1.0, 1.0, 1.0, 1.0], [0.0]])
    assert result.estimate == 0.5
    assert result.n_attempts == 5


def test_repeats_narrow_the_interval_only_through_within_sample_noise() -> None:
    deterministic = clustered_mean([[1.0] * 4] * 45 + [[0.0] * 4] * 15)
    single = clustered_mean([[1.0]] * 45 + [[0.0]] * 15)
    assert deterministic.effective_sample_size == 60  # identical answers: 4 attempts add nothing
    assert deterministic.interval == pytest.approx(single.interval)
    noisy = clustered_mean([[1.0, 0.0, 1.0, 0.0]] * 30 + [[1.0] * 4] * 30)
    assert 60 < noisy.effective_sample_size <= 240
    assert noisy.interval[1] - noisy.interval[0] < single.interval[1] - single.interval[0]


def test_all_variation_within_samples_uses_the_attempts() -> None:
    result = clustered_mean([[1.0, 0.0]] * 20)
    assert result.estimate == 0.5
    assert result.effective_sample_size == 40


@pytest.mark.parametrize("bad", [[[]], [[1.5]], [[-0.1, 1.0]], [[float("nan")]]])
def test_refuses_samples_without_attempts_or_out_of_range(bad: list[list[float]]) -> None:
    with pytest.raises(ValueError):
        clustered_mean(bad)


@pytest.mark.parametrize(("n", "k"), [(60, 4), (40, 1)])
def test_interval_coverage_by_simulation(n: int, k: int) -> None:
    """Per-sample probabilities from a skewed mixture (most samples easy, some hard, some coin flips):
    the 95 % interval covers the super-population mean E[q] in 93-97 % of 3000 simulated runs."""
    rng = np.random.default_rng(20261218)
    q_values, q_weights = np.array([1.0, 0.9, 0.5, 0.1, 0.0]), np.array([0.45, 0.2, 0.15, 0.1, 0.1])
    truth = float(q_values @ q_weights)
    trials = 3000
    q = rng.choice(q_values, p=q_weights, size=(trials, n))
    correct = rng.binomial(k, q)
    covered = 0
    for row in correct:
        attempts = (np.arange(k) < row[:, None]).astype(float)  # row i: c_i ones, then zeros
        low, high = clustered_mean(attempts.tolist()).interval
        covered += low <= truth <= high
    assert 0.93 <= covered / trials <= 0.97, covered / trials


def test_nondeterminism_counts_response_and_score_differences() -> None:
    same = [Attempt(1.0, "a"), Attempt(1.0, "a"), Attempt(1.0, "a")]
    reworded = [Attempt(1.0, "a"), Attempt(1.0, "b")]
    flipped = [Attempt(1.0, "a"), Attempt(0.0, "c")]
    unhashed = [Attempt(0.0, None), Attempt(1.0, "d")]
    single = [Attempt(1.0, "e")]
    result = nondeterminism([same, reworded, flipped, unhashed, single])
    assert result.samples_with_repeats == 4  # the single-attempt sample cannot differ
    assert result.responses_compared == 3  # a missing hash cannot be compared
    assert result.responses_differed == 2
    assert result.scores_differed == 2
    assert result.response_share == pytest.approx(2 / 3)
    assert result.score_share == pytest.approx(2 / 4)
    assert nondeterminism([single]).score_share is None
