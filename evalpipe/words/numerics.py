"""The numerics block of compare.json in words: one verdict sentence, the interval that decided it, and the
per-length / per-placement table (compare.md, the report, the console and the explorer all read these).

The verdict is about distributions, never about accuracy: "moves the next-token distribution more than a
relaunch does".  Beside it stands only the interval that decided it — the one-sided Hodges–Lehmann bound of
the signed-rank test (``NumericsShift.lower``), named as such; medians and p90s are labelled descriptive.
"""

from __future__ import annotations

import math

from evalpipe.artifacts.schema.numerics import NumericsComparison, NumericsGroup, NumericsShift

#: What each divergence is, in a few words (table headers and the legend).
DIVERGENCE_WORDS = {
    "kl0": "KL of the first token (nats)",
    "dlp0": "|Δ log p| of the first token",
    "kl_pre": "mean KL over the steps before the first differing token (nats)",
    "dlp_pre": "mean |Δ log p| over those steps",
    "kl_forced": "mean KL over the teacher-forced continuation (nats)",
    "dlp_forced": "mean |Δ log p| over the continuation",
}


def num(x: float | None) -> str:
    """A divergence: four significant digits, 0 as 0."""
    if x is None:
        return "n/a"
    return "0" if x == 0 else f"{x:.3g}"


def fewest_pairs(alpha: float) -> int:
    """The fewest non-zero pairs with which a one-sided exact signed-rank test can reach ``alpha`` (2^-n ≤ α)."""
    return max(1, math.ceil(math.log2(1 / alpha) - 1e-12))


def bound_text(shift: NumericsShift | None) -> str:
    """The deciding interval: ``[lower, ∞)``, named."""
    if shift is None:
        return "no A/A arm"
    if shift.lower is None:
        return f"none at α = {shift.alpha:g} with {shift.nonzero} differing pair(s)"
    return f"[{num(shift.lower)}, ∞) one-sided {1 - shift.alpha:.0%} signed-rank bound"


def shift_words(shift: NumericsShift | None) -> str:
    """The verdict of a group's test with its p-value."""
    if shift is None:
        return "no A/A arm: no floor to hold A/B against"
    if shift.lower is None and shift.nonzero == 0:
        return f"A/B equals A/A on all {shift.n} prompts"
    if shift.lower is None:
        return (
            f"too few prompts for a verdict ({shift.nonzero} differ from A/A; the test needs "
            f"{fewest_pairs(shift.alpha)} at α = {shift.alpha:g})"
        )
    p = f"p = {shift.p_value:.2g}"
    if shift.above:
        return f"above the A/A floor ({p}, {shift.positive} of {shift.nonzero} A/B > A/A)"
    return f"within the A/A floor ({p})"


def gate_words(block: NumericsComparison) -> str:
    """The numerics gate's outcome in words (empty without the gate)."""
    gate = block.gate
    if gate is None:
        return ""
    if not gate.has_aa:
        return f"numerics.fail_above {gate.fail_above:g}: failed — no A/A arm, no floor to hold A/B against"
    if gate.passed:
        return f"numerics.fail_above {gate.fail_above:g}: passed — {block.primary} shift over A/A not shown above it"
    return (
        f"numerics.fail_above {gate.fail_above:g}: FAILED — {block.primary} shift over A/A ≥ {num(gate.lower)} "
        "(the one-sided signed-rank bound)"
    )


def group_line(block: NumericsComparison, group: NumericsGroup) -> str:
    """One table row: the group, its prompts, the medians of the primary divergence, identical counts, the
    verdict and the interval that decided it."""
    primary = block.primary
    ab, aa = group.ab.get(primary), group.aa.get(primary)
    identical_aa = "—" if group.identical_aa is None else f"{group.identical_aa}/{group.n}"
    return (
        f"| {group.name} | {group.n} | {num(ab.median if ab else None)} [{num(ab.p90 if ab else None)}] | "
        f"{num(aa.median if aa else None)} [{num(aa.p90 if aa else None)}] | {group.identical_ab}/{group.n} | "
        f"{identical_aa} | {shift_words(group.shift)} | {bound_text(group.shift)} |"
    )


def verdict_sentence(block: NumericsComparison) -> str:
    """The block's verdict in one sentence (the "all" group's test)."""
    overall = block.overall()
    test, control = block.label_test, block.label_control
    shift = overall.shift if overall is not None else None
    what = DIVERGENCE_WORDS[block.primary]
    if overall is None or shift is None:
        return (
            f"{test} vs {control}: next-token distributions compared on {block.prompts} prompts, no A/A arm "
            f"to hold them against ({what})."
        )
    ab = overall.ab.get(block.primary)
    aa = overall.aa.get(block.primary)
    medians = f"median {num(ab.median if ab else None)} vs {num(aa.median if aa else None)}"
    if shift.above:
        return (
            f"{test} moves the next-token distribution more than a relaunch of {control} does: {what}, "
            f"{medians} over {block.prompts} prompts; shift ≥ {num(shift.lower)} "
            f"(one-sided {1 - shift.alpha:.0%} signed-rank bound, p = {shift.p_value:.2g})."
        )
    return (
        f"{test} does not move the next-token distribution more than a relaunch of {control} does: {what}, "
        f"{medians} over {block.prompts} prompts ({shift_words(shift)})."
    )


def table_lines(block: NumericsComparison) -> list[str]:
    """compare.md's numerics section: the sentence, the table by length and placement, the gate, the cost."""
    label_aa = block.label_aa or "A/A"
    lines = [
        "## Numerics: next-token distributions",
        "",
        verdict_sentence(block),
        "",
        f"Per prompt, how far {block.label_test} (A/B) and {label_aa} (A/A) moved {block.label_control}'s "
        f"next-token distribution ({DIVERGENCE_WORDS[block.primary]}; top-k plus a tail bucket: a lower bound of "
        f"the full KL). Medians [p90] are descriptive; the verdict column is the one-sided Wilcoxon signed-rank "
        f"test of A/B − A/A per prompt (zeros dropped, exact), and the interval beside it is that test's own "
        f"inversion (Hodges–Lehmann), the one that decided it.",
        "",
        "| group | prompts | A/B median [p90] | A/A median [p90] | A/B identical | A/A identical | verdict "
        "| deciding interval |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for group in block.groups:
        name = group.name if group.by != "length" else f"{group.name} tokens"
        lines.append(group_line(block, group.model_copy(update={"name": name})))
    lines.append("")
    if block.gate is not None:
        lines.append(f"- Gate {gate_words(block)}")
    if block.missing or block.mismatched:
        lines.append(f"- Left out: {len(block.missing)} prompt(s) some arm did not answer, "
                     f"{len(block.mismatched)} whose prompt differed between arms.")  # fmt: skip
    seconds = ", ".join(f"{label} {s:.1f} s" for label, s in block.seconds.items())
    lines.append(f"- Cost: {block.prompts} prompts per arm, {block.prompt_tokens:,} prompt tokens (the server's "
                 f"count, one arm); wall time {seconds}.")  # fmt: skip
    lines.append("")
    return lines
