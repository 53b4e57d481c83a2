"""Interval estimates against known values."""

from __future__ import annotations

import pytest

from evalpipe.stats import StratumData, stratified_proportion, wilson_interval


@pytest.mark.parametrize(
    ("k", "n", "lo", "hi"),
    [
        (8, 10, 0.4902, 0.9433),  # the textbook example
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (45, 50, 0.7864, 0.9565),
    ],
)
def test_wilson_known_values(k: int, n: int, lo: float, hi: float) -> None:
    ci = wilson_interval(k, n)
    assert ci is not None
    assert ci[0] == pytest.approx(lo, abs=5e-5)
    assert ci[1] == pytest.approx(hi, abs=5e-5)


def test_wilson_empty_and_invalid() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_stratified_hand_computed() -> None:
    # N = (100, 300), n = (10, 10), k = (5, 2)
    res = stratified_proportion(
        [
            StratumData("a", 100, [1.0] * 5 + [0.0] * 5),
            StratumData("b", 300, [1.0] * 2 + [0.0] * 8),
        ]
    )
    assert res is not None
    w1, w2 = 0.25, 0.75
    p = w1 * 0.5 + w2 * 0.2
    s1 = 10 / 9 * 0.25  # sample variance (ddof=1) of five 1s and five 0s
    s2 = 10 / 9 * 0.16
    var = w1**2 * (1 - 10 / 100) * s1 / 10 + w2**2 * (1 - 10 / 300) * s2 / 10
    assert res.estimate == pytest.approx(p)
    assert res.variance == pytest.approx(var)
    assert res.standard_error == pytest.approx(var**0.5)
    n_eff = min(20, p * (1 - p) / var)
    assert res.effective_sample_size == pytest.approx(n_eff)
    expected = wilson_interval(p * n_eff, n_eff)
    assert expected is not None
    assert res.interval == pytest.approx(expected)
    assert res.interval[0] < p < res.interval[1]


def test_stratified_live_code_bench_like_equal_allocation() -> None:
    # 2 per difficulty, N = 100/200/50: easy 2/2, medium 1/2, hard 0/2 → p = 200/350
    res = stratified_proportion(
        [
            StratumData("easy", 100, [1.0, 1.0]),
            StratumData("medium", 200, [1.0, 0.0]),
            StratumData("hard", 50, [0.0, 0.0]),
        ]
    )
    assert res is not None
    assert res.estimate == pytest.approx(4 / 7)
    assert res.variance == pytest.approx((4 / 7) ** 2 * (1 - 2 / 200) * 0.5 / 2)
    assert res.effective_sample_size == pytest.approx((4 / 7) * (3 / 7) / res.variance)
    assert res.effective_sample_size < 6


def test_stratified_zero_variance_caps_effective_n() -> None:
    # all-correct and all-wrong strata: Var = 0, n_eff falls back to n (never a zero-width interval)
    res = stratified_proportion([StratumData("a", 10, [1.0] * 3), StratumData("b", 30, [0.0] * 3)])
    assert res is not None
    assert res.estimate == pytest.approx(0.25)
    assert res.variance == 0
    assert res.effective_sample_size == 6
    assert res.interval[1] - res.interval[0] > 0.3


def test_stratified_single_entry_stratum_is_conservative() -> None:
    res = stratified_proportion([StratumData("a", 50, [1.0]), StratumData("b", 50, [1.0, 0.0, 1.0])])
    assert res is not None
    # stratum a contributes s^2 = 1/4, not 0
    assert res.variance == pytest.approx(0.25 * (1 - 1 / 50) * 0.25 + 0.25 * (1 - 3 / 50) * (1 / 3) / 3)


def test_stratified_proportional_allocation_matches_simple_mean() -> None:
    res = stratified_proportion(
        [StratumData("a", 100, [1.0, 0.0]), StratumData("b", 200, [1.0, 1.0, 0.0, 0.0])]
    )
    assert res is not None
    assert res.estimate == pytest.approx(3 / 6)


def test_stratified_rejects_sample_larger_than_population() -> None:
    with pytest.raises(ValueError):
        stratified_proportion([StratumData("a", 1, [1.0, 0.0])])
    assert stratified_proportion([]) is None
