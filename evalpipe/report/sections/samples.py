""" "Every sample" and "Reviewer verdicts": where the explorer is, what it cut, and what a reviewer said
about the flips (``summary.explorer``, ``summary.reviews``)."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, C, Heading, L, Paragraph, T, Table
from evalpipe.words.numbers import fmt_bytes, plural

_VERDICT_TEXT = {"regression": "regression", "grader_error": "grader error", "noise": "noise"}


def samples_section(summary: Summary) -> list[Block]:
    ex = summary.explorer
    if ex is None:
        return []
    spans = [
        T("Every sample, side by side with its prompt, answers, reasoning and request ids: "),
        L(ex.file),
    ]
    if ex.paired_file is not None:
        spans += [T("; the paired comparison, flips first: "), L(ex.paired_file)]
    spans.append(
        T(f" ({ex.samples} samples, {fmt_bytes(ex.bytes)} of a {fmt_bytes(ex.limit_bytes)} limit). ")
    )
    if ex.truncated:
        shown = ", ".join(ex.truncated_ids[:10]) + (" …" if ex.truncated > 10 else "")
        spans.append(
            T(
                f"Truncated: {plural(ex.truncated, 'sample')} ({ex.tier}; each cut points to the whole "
                f"response's line in responses.jsonl.gz and its sha256): {shown}."
            )
        )
    else:
        spans.append(T("Nothing truncated: every text is whole."))
    return [Heading(2, "Every sample"), Paragraph(spans)]


def reviews_section(summary: Summary) -> list[Block]:
    rv = summary.reviews
    if rv is None:
        return []
    counts = ", ".join(f"{n} {_VERDICT_TEXT.get(v, v)}" for v, n in rv.counts.items() if n)
    intro = Paragraph(
        [
            T(f"{plural(len(rv.reviews), 'verdict')} from "),
            C(rv.file),
            T(f" (sha256 {rv.sha256[:12]}…, exported {rv.exported_at}): {counts or 'none'}. "),
            T("A reviewer's reading of the flips; they change no score and no gate."),
        ]
    )
    rows = [
        [[C(f"{r.benchmark}/{r.source_id}")], [T(r.flip.replace("_", " ") if r.flip else "—")],
         [T(_VERDICT_TEXT[r.verdict])], [T(r.note or "—")]]
        for r in rv.reviews
    ]  # fmt: skip
    return [Heading(2, "Reviewer verdicts"), intro, Table(["sample", "flip", "verdict", "note"], rows)]
