"""Next-token distributions of two serving configurations side by side: the divergence of one step, and the
paired test that holds an A/B divergence against the A/A divergence of a relaunch on the same prompts.

Pure functions, numbers in and frozen results out (the numerics probe, ``evalpipe.numerics``, calls them).

**Divergence of one step** (:func:`topk_kl`).  A server returns the top-k log-probabilities of each step, keyed
by decoded token text.  ``KL(ref ‖ other)`` is taken over the tokens in *both* top-k lists plus one tail
bucket holding the rest of each distribution's mass (``1 − Σ p`` over the shared tokens, floored at 1e-12).
Merging outcomes into one bucket can only lower a KL divergence (the log-sum inequality), so this is a lower
bound of the full-vocabulary KL; two identical lists give exactly 0.  Entries with the same decoded text are
one bucket (their probabilities added).

**The paired test** (:func:`shift_test`).  Per prompt ``d_i = D_AB,i − D_AA,i``: how much more the arm under
test moved the control's distribution than a fresh launch of the control did.  The test is the one-sided
Wilcoxon signed-rank test (Wilcoxon 1945) of H0 "the d_i are symmetric about 0" against "shifted above 0",
zeros dropped (Wilcoxon's own convention, scipy's ``zero_method="wilcox"``), with the exact null
distribution of the statistic T+ (the sum of the ranks of the positive d_i) computed by counting subsets of
ranks (no normal approximation up to :data:`EXACT_UP_TO` non-zero differences, a continuity-corrected normal
one beyond).  The interval printed beside the verdict is that test's own inversion: the one-sided
Hodges–Lehmann bound (Hollander, Wolfe & Chicken, *Nonparametric Statistical Methods*, 3rd ed., §3.2), the
``(M − c + 1)``-th smallest of the ``M = n(n+1)/2`` Walsh averages ``(d_i + d_j)/2, i ≤ j``, where ``c`` is the
smallest value with ``P0(T+ ≥ c) ≤ α``.  T+(θ) counts the Walsh averages above θ, so "reject at 0" and "the
bound is above 0" are the same event: the verdict is read from the bound, and the p-value is the exact
``P0(T+ ≥ t)`` of the same statistic.  Ties among the non-zero |d_i| (rare for continuous divergences) are
ranked by order of appearance; the exact distribution then holds only approximately.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.stats import norm

__all__ = [
    "EXACT_UP_TO",
    "ShiftTest",
    "Spread",
    "merge_duplicates",
    "shift_test",
    "signed_rank_null",
    "spread",
    "topk_kl",
]

#: Tail mass floor of :func:`topk_kl`: a top-k list that holds (numerically) all the mass leaves this in the
#: tail bucket, so its log stays finite.
TAIL_FLOOR = 1e-12
#: Non-zero differences up to which :func:`shift_test` uses the exact null distribution (its table has
#: ``n(n+1)/2 + 1`` entries: 80,201 at 400).
EXACT_UP_TO = 400


def topk_kl(reference: Mapping[str, float], other: Mapping[str, float]) -> float:
    """``KL(reference ‖ other)`` in nats over the tokens both top-k lists name plus one tail bucket (a lower
    bound of the full KL; 0 for identical lists).  Each argument maps a decoded token to its log-probability
    (entries of one text already summed: :func:`merge_duplicates`)."""
    shared = sorted(set(reference) & set(other))
    p = np.array([math.exp(reference[t]) for t in shared], dtype=float)
    q = np.array([math.exp(other[t]) for t in shared], dtype=float)
    p = np.append(p, max(1.0 - float(p.sum()), TAIL_FLOOR))
    q = np.append(q, max(1.0 - float(q.sum()), TAIL_FLOOR))
    return max(0.0, float(np.sum(p * (np.log(p) - np.log(q)))))


def merge_duplicates(entries: Sequence[tuple[str, float]]) -> dict[str, float]:
    """``(token text, log-probability)`` pairs as one log-probability per text: two token ids that decode to
    the same text are one bucket of :func:`topk_kl` (their probabilities added)."""
    out: dict[str, float] = {}
    for token, logprob in entries:
        if token in out:
            hi, lo = max(out[token], logprob), min(out[token], logprob)
            out[token] = hi + math.log1p(math.exp(lo - hi))
        else:
            out[token] = logprob
    return out


@dataclass(frozen=True)
class Spread:
    """Median and 90th percentile of one statistic over prompts (numpy's linear interpolation)."""

    n: int
    median: float | None
    p90: float | None


def spread(values: Sequence[float]) -> Spread:
    """:class:`Spread` of the finite ``values`` (None for both when there are none)."""
    finite = np.array([v for v in values if math.isfinite(v)], dtype=float)
    if finite.size == 0:
        return Spread(0, None, None)
    return Spread(int(finite.size), float(np.median(finite)), float(np.percentile(finite, 90)))


def signed_rank_null(n: int) -> np.ndarray:
    """``P0(T+ = t)`` for ``t = 0 … n(n+1)/2``: each rank 1…n is positive with probability ½ independently
    (the exact null distribution of the signed-rank statistic without ties), by counting subsets."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=float)
    counts[0] = 1.0
    for rank in range(1, n + 1):
        # each rank in or out of the positive set: halve as we go so the table stays in float range
        shifted = np.zeros_like(counts)
        shifted[rank:] = counts[:-rank]
        counts = 0.5 * (counts + shifted)
    return counts


Verdict = Literal["above the A/A floor", "within the A/A floor", "not enough prompts"]


@dataclass(frozen=True)
class ShiftTest:
    """The one-sided signed-rank test of ``d = A/B − A/A`` per prompt and the interval that decides it.

    ``lower``: the one-sided ``1 − alpha`` Hodges–Lehmann lower bound of the shift (None when no bound below
    +∞ exists at this ``alpha``: too few non-zero differences); ``estimate``: the Hodges–Lehmann estimate
    (the median of the Walsh averages); ``above``: the verdict, ``lower > 0``; ``p_value``: the exact
    ``P0(T+ ≥ statistic)``.  ``n`` counts every pair, ``nonzero`` those the test ranks."""

    n: int
    nonzero: int
    positive: int
    statistic: float
    p_value: float
    alpha: float
    estimate: float | None
    lower: float | None
    method: Literal["exact", "normal"]

    @property
    def above(self) -> bool:
        return self.lower is not None and self.lower > 0

    @property
    def verdict(self) -> Verdict:
        if self.lower is None:
            return "not enough prompts"
        return "above the A/A floor" if self.above else "within the A/A floor"


def _critical(n: int, alpha: float) -> tuple[int | None, Literal["exact", "normal"]]:
    """The smallest ``c`` with ``P0(T+ ≥ c) ≤ alpha`` (None when even ``T+ = M`` is not that rare)."""
    top = n * (n + 1) // 2
    if n <= EXACT_UP_TO:
        upper_tail = np.cumsum(signed_rank_null(n)[::-1])[::-1]  # P0(T+ >= t)
        ok = np.nonzero(upper_tail <= alpha + 1e-15)[0]
        return (int(ok[0]) if ok.size else None), "exact"
    mean, sd = top / 2.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    c = math.ceil(mean + float(norm.ppf(1.0 - alpha)) * sd + 0.5)
    return (c if c <= top else None), "normal"


def _p_value(n: int, statistic: int, method: Literal["exact", "normal"]) -> float:
    if n == 0:
        return 1.0
    if method == "exact":
        return float(min(1.0, signed_rank_null(n)[statistic:].sum()))
    top = n * (n + 1) // 2
    mean, sd = top / 2.0, math.sqrt(n * (n + 1) * (2 * n + 1) / 24.0)
    return float(norm.sf((statistic - 0.5 - mean) / sd))


def shift_test(differences: Sequence[float], alpha: float = 0.05) -> ShiftTest:
    """The one-sided Wilcoxon signed-rank test of ``differences`` (A/B − A/A per prompt) above 0, zeros
    dropped, and its Hodges–Lehmann inversion at ``1 − alpha`` (module docstring).  Non-finite values (a
    prompt one arm could not answer) are left out before anything is counted."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), not {alpha}")
    d_all = np.array([v for v in differences if math.isfinite(v)], dtype=float)
    d = d_all[d_all != 0.0]
    n = int(d.size)
    if n == 0:
        return ShiftTest(int(d_all.size), 0, 0, 0.0, 1.0, alpha, None, None, "exact")
    order = np.argsort(np.abs(d), kind="stable")
    ranks = np.empty(n, dtype=float)
    ranks[order] = np.arange(1, n + 1, dtype=float)
    statistic = round(float(ranks[d > 0].sum()))
    i, j = np.triu_indices(n)
    walsh = np.sort((d[i] + d[j]) / 2.0)
    critical, method = _critical(n, alpha)
    lower = float(walsh[walsh.size - critical]) if critical is not None and critical >= 1 else None
    return ShiftTest(
        n=int(d_all.size),
        nonzero=n,
        positive=int((d > 0).sum()),
        statistic=float(statistic),
        p_value=_p_value(n, statistic, method),
        alpha=alpha,
        estimate=float(np.median(walsh)),
        lower=lower,
        method=method,
    )
