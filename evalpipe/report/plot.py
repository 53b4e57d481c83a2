"""Inline SVG: each benchmark's score with its 95 % interval (and the population-weighted estimate).

Hand-written SVG keeps report.html a single self-contained file with no plotting dependency.
"""

from __future__ import annotations

from html import escape

from evalpipe.schema.summary import Summary

WIDTH = 720
LEFT = 220
RIGHT = 30
ROW = 34
TOP = 28
BOTTOM = 36


def _x(value: float) -> float:
    return LEFT + (WIDTH - LEFT - RIGHT) * max(0.0, min(1.0, value))


def score_plot(summary: Summary) -> str:
    """An SVG element (string); empty string when no benchmark has a score."""
    rows: list[tuple[str, float, float | None, float | None, bool]] = []
    for b in summary.benchmarks:
        if b.score is None:
            continue
        lo, hi = (b.interval.lower, b.interval.upper) if b.interval else (None, None)
        rows.append((f"{b.display_name} / {b.metric}", b.score, lo, hi, False))
        if b.stratified is not None and not b.allocation_proportional:
            st = b.stratified
            rows.append(
                (
                    f"{b.display_name} (population-weighted)",
                    st.estimate,
                    st.interval.lower,
                    st.interval.upper,
                    True,
                )
            )
    if not rows:
        return ""
    height = TOP + ROW * len(rows) + BOTTOM
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
        "<title>Scores with 95 % confidence intervals</title>",
    ]
    axis_y = TOP + ROW * len(rows)
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 8}" x2="{x:.1f}" y2="{axis_y}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#555">{int(tick * 100)} %</text>'
        )
    parts.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#888"/>')
    for i, (label, score, lo, hi, weighted) in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        color = "#c05a00" if weighted else "#1f5fa8"
        parts.append(f'<text x="{LEFT - 10}" y="{y + 4:.1f}" text-anchor="end">{escape(label)}</text>')
        if lo is not None and hi is not None:
            dash = ' stroke-dasharray="4 3"' if weighted else ""
            parts.append(
                f'<line x1="{_x(lo):.1f}" y1="{y:.1f}" x2="{_x(hi):.1f}" y2="{y:.1f}" stroke="{color}" '
                f'stroke-width="2"{dash}/>'
            )
            for v in (lo, hi):
                parts.append(
                    f'<line x1="{_x(v):.1f}" y1="{y - 6:.1f}" x2="{_x(v):.1f}" y2="{y + 6:.1f}" stroke="{color}" '
                    'stroke-width="2"/>'
                )
        cx = _x(score)
        if weighted:
            parts.append(
                f'<polygon points="{cx:.1f},{y - 6:.1f} {cx + 6:.1f},{y:.1f} {cx:.1f},{y + 6:.1f} '
                f'{cx - 6:.1f},{y:.1f}" fill="white" stroke="{color}" stroke-width="2"/>'
            )
        else:
            parts.append(f'<circle cx="{cx:.1f}" cy="{y:.1f}" r="5" fill="{color}"/>')
        parts.append(
            f'<text x="{cx:.1f}" y="{y - 9:.1f}" text-anchor="middle" fill="{color}">{100 * score:.1f}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
