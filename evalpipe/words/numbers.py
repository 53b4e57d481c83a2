"""How numbers and lists read in the report: percentages, points, intervals, rates, plurals, "a, b and c".

One helper per unit: a fraction as a percentage (``pct``), a value already in points (``fmt_pts``), a
fraction as signed points (``fmt_signed_pts_from_fraction``, the differences of ``compare.md``).
"""

from __future__ import annotations

from evalpipe.artifacts.schema.metrics import Interval


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def fmt_pts(points: float) -> str:
    """A value in points with one decimal, no sign for positive values: ``7.4``."""
    return f"{points:.1f}"


def fmt_signed_pts_from_fraction(fraction: float) -> str:
    """A fraction (0.031) as signed points with one decimal: ``+3.1`` (a difference test − control)."""
    return f"{fraction * 100:+.1f}"


def ci_text(ci: Interval | None) -> str:
    return "n/a" if ci is None else f"[{100 * ci.lower:.1f}, {100 * ci.upper:.1f}] %"


def rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def join_words(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def number_word(n: int) -> str:
    """ "one" … "ten" (and "no"); digits from 11 on."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def fmt_bytes(n: int) -> str:
    """A file's size: kB below 0.1 MB, else MB with one decimal."""
    return f"{n / 1e3:.0f} kB" if n < 100_000 else f"{n / 1e6:.1f} MB"
