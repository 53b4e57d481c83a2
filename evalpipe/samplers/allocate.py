"""Allocation of a sample size over strata.

Proportional allocation uses the largest-remainder (Hamilton) method: each stratum gets
``floor(n * N_h / N)``; the remaining units go to the largest fractional parts, ties broken by stratum
name ascending.  Fractions are compared exactly (integer arithmetic), so no float rounding can change
the result on another platform.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from evalpipe.errors import ConfigError


def stratum_sort_key(name: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order: ``"2" < "10"``, ``"easy" < "hard"``; used for every stratum ordering."""
    return tuple((0, int(tok), "") if tok.isdigit() else (1, 0, tok) for tok in re.findall(r"\d+|\D+", name))


def largest_remainder(total: int, populations: Mapping[str, int]) -> dict[str, int]:
    """Allocate ``total`` units proportionally to ``populations`` (largest remainder, ties by name)."""
    n_pop = sum(populations.values())
    if total < 0:
        raise ValueError("total must be >= 0")
    if n_pop == 0:
        if total:
            raise ConfigError("cannot allocate a positive sample over empty strata")
        return dict.fromkeys(populations, 0)
    alloc = {}
    remainders = []
    for name, n_h in populations.items():
        q, r = divmod(total * n_h, n_pop)
        alloc[name] = q
        remainders.append((-r, stratum_sort_key(name), name))
    left = total - sum(alloc.values())
    for _, _, name in sorted(remainders)[:left]:
        alloc[name] += 1
    return alloc
