"""The faults the answer-key server can plant (one announced item each), as a type.

Its own module so that a benchmark module can declare which faults target its items
(``BenchmarkMeta.default_faults``) without importing the answer key (``evalpipe.selftest``), which imports
the registry.
"""

from __future__ import annotations

from typing import Literal, get_args

Fault = Literal["duplicate_request", "truncate", "http_500_once", "index_error", "reasoning_budget"]
FAULTS: tuple[Fault, ...] = get_args(Fault)
