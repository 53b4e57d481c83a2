"""Non-inferiority of the variant under test against the control, within a margin of X points.

The sign-off question is not "is there a difference?" but "is the test configuration within X points of
the control?" (the non-inferiority design of clinical trials: ICH E9 §3.3.2 and the CONSORT extension
for non-inferiority trials, Piaggio et al., JAMA 2012 — a confidence interval of test − control judged
against the margin −X).  On the 95 % interval [L, U] of test − control (``evalpipe.stats.paired``), in
points, with margin X ≥ 0:

* ``non-inferior`` when ``L > −X``: the interval excludes every drop of X points or more.  This is the
  only verdict that passes the gate.  (A significant drop smaller than X is still non-inferior; the
  p-value next to it says so.)
* ``inferior`` when ``U < −X``: the whole interval lies beyond the margin — the drop is larger than X
  with 95 % confidence.
* ``inconclusive`` otherwise (``L ≤ −X ≤ U``): the sample cannot exclude a drop of ``−L`` points; an
  underpowered sign-off is not a pass.

Equality at the margin (``L = −X``) does not pass: the bound must *clear* the margin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["non-inferior", "inferior", "inconclusive"]


@dataclass(frozen=True)
class NonInferiority:
    """The margin, the interval's bounds in points, and the verdict."""

    margin_pts: float
    lower_bound_pts: float
    upper_bound_pts: float
    verdict: Verdict

    @property
    def passed(self) -> bool:
        return self.verdict == "non-inferior"

    @property
    def excludable_drop_pts(self) -> float:
        """The largest drop the interval cannot exclude (``−L``, at least 0)."""
        return max(0.0, -self.lower_bound_pts)


def non_inferiority(interval: tuple[float, float], margin_pts: float) -> NonInferiority:
    """Verdict for the interval of test − control (proportions) against a margin in points (ICH E9 §3.3.2,
    Piaggio et al. 2012: the interval judged against −X; module docstring)."""
    if margin_pts < 0:
        raise ValueError(f"non-inferiority margin must be >= 0 points, got {margin_pts}")
    low, high = interval
    if low > high:
        raise ValueError(f"interval bounds out of order: {interval}")
    lower_pts, upper_pts = 100.0 * low, 100.0 * high
    verdict: Verdict
    if lower_pts > -margin_pts:
        verdict = "non-inferior"
    elif upper_pts < -margin_pts:
        verdict = "inferior"
    else:
        verdict = "inconclusive"
    return NonInferiority(
        margin_pts=margin_pts, lower_bound_pts=lower_pts, upper_bound_pts=upper_pts, verdict=verdict
    )
