"""The sentences of one compare.json block, made from its numbers where they are shown.

compare.md, the report's limitations, the gates' messages, the terminal and the explorer's statistics
panel all read a block through these functions, so each says the same words; ``evalpipe.words.sentences``
holds the wording they share with ``evalpipe plan``.
"""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import MdeBasis, NonInferiorityResult, PairedBenchmark
from evalpipe.words.numbers import fmt_signed_pts_from_fraction
from evalpipe.words.sentences import (
    aa_sentence,
    gate_sentence,
    mde_words,
    noise_sentence,
    non_inferiority_sentence,
    sequential_sentence,
)


def paired_line(block: PairedBenchmark, label_a: str, label_b: str) -> str:
    """The block in one line, e.g. "FP8 raw vs BF16 KV (gsm8k): -1.9 pts [-6.3, +2.5], McNemar p = 0.62,
    3 flips"; with repeats it says that these numbers are the first attempt's."""
    head = f"{label_a} vs {label_b} ({block.benchmark})"
    diff, low, high, p = block.difference, block.diff_ci_low, block.diff_ci_high, block.mcnemar_p
    if (
        diff is None or low is None or high is None or p is None
    ):  # all four are set together, from n_pairs > 0
        return f"{head}: no samples"
    flips = len(block.flips)
    line = (
        f"{head}: {fmt_signed_pts_from_fraction(diff)} pts "
        f"[{fmt_signed_pts_from_fraction(low)}, {fmt_signed_pts_from_fraction(high)}], "
        f"McNemar p = {p:.3g}, {flips} flip{'s' if flips != 1 else ''}"
    )
    if block.repeats > 1:  # a, b and the flips are the first attempt's; the paired_* fields use every attempt
        line += f" (first of {block.repeats} attempts)"
    return line


def mde_basis_text(basis: MdeBasis | None, n: int) -> str | None:
    """What the MDE assumed, e.g. "A/A mean squared difference 0.0250 over 40 samples, one attempt each;
    exact McNemar, 1 attempt(s) per arm"; None without an MDE."""
    if basis is None:
        return None
    noise = f"{basis.noise} mean squared difference {basis.second_moment:.4f} over {n} samples"
    if basis.within is None or basis.between is None:
        noise += ", one attempt each"
    else:
        noise += f" with repeats (within-sample variance {basis.within:.4f} per attempt, between {basis.between:.4f})"
    return f"{noise}; {basis.method}, {basis.repeats} attempt(s) per arm"


def block_mde_sentence(block: PairedBenchmark) -> str | None:
    """What the block's sample can detect (``mde_words``); None where no MDE was computed."""
    if block.mde_basis is None:
        return None
    return mde_words(block.mde_pts, block.n_pairs, block.mde_basis.power)


def verdict_sentence(result: NonInferiorityResult) -> str:
    """The gate's verdict and what decided it; a file from before the gate's rule was recorded (no basis)
    was judged by the fixed 95 % interval and reads as it did then."""
    return non_inferiority_sentence(result) if result.basis is None else gate_sentence(result)


def power_sentences(block: PairedBenchmark) -> list[str]:
    """The A/A noise, the MDE, A/B against the noise, the gate's verdict and the sequential rule's, those
    the block has, in that order (compare.md's and the report's)."""
    said = [
        x
        for x in (
            aa_sentence(block.aa_discordant) if block.aa_discordant is not None else None,
            block_mde_sentence(block),
            noise_sentence(block.noise_vs_ab) if block.noise_vs_ab is not None else None,
        )
        if x
    ]
    if block.non_inferiority is not None:
        said.append(verdict_sentence(block.non_inferiority))
    if block.sequential is not None:
        said.append(sequential_sentence(block.sequential))
    return said
