"""evalpipe.stats.noninferiority: the three-way verdict against a margin (ICH E9 §3.3.2, Piaggio et al. 2012)."""

from __future__ import annotations

import pytest

from evalpipe.stats.noninferiority import non_inferiority
from evalpipe.stats.paired import paired_difference


@pytest.mark.parametrize(
    ("interval_pts", "margin", "verdict"),
    [
        ((-1.9, 3.0), 2.0, "non-inferior"),
        ((-2.0, 3.0), 2.0, "inconclusive"),  # the bound must clear the margin, not touch it
        ((-2.1, 3.0), 2.0, "inconclusive"),
        ((-9.1, -0.5), 2.0, "inconclusive"),  # a drop, but it cannot be said to exceed 2 pts
        ((-9.1, -2.0), 2.0, "inconclusive"),  # upper bound at the margin: not beyond it
        ((-9.1, -2.1), 2.0, "inferior"),
        ((-1.5, -0.2), 2.0, "non-inferior"),  # a significant drop smaller than the margin
        ((0.0, 1.0), 0.0, "inconclusive"),
        ((0.1, 1.0), 0.0, "non-inferior"),
    ],
)
def test_three_way_verdict(interval_pts: tuple[float, float], margin: float, verdict: str) -> None:
    result = non_inferiority((interval_pts[0] / 100, interval_pts[1] / 100), margin)
    assert result.verdict == verdict
    assert result.passed == (verdict == "non-inferior")
    assert result.lower_bound_pts == pytest.approx(interval_pts[0])


def test_refuses_a_negative_margin_and_a_reversed_interval() -> None:
    with pytest.raises(ValueError):
        non_inferiority((-0.01, 0.01), -2)
    with pytest.raises(ValueError):
        non_inferiority((0.01, -0.01), 2)


def test_end_to_end_from_paired_runs() -> None:
    """160 samples, 5 lost and 2 gained by the test configuration: no verdict within 2 pts."""
    control = [[1.0]] * 150 + [[0.0]] * 10
    test = [[0.0]] * 5 + [[1.0]] * 145 + [[1.0]] * 2 + [[0.0]] * 8
    diff = paired_difference(test, control)
    assert (diff.test_better, diff.control_better) == (2, 5)
    result = non_inferiority(diff.interval, 2)
    assert result.verdict == "inconclusive" and not result.passed
    assert result.excludable_drop_pts == pytest.approx(-100 * diff.interval[0])
