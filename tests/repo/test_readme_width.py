"""The README reads in a terminal or a diff without horizontal scrolling: no line is longer than 120 characters
(a table that needs longer rows is a list; a long command output in an excerpt is cut with "…")."""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
WIDTH = 120


def test_no_readme_line_is_longer_than_120_characters() -> None:
    lines = README.read_text(encoding="utf-8").split("\n")
    long = [f"README.md:{n}: {len(line)} characters" for n, line in enumerate(lines, 1) if len(line) > WIDTH]
    assert not long, "\n".join(long)
