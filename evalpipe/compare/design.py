"""A paired block's measured discordance beside the one its design assumed (config ``design:``).

The design's operating characteristic — how often the gate passes a good release — rests on the discordance it
assumes; the run measures it.  Per block the check states the measured A/A discordance (the quantity the design
assumes: two runs with no regression; the A/B pair's when no repeat ran, which also holds any effect) with its
95 % Wilson interval, the A/B one beside it, the design's value and 2p(1 − p) at the design's accuracy (the
chance-agreement reference: never at a measured accuracy, which may be 0 or 1 and make it 0), and whether the
measured interval lies wholly above the design's value.  The gate's OC at the measured value is the block's
``operating``; the audit turns an exceeded design into a warning finding (``evalpipe.audit.checks``).
"""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import DesignCheck, Discordance, PairedBenchmark
from evalpipe.config.gates import DesignAssumption
from evalpipe.stats.intervals import wilson_interval


def _interval(d: Discordance) -> tuple[float, float] | None:
    """95 % Wilson interval of a pair's discordance: exact counts at one attempt (discordant of n); with repeats
    the mean squared difference of per-sample means, a [0, 1] variable, whose variance is at most that of a
    Bernoulli of the same mean — the Wilson interval at its sum is conservative there."""
    total = min(max(d.second_moment * d.n_pairs, 0.0), float(d.n_pairs))
    return wilson_interval(total, d.n_pairs)


def design_check(block: PairedBenchmark, assumption: DesignAssumption | None) -> DesignCheck | None:
    """The block's check against ``assumption`` (module docstring); None without an assumption or a measured
    pair."""
    if assumption is None:
        return None
    aa, ab = block.aa_discordant, block.ab_discordant
    measured = aa if aa is not None else ab
    if measured is None:
        return None
    bounds = _interval(measured)
    if bounds is None:
        return None
    ab_bounds = _interval(ab) if ab is not None and aa is not None else None
    p = assumption.accuracy
    return DesignCheck(
        design_discordance=assumption.discordance,
        design_accuracy=p,
        chance_discordance=2.0 * p * (1.0 - p),
        source="A/A" if aa is not None else "A/B",
        measured=measured.second_moment,
        measured_low=bounds[0],
        measured_high=bounds[1],
        ab_discordance=ab.second_moment if ab_bounds is not None and ab is not None else None,
        ab_low=ab_bounds[0] if ab_bounds is not None else None,
        ab_high=ab_bounds[1] if ab_bounds is not None else None,
        exceeds=bounds[0] > assumption.discordance,
    )
