"""The sentences of one compare.json block, made from its numbers where they are shown.

compare.md, the report's limitations, the gates' messages, the terminal and the explorer's statistics
panel all read a block through these functions, so each says the same words; ``evalpipe.words.sentences``
holds the wording they share with ``evalpipe plan``.
"""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import (
    CompareResult,
    DesignCheck,
    MdeBasis,
    NonInferiorityResult,
    OperatingCharacteristic,
    PairedBenchmark,
)
from evalpipe.artifacts.schema.numerics import NumericsComparison
from evalpipe.words.numbers import fmt_signed_pts_from_fraction
from evalpipe.words.numerics import verdict_sentence as numerics_sentence
from evalpipe.words.sentences import (
    aa_sentence,
    gate_sentence,
    mde_words,
    noise_sentence,
    non_inferiority_sentence,
    operating_sentence,
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
        f"(bootstrap 95 % [{fmt_signed_pts_from_fraction(low)}, {fmt_signed_pts_from_fraction(high)}], descriptive), "
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


def scoring_sentence(result: CompareResult) -> str | None:
    """How every number of the comparison scores a sample when it is not as each run's own report scores it
    (``CompareResult.scoring`` 'paired rule': the gate's, for its table, intervals, tests, flips and verdict);
    None under the summary's rule, which is each run's report's."""
    if result.scoring != "paired rule":
        return None
    return (
        "Every number here — scores, difference, intervals, McNemar, flips and the gate — scores a sample by the "
        "gate's rule: an attempt without an answer counts wrong for A (under test) and right for B, never for A; "
        "a unit dropped before generation in both arms is left out"
    )


def versions_sentence(result: CompareResult) -> str | None:
    """The benchmark versions both runs ran (``CompareResult.benchmark_versions``), and those an older run did
    not record; None for a file that records none (before version 8)."""
    if not result.benchmark_versions:
        return None
    known = [f"{name} v{v}" for name, v in result.benchmark_versions.items() if v is not None]
    unknown = [name for name, v in result.benchmark_versions.items() if v is None]
    said = []
    if known:
        said.append("Same benchmark versions in both runs: " + ", ".join(known))
    if unknown:
        said.append(
            "version not recorded by an older run for "
            + ", ".join(unknown)
            + ": a change in its scoring between the runs would not show"
        )
    return "; ".join(said)


def dropped_sentence(block: PairedBenchmark) -> str | None:
    """The units the block left out (dropped before generation in both arms) and why, and those dropped in one
    arm only (judged, against A); None when there are none."""
    said = []
    if block.dropped:
        total = sum(d.units for d in block.dropped)
        why = ", ".join(
            f"{d.units} beyond the {d.reason.replace('context fit', 'configured context')}"
            + (f" of {d.context_tokens:,} tokens" if d.context_tokens is not None else "")
            for d in block.dropped
        )
        said.append(
            f"{total} unit{'s' if total != 1 else ''} dropped before generation in both arms left out ({why}): "
            f"judged on the {block.n_pairs} that remain, the gate's design at that n"
        )
    if block.dropped_one_arm:
        n = block.dropped_one_arm
        said.append(
            f"{n} unit{'s' if n != 1 else ''} dropped in one arm only and answered in the other: counted as no "
            "answer there (against A)"
        )
    return "; ".join(said) or None


def design_check_sentence(check: DesignCheck, oc: OperatingCharacteristic | None) -> str:
    """The measured discordance beside the design's, e.g. "measured A/A discordance 0.150 [0.098, 0.222] (A/B
    0.160 [0.106, 0.233]) against the design's 0.020 (2p(1−p) 0.164 at its accuracy 0.910): above the design —
    with the discordance seen here (…), this sequential design … passes a release with no regression 61.8 % …"."""
    measured = f"measured {check.source} discordance {check.measured:.3f} [{check.measured_low:.3f}, {check.measured_high:.3f}]"
    if check.ab_discordance is not None and check.ab_low is not None and check.ab_high is not None:
        measured += f" (A/B {check.ab_discordance:.3f} [{check.ab_low:.3f}, {check.ab_high:.3f}])"
    head = (
        f"{measured} against the design's {check.design_discordance:.3f} "
        f"(2p(1−p) {check.chance_discordance:.3f} at its accuracy {check.design_accuracy:.3f})"
    )
    if not check.exceeds:
        return f"{head}: within the design"
    tail = f" — {operating_sentence(oc)}" if oc is not None else ""
    return f"{head}: above the design, whose operating characteristic assumed less noise{tail}"


def numerics_verdict(block: NumericsComparison) -> str:
    """The numerics block's verdict (``evalpipe.words.numerics``), printed by the console beside the blocks' lines."""
    return numerics_sentence(block)
