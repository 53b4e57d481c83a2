"""``report.md``: GitHub-flavoured Markdown, pasteable into a pull request."""

from __future__ import annotations

import re

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, Heading, Inline, Paragraph, Table
from evalpipe.report.document import build_document

# Underscores inside words (prompt_level_strict) do not start emphasis in GFM; only edge ones are escaped.
_MD_SPECIAL = re.compile(r"([\\`*<>|]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def _escape(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", text)


def _code(text: str) -> str:
    ticks = "``" if "`" in text else "`"
    pad = " " if ticks == "``" else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def render_inline(spans: Inline, *, in_table: bool = False) -> str:
    out = []
    for style, text in spans:
        if style == "code":
            piece = _code(text)
            if in_table:
                piece = piece.replace("|", "\\|")
        elif style == "strong":
            piece = f"**{_escape(text)}**"
        elif style == "link":
            piece = f"[{_escape(text)}](<{text}>)"
        else:
            piece = _escape(text)
        out.append(piece.replace("\n", " "))
    return "".join(out)


def _table(t: Table) -> list[str]:
    align = t.align or ["left"] * len(t.headers)
    lines = ["| " + " | ".join(_escape(h) for h in t.headers) + " |"]
    lines.append("|" + "|".join("---:" if a == "right" else ":---" for a in align) + "|")
    for row in t.rows:
        lines.append("| " + " | ".join(render_inline(cell, in_table=True) for cell in row) + " |")
    return lines


def render_blocks(blocks: list[Block]) -> str:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines.append("#" * block.level + " " + _escape(block.text))
        elif isinstance(block, Paragraph):
            lines.append(render_inline(block.spans))
        elif isinstance(block, Table):
            lines.extend(_table(block))
        elif isinstance(block, Bullets):
            lines.extend("- " + render_inline(item) for item in block.items)
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_markdown(summary: Summary) -> str:
    return render_blocks(build_document(summary))
