"""evalpipe.stats.design: Cochran's optimal attempts per sample (Sampling Techniques 1977, §10.6) and tokens."""

from __future__ import annotations

import math

import pytest

from evalpipe.stats.design import expected_tokens, optimal_repeats, variance_cost_product


def test_cochran_by_hand() -> None:
    """ω² = 0.01, τ² = 0.04, c0 = c1: k* = sqrt(1 · 4) = 2; with c0 = 4 c1: k* = sqrt(4 · 4) = 4."""
    assert optimal_repeats(0.01, 0.04, 1.0, 1.0).k_star == pytest.approx(2.0)
    assert optimal_repeats(0.01, 0.04, 1.0, 1.0).repeats == 2
    assert optimal_repeats(0.01, 0.04, 4.0, 1.0).k_star == pytest.approx(4.0)
    # the product at k* is (ω² + τ²/k*)(c0 + c1 k*) = (0.01 + 0.02)(1 + 2) = 0.09
    assert variance_cost_product(2, 0.01, 0.04, 1.0, 1.0) == pytest.approx(0.09)


@pytest.mark.parametrize(
    ("between", "within", "c0", "c1"),
    [(0.01, 0.04, 1.0, 1.0), (0.02, 0.2, 300.0, 16000.0), (0.003, 0.3, 2.0, 1.0), (0.05, 0.01, 5.0, 1.0)],
)
def test_integer_choice_is_the_brute_force_minimum(
    between: float, within: float, c0: float, c1: float
) -> None:
    choice = optimal_repeats(between, within, c0, c1, max_repeats=16)
    best = min(range(1, 17), key=lambda k: variance_cost_product(k, between, within, c0, c1))
    assert choice.repeats == best
    assert choice.k_star == pytest.approx(math.sqrt((c0 / c1) * (within / between)))


def test_edges() -> None:
    assert (
        optimal_repeats(0.0, 0.1, 1.0, 1.0, max_repeats=8).repeats == 8
    )  # all noise within: repeats = samples
    assert math.isinf(optimal_repeats(0.0, 0.1, 1.0, 1.0).k_star)
    assert optimal_repeats(0.1, 0.0, 1.0, 1.0).repeats == 1  # no within-sample noise: repeats buy nothing
    assert optimal_repeats(0.1, 0.2, 0.0, 1.0).repeats == 1  # a new sample costs nothing beyond its attempts
    with pytest.raises(ValueError):
        optimal_repeats(0.1, 0.1, 1.0, 0.0)
    assert expected_tokens(90, 1, 3, 16000.0) == 4_320_000.0
