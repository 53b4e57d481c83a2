"""The format-neutral blocks a report is made of: headings, paragraphs, tables and bullet lists of spans.

``report.md``, ``report.html`` and the terminal view render these blocks, so all three say the same thing.
Text from the run (ids, error messages) travels as spans so each renderer escapes it for its format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

SpanKind = Literal["text", "code", "strong", "link"]
Span = tuple[SpanKind, str]
Inline = list[Span]


def T(text: str) -> Span:
    """Plain text."""
    return ("text", text)


def C(text: str) -> Span:
    """Code: ids, paths, metric and finding names."""
    return ("code", text)


def B(text: str) -> Span:
    """Strong: verdicts, severities, benchmark names."""
    return ("strong", text)


def L(path: str) -> Span:
    """A link to a file beside the report (relative path, written by evalpipe, never run text)."""
    return ("link", path)


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    spans: Inline


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Inline]]
    align: list[Literal["left", "right"]] = field(default_factory=list)
    key: str = ""  # "results" marks the main table (the HTML renderer adds the plot after it)


@dataclass
class Bullets:
    items: list[Inline]


Block = Heading | Paragraph | Table | Bullets
