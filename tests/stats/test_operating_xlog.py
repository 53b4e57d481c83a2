"""The gate's trinomial takes ``count · log p`` once per probability (``operating._xlog``): it must be
``scipy.special.xlogy`` exactly, the zero count at p = 0 included, or every calibrated critical value moves."""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from evalpipe.stats.operating import _xlog


def test_xlog_is_xlogy_bit_for_bit() -> None:
    counts = np.arange(0, 400, dtype=np.float64)
    for p in (0.0, 1e-12, 0.0005, 0.05, 0.3333, 0.5, 0.97, 1.0):
        got, want = _xlog(counts, p), xlogy(counts, p)
        assert np.array_equal(got, want, equal_nan=True), p
