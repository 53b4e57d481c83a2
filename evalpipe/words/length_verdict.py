"""The one-line verdict of a benchmark's per-length blocks: the first context length where the candidate
(arm A) falls behind its control.

A KV-cache bug shows up as a difference that grows with the context; the table of length buckets says
how much at each, and this line names where it starts, so a reviewer reads one sentence instead of
scanning a table.  "Falls behind" means the block's 95 % interval of A − B lies wholly below zero — the
Bonett–Price paired interval where the block has one (it does not collapse to [0, 0] when nothing
flipped), else the bootstrap interval.  Without such a length the line names the first length whose
point estimate is below zero, marked as not significant, or says no length is behind.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalpipe.artifacts.schema.compare import PairedBenchmark
from evalpipe.words.numbers import fmt_signed_pts_from_fraction


def _upper(block: PairedBenchmark) -> float | None:
    return block.paired_ci_high if block.paired_ci_high is not None else block.diff_ci_high


def _lower(block: PairedBenchmark) -> float | None:
    return block.paired_ci_low if block.paired_ci_low is not None else block.diff_ci_low


def length_interval(block: PairedBenchmark) -> tuple[float | None, float | None, str]:
    """The interval that decides "behind" at one length, and its name: the Bonett–Price paired interval where
    the block has one, else the bootstrap interval (module docstring)."""
    name = "Bonett–Price" if block.paired_ci_high is not None else "bootstrap"
    return _lower(block), _upper(block), name


def _at(block: PairedBenchmark) -> str:
    low, high = _lower(block), _upper(block)
    ci = (
        ""
        if low is None or high is None
        else (
            f", {length_interval(block)[2]} 95 % CI [{fmt_signed_pts_from_fraction(low)}, "
            f"{fmt_signed_pts_from_fraction(high)}]"
        )
    )
    diff = "–" if block.difference is None else fmt_signed_pts_from_fraction(block.difference)
    return f"{diff} pts{ci}, {len(block.flips)} flips, n = {block.n_pairs}"


def length_verdict(benchmark: str, by_length: Sequence[PairedBenchmark]) -> str | None:
    """One line naming the first length (shortest first, the order of ``by_length``) where A is behind B;
    None when the benchmark has no length buckets."""
    if not by_length:
        return None
    lengths = ", ".join(str(x.length) for x in by_length)
    for i, x in enumerate(by_length):
        high = _upper(x)
        if high is not None and high < 0:
            before = ", ".join(str(y.length) for y in by_length[:i])
            held = f"; it holds at {before}" if before else "; it is behind from the shortest length"
            return f"{benchmark}: the candidate first falls behind at length {x.length} ({_at(x)}){held}"
    for x in by_length:
        if x.difference is not None and x.difference < 0:
            return (
                f"{benchmark}: no length where the candidate is significantly behind (lengths {lengths}); "
                f"the first with a lower score is {x.length} ({_at(x)}), within the noise"
            )
    return f"{benchmark}: the candidate is behind at no length ({lengths})"
