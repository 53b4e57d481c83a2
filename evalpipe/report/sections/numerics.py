""" "Numerics": the numerics probe's comparison this variant is an arm of — the verdict sentence and, per
group (all prompts, each length, each placement), the medians of A/B and A/A, the identical counts, and the
signed-rank verdict with the interval that decided it (``evalpipe.words.numerics`` words every view alike)."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, Heading, Paragraph, T, Table
from evalpipe.words.numerics import (
    DIVERGENCE_WORDS,
    bound_text,
    gate_words,
    num,
    shift_words,
    verdict_sentence,
)

HEADERS = ["Group", "Prompts", "A/B median [p90]", "A/A median [p90]", "A/B identical", "A/A identical",
           "Verdict", "Deciding interval"]  # fmt: skip


def numerics_section(summary: Summary) -> list[Block]:
    block = summary.numerics
    if block is None:
        return []
    rows = []
    for g in block.groups:
        ab, aa = g.ab.get(block.primary), g.aa.get(block.primary)
        name = f"{g.name} tokens" if g.by == "length" else g.name
        rows.append(
            [
                [T(name)],
                [T(str(g.n))],
                [T(f"{num(ab.median if ab else None)} [{num(ab.p90 if ab else None)}]")],
                [T(f"{num(aa.median if aa else None)} [{num(aa.p90 if aa else None)}]")],
                [T(f"{g.identical_ab}/{g.n}")],
                [T("—" if g.identical_aa is None else f"{g.identical_aa}/{g.n}")],
                [T(shift_words(g.shift))],
                [T(bound_text(g.shift))],
            ]
        )
    notes = [
        [
            T(
                f"Divergence: {DIVERGENCE_WORDS[block.primary]} of {block.label_test} (A/B) and "
                f"{block.label_aa or 'the A/A arm'} (A/A) from {block.label_control}, per prompt; medians [p90] are "
                "descriptive, the verdict is the one-sided signed-rank test of A/B − A/A and the interval its own "
                "inversion."
            )
        ],
        [
            T(
                f"Cost: {block.prompts} prompts and {block.prompt_tokens:,} prompt tokens per arm (the server's count)."
            )
        ],
    ]
    if block.gate is not None:
        notes.append([T(f"Gate {gate_words(block)}")])
    return [
        Heading(2, "Numerics: next-token distributions"),
        Paragraph([T(verdict_sentence(block))]),
        Table(HEADERS, rows, ["left", "right", "right", "right", "right", "right", "left", "left"]),
        Bullets(notes),
    ]
