"""Inline SVG: each benchmark's score with its 95 % interval (and the population-weighted estimate).

Hand-written SVG keeps report.html a single self-contained file with no plotting dependency.
"""

from __future__ import annotations

from html import escape

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.stats.descriptive import median

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


SPEED_HEIGHT = 300
SPEED_LEFT = 70
SPEED_TOP = 24
SPEED_BOTTOM = 64
PALETTE = ("#1f5fa8", "#c05a00", "#2a8a3e", "#8a2a8a", "#6b6b00", "#00707a")


def speed_series(summary: Summary) -> list[tuple[str, list[tuple[int, list[float]]]]]:
    """(label, [(concurrency, per-round output tok/s)]) per variant and input length: both variants of the
    paired comparison when there is one, else this variant's own rounds."""
    sp = summary.speed
    if sp is None:
        return []
    shape = {r.workload: (r.input_len, r.concurrency) for r in sp.rows}
    sides: list[tuple[str, dict[str, list[float]]]] = []
    if sp.comparison is not None:
        cmp = sp.comparison
        for variant, pick in ((cmp.control, "control"), (cmp.test, "test")):
            per: dict[str, list[float]] = {}
            for w in cmp.workloads:
                m = next((x for x in w.metrics if x.metric == "output_throughput"), None)
                if m is not None and w.workload in shape:
                    values = m.control_rounds if pick == "control" else m.test_rounds
                    per[w.workload] = [v for v in values if v is not None]
            sides.append((variant, per))
    else:
        sides.append(
            (
                sp.variant,
                {r.workload: [v for v in r.output_throughput_rounds if v is not None] for r in sp.rows},
            )
        )
    series: list[tuple[str, list[tuple[int, list[float]]]]] = []
    for variant, per in sides:
        for input_len in sorted({shape[w][0] for w in per}):
            points = sorted(
                (shape[w][1], vals) for w, vals in per.items() if shape[w][0] == input_len and vals
            )
            if points:
                series.append((f"{variant}, input {input_len}", points))
    return series


def speed_plot(summary: Summary) -> str:
    """Output throughput vs concurrency: a line through the medians per variant and input length, a small
    dot per round (the spread), a larger dot at the median.  Empty string without speed figures."""

    series = speed_series(summary)
    if not series:
        return ""
    levels = sorted({c for _, pts in series for c, _ in pts})
    top = max(v for _, pts in series for _, vals in pts for v in vals) * 1.1 or 1.0
    plot_w = WIDTH - SPEED_LEFT - RIGHT
    plot_h = SPEED_HEIGHT - SPEED_TOP - SPEED_BOTTOM

    def x(c: int) -> float:
        i = levels.index(c)
        return SPEED_LEFT + plot_w * ((i + 0.5) / len(levels))

    def y(v: float) -> float:
        return SPEED_TOP + plot_h * (1 - v / top)

    axis_y = SPEED_TOP + plot_h
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" height="{SPEED_HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {SPEED_HEIGHT}" font-family="sans-serif" font-size="12">',
        "<title>Output throughput vs concurrency, per variant and input length</title>",
        f'<line x1="{SPEED_LEFT}" y1="{axis_y}" x2="{WIDTH - RIGHT}" y2="{axis_y}" stroke="#888"/>',
        f'<line x1="{SPEED_LEFT}" y1="{SPEED_TOP}" x2="{SPEED_LEFT}" y2="{axis_y}" stroke="#888"/>',
    ]
    for k in range(5):
        v = top * k / 4
        parts.append(
            f'<line x1="{SPEED_LEFT}" y1="{y(v):.1f}" x2="{WIDTH - RIGHT}" y2="{y(v):.1f}" stroke="#eee"/>'
            f'<text x="{SPEED_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end" fill="#555">{v:,.1f}</text>'
        )
    for c in levels:
        parts.append(
            f'<text x="{x(c):.1f}" y="{axis_y + 16}" text-anchor="middle" fill="#555">concurrency {c}</text>'
        )
    parts.append(
        f'<text x="14" y="{SPEED_TOP + plot_h / 2:.1f}" text-anchor="middle" fill="#555" '
        f'transform="rotate(-90 14 {SPEED_TOP + plot_h / 2:.1f})">output tok/s</text>'
    )
    for i, (label, points) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        offset = (i - (len(series) - 1) / 2) * 6  # side by side at one concurrency, so dots do not hide
        medians = [(x(c) + offset, y(median(vals))) for c, vals in points]
        if len(medians) > 1:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in medians)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for (_level, vals), (mx, my) in zip(points, medians, strict=True):
            for v in vals:
                parts.append(f'<circle cx="{mx:.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}" opacity="0.6"/>')
            parts.append(
                f'<circle cx="{mx:.1f}" cy="{my:.1f}" r="5" fill="white" stroke="{color}" stroke-width="2"/>'
            )
        ly = axis_y + 34 + 14 * (i // 2)
        lx = SPEED_LEFT + (i % 2) * 300
        parts.append(
            f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{color}"/>'
            f'<text x="{lx + 16}" y="{ly}" fill="#222">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
