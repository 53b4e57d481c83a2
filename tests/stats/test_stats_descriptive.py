"""``evalpipe.stats.descriptive`` against numpy: the median against ``numpy.median``, the nearest-rank
percentile against ``numpy.percentile(method="inverted_cdf")`` (Hyndman & Fan definition 1), on random
samples of every size from 1 to 40."""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.stats.descriptive import length_summary, median, nearest_rank


def test_median_and_nearest_rank_match_numpy_on_random_samples() -> None:
    rng = np.random.default_rng(7)
    for n in range(1, 41):
        for _ in range(5):
            values = list(rng.integers(0, 2049, size=n).astype(float))
            assert median(values) == pytest.approx(float(np.median(values)))
            for p in (0.05, 0.5, 0.9, 0.95, 1.0):
                assert nearest_rank(values, p) == float(np.percentile(values, p * 100, method="inverted_cdf"))


def test_length_summary_fields_and_empty_sample() -> None:
    s = length_summary([20.0, 2048.0, 2048.0, 5.0])
    assert s is not None
    assert (s.n, s.median, s.p95, s.max) == (4, 1034.0, 2048.0, 2048.0)
    assert length_summary([]) is None
    with pytest.raises(ValueError, match="empty"):
        median([])
    with pytest.raises(ValueError, match="percentile"):
        nearest_rank([1.0], 0.0)
