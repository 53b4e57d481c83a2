"""``report.html``: the Markdown report's content as one self-contained page plus the score plot."""

from __future__ import annotations

from html import escape
from urllib.parse import quote

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, Heading, Inline, Paragraph, Table
from evalpipe.report.document import build_document
from evalpipe.report.plot import score_plot, speed_plot

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:0.6em 0}th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
th{background:#f3f3f3}td.r{text-align:right;font-variant-numeric:tabular-nums}
code{background:#f5f5f5;padding:0 3px;border-radius:3px;font-size:90%}
figure{margin:1em 0}figcaption{color:#555;font-size:90%}
"""


def render_inline(spans: Inline) -> str:
    out = []
    for style, text in spans:
        t = escape(text)
        if style == "code":
            out.append(f"<code>{t}</code>")
        elif style == "strong":
            out.append(f"<strong>{t}</strong>")
        elif style == "link":
            out.append(f'<a href="{escape(quote(text), quote=True)}">{t}</a>')
        else:
            out.append(t)
    return "".join(out)


def _table(t: Table) -> str:
    align = t.align or ["left"] * len(t.headers)
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    body = []
    for row in t.rows:
        cells = "".join(
            f'<td class="r">{render_inline(c)}</td>' if a == "right" else f"<td>{render_inline(c)}</td>"
            for c, a in zip(row, align, strict=False)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_blocks(blocks: list[Block], plot: str = "", speed: str = "") -> str:
    parts: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            parts.append(f"<h{block.level}>{escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{render_inline(block.spans)}</p>")
        elif isinstance(block, Table):
            parts.append(_table(block))
            if block.key == "results" and plot:
                parts.append(
                    f"<figure>{plot}<figcaption>Score (dot) with its 95 % Wilson interval; hollow diamond: "
                    "population-weighted estimate where the sample is not proportional.</figcaption></figure>"
                )
            if block.key == "speed" and speed:
                parts.append(
                    f"<figure>{speed}<figcaption>Output throughput (tok/s) per concurrency level: small dots are "
                    "rounds, the ringed dot their median, one line per variant and input length.</figcaption></figure>"
                )
        elif isinstance(block, Bullets):
            parts.append("<ul>" + "".join(f"<li>{render_inline(i)}</li>" for i in block.items) + "</ul>")
    return "\n".join(parts)


def render_html(summary: Summary) -> str:
    title = escape(f"Accuracy sign-off: {summary.config_name or summary.run_id}")
    body = render_blocks(build_document(summary), score_plot(summary), speed_plot(summary))
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )
