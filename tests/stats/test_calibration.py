"""The fixed look's ``z*`` keeps its size at the margin ≤ α for every discordance, ψ → 0 included
(``evalpipe.stats.operating.calibrated_critical_value``), by exact enumeration of the outcomes.

The size of the look ``W > z*`` at ``Δ = −margin`` is a polynomial in ψ; ``worst_size`` maximises it over a grid
from ψ = 0 and refines every local maximum.  Checked here on a grid four times finer than the calibration's, over
n 50–400, margins 5–20 pts and α 0.0125–0.05 (integration tier: ~20 s of CPU).
"""

from __future__ import annotations

import pytest

from evalpipe.stats.operating import calibrated_critical_value, size_at_margin, worst_size

pytestmark = pytest.mark.integration

NS = [50, 73, 100, 159, 198, 291, 400]
MARGINS = [5.0, 10.0, 20.0]
ALPHAS = [0.0125, 0.025, 0.05]


@pytest.mark.parametrize("alpha", ALPHAS)
@pytest.mark.parametrize("margin", MARGINS)
@pytest.mark.parametrize("n", NS)
def test_size_at_the_margin_is_at_most_alpha_for_every_discordance(
    n: int, margin: float, alpha: float
) -> None:
    z = calibrated_critical_value(n, margin, alpha)
    worst, _ = worst_size(n, margin, z, points=256)
    assert worst <= alpha + 1e-12
    assert size_at_margin(n, margin, z, 0.0) <= alpha + 1e-12
