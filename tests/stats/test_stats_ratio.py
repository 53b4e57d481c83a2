"""evalpipe.stats.ratio: the round-bootstrap interval of a ratio of medians, its coverage by simulation.

Coverage is measured against a generative model with a known answer, not against the interval's own
formula: per round, log throughput = variant effect + a round effect shared by both variants (the machine's
load that round, weight ``rho`` of the variance) + independent noise.  The true ratio of the variants'
median throughputs is then exp(test effect − control effect) exactly.  The counts below are seeded, so the
test is deterministic; the bounds are ±3 binomial standard deviations around what the method is known to
achieve (nominal from ~8 rounds; the documented under-coverage at 3 rounds).
"""

from __future__ import annotations

import numpy as np
import pytest

from evalpipe.stats.ratio import median, ratio_interval

TRUE_RATIO = 1.10


def _coverage(rounds: int, *, paired: bool, rho: float, trials: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    sigma = 0.05
    hits = 0
    for trial in range(trials):
        shared = rng.normal(0, sigma * np.sqrt(rho), rounds)
        if not paired:  # rounds of the two variants ran at different times: no shared effect
            shared_c = rng.normal(0, sigma * np.sqrt(rho), rounds)
        else:
            shared_c = shared
        test = np.exp(np.log(TRUE_RATIO) + shared + rng.normal(0, sigma * np.sqrt(1 - rho), rounds))
        control = np.exp(shared_c + rng.normal(0, sigma * np.sqrt(1 - rho), rounds))
        lo, hi = ratio_interval(
            test, control, paired=paired, resamples=1000, seed=seed + trial, confidence=0.95
        )
        hits += lo <= TRUE_RATIO <= hi
    return hits / trials


@pytest.mark.parametrize(("paired", "rho"), [(True, 0.8), (True, 0.0), (False, 0.5)])
def test_interval_reaches_nominal_coverage_at_eight_rounds(paired: bool, rho: float) -> None:
    coverage = _coverage(8, paired=paired, rho=rho, trials=1000, seed=11)
    assert 0.92 <= coverage <= 0.985, coverage


def test_interval_undercovers_at_three_rounds_as_documented() -> None:
    """Why the speed config's ``rounds`` defaults to 5: at the issue's floor of 3 rounds a 95 % interval covers ~76 %."""
    three = _coverage(3, paired=True, rho=0.5, trials=1000, seed=12)
    five = _coverage(5, paired=True, rho=0.5, trials=1000, seed=13)
    assert 0.70 <= three <= 0.83, three
    assert 0.89 <= five <= 0.97, five
    assert three < five


def test_interval_is_reproducible_and_brackets_the_point_estimate() -> None:
    t, c = [11.0, 12.0, 10.5, 11.4, 11.9], [10.0, 10.2, 9.9, 10.4, 10.1]
    first = ratio_interval(t, c, paired=True, resamples=10_000, seed=5, confidence=0.95)
    assert first == ratio_interval(t, c, paired=True, resamples=10_000, seed=5, confidence=0.95)
    assert median(t) == 11.4 and median([1.0, 2.0, 4.0, 10.0]) == 3.0
    point = float(np.median(t) / np.median(c))
    assert first[0] <= point <= first[1]
