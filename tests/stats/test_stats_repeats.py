"""evalpipe.stats.repeats: per-sample means of repeated attempts and the measured nondeterminism."""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.stats.repeats import Attempt, nondeterminism, per_sample_means


def test_per_sample_means_weight_every_sample_once() -> None:
    """x̄_i = mean of sample i's attempts, whatever k_i (numpy's row means written out)."""
    means = per_sample_means([[1.0, 1.0, 1.0, 0.0], [0.0], [1.0, 0.0]])
    assert means.tolist() == [0.75, 0.0, 0.5]
    square = [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    assert per_sample_means(square) == pytest.approx(np.mean(square, axis=1))
    assert per_sample_means([]).size == 0


@pytest.mark.parametrize("bad", [[[]], [[1.5]], [[-0.1, 1.0]], [[float("nan")]]])
def test_refuses_samples_without_attempts_or_out_of_range(bad: list[list[float]]) -> None:
    with pytest.raises(ValueError):
        per_sample_means(bad)


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
