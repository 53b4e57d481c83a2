"""The cost of a paired design: Cochran's optimal number of attempts per sample, and expected tokens.

**Two-stage sampling.**  A sample (the primary unit) asked k times (the secondary units) has per-sample
difference variance ``ω² + τ²/k`` (``evalpipe.stats.power``: ``between`` = ω², ``within`` = τ² per attempt,
Miller 2024 §3.1), so n samples give ``Var(d̄) = (ω² + τ²/k)/n``.  With a cost of ``c0`` per new sample besides
its attempts and ``c1`` per attempt, a budget ``C = n (c0 + c1 k)``, the product ``Var · C = (ω² + τ²/k)(c0 +
c1 k)`` is minimised at

    k* = sqrt( (c0 / c1) · (τ² / ω²) )

(Cochran, *Sampling Techniques*, 3rd ed., Wiley 1977, §10.6, the optimum number of second-stage units
``m_opt = (S_2 / S_u) sqrt(c_1 / c_2)`` in his notation).  ``k*`` is not an integer: ``optimal_repeats``
returns the integer k in ``[1, max_repeats]`` with the smallest ``Var · C`` (the function is convex in k, so
it is ``floor(k*)`` or ``ceil(k*)``, clipped).  With ``ω² = 0`` every attempt is as good as a new sample
(``k* = ∞``); with ``τ² = 0`` or ``c0 = 0`` repeats buy nothing (``k* = 0``, so k = 1).

**Tokens.**  ``expected_tokens`` is plain arithmetic: samples × attempts × arms × tokens per attempt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RepeatsChoice:
    """Cochran's continuous optimum and the integer number of attempts chosen from it."""

    k_star: float
    repeats: int
    sample_cost: float
    attempt_cost: float


def variance_cost_product(
    repeats: int, between: float, within: float, sample_cost: float, attempt_cost: float
) -> float:
    """``(ω² + τ²/k)(c0 + c1 k)``: variance per sample times cost per sample (Cochran 1977 §10.6)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    return (between + within / repeats) * (sample_cost + attempt_cost * repeats)


def optimal_repeats(
    between: float, within: float, sample_cost: float, attempt_cost: float, max_repeats: int = 16
) -> RepeatsChoice:
    """``k* = sqrt((c0/c1)(τ²/ω²))`` (Cochran 1977 §10.6; module docstring) and the integer k in
    ``[1, max_repeats]`` minimising ``variance_cost_product``."""
    if between < 0 or within < 0 or sample_cost < 0 or attempt_cost <= 0 or max_repeats < 1:
        raise ValueError(
            f"need between, within, sample_cost >= 0, attempt_cost > 0, max_repeats >= 1 (got {between}, "
            f"{within}, {sample_cost}, {attempt_cost}, {max_repeats})"
        )
    if within == 0.0 or sample_cost == 0.0:
        k_star = 0.0
    elif between == 0.0:
        k_star = math.inf
    else:
        k_star = math.sqrt((sample_cost / attempt_cost) * (within / between))
    if math.isinf(k_star):
        repeats = max_repeats
    else:
        candidates = {
            min(max_repeats, max(1, math.floor(k_star))),
            min(max_repeats, max(1, math.ceil(k_star))),
        }
        repeats = min(
            sorted(candidates),
            key=lambda k: variance_cost_product(k, between, within, sample_cost, attempt_cost),
        )
    return RepeatsChoice(k_star=k_star, repeats=repeats, sample_cost=sample_cost, attempt_cost=attempt_cost)


def expected_tokens(samples: int, repeats: int, arms: int, tokens_per_attempt: float) -> float:
    """Tokens of a design: ``samples × repeats × arms × tokens_per_attempt`` (output tokens, or the prompt
    tokens every attempt sends)."""
    return float(samples * repeats * arms) * tokens_per_attempt


def gpu_hours(tokens: float, output_tokens_per_gpu_s: float) -> float:
    """GPU-hours a design's output tokens take at a measured decode rate: ``tokens / (rate per GPU) / 3600``
    (its prompt tokens likewise at a prefill rate).

    The rate is a serving benchmark's (``speed.json``: output tokens per second of the whole server over its
    GPUs), so this is the time the server is busy decoding at that benchmark's concurrency — an estimate
    whose error is the gap between that workload and the evaluation's (answer lengths, batch)."""
    if output_tokens_per_gpu_s <= 0:
        raise ValueError(f"the output rate must be > 0, got {output_tokens_per_gpu_s}")
    return tokens / output_tokens_per_gpu_s / 3600.0
