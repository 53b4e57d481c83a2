"""'Fleet': the workers behind a router — each one's resolved KV cache, version, verification and share of
the requests; what the request-field probe found; and, said plainly, what cannot be attributed per worker."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, C, Heading, Inline, Paragraph, T, Table
from evalpipe.words.numbers import pct, plural
from evalpipe.words.sentences import event_sentence


def fleet_section(summary: Summary) -> list[Block]:
    fleet = summary.fleet
    if fleet is None:
        return []
    how = "launched by evalpipe" if fleet.router_launched else "attached"
    policy = f", policy {fleet.policy}" if fleet.policy else ""
    died = len({e.url for e in fleet.events if e.kind == "died" and not e.earlier_session})
    if not fleet.verified:
        state = "NOT verified (see findings)"
    elif died:
        state = f"every worker verified, none changed; {plural(died, 'worker')} died during the run (below)"
    else:
        state = "every worker verified, none changed"
    blocks: list[Block] = [
        Heading(2, "Fleet"),
        Paragraph(
            [
                T("Router "),
                C(fleet.router_url),
                T(
                    f" (sglang-router {fleet.router_version or 'version unknown'}, {how}{policy}) in front of "
                ),
                T(f"{plural(len(fleet.workers), 'worker')}: {state}. {fleet.counters}."),
            ]
        ),
    ]
    rows: list[list[Inline]] = []
    for w in fleet.workers:
        verified = {True: "yes", False: "NO", None: "unverified"}[w.verified]
        requests = (
            "—" if w.requests_ok is None else f"{w.requests_ok:,} ok / {w.requests_failed or 0:,} failed"
        )
        rows.append(
            [
                [C(w.url)],
                [T(w.kv_cache_dtype or "?")],
                [T(" ".join(x for x in (w.engine, w.version) if x) or "?")],
                [T(verified)],
                [T(requests)],
                [T("—" if w.share is None else pct(w.share))],
            ]
        )
    blocks.append(
        Table(
            headers=["Worker", "KV cache", "Engine / version", "Verified", "Requests", "Share"],
            rows=rows,
            align=["left", "left", "left", "left", "right", "right"],
        )
    )
    if fleet.probe:
        blocks.append(Paragraph([T("Request fields through the router (probe before the first sample):")]))
        blocks.append(
            Bullets([[C(f.field), T(f": {f.verdict.replace('_', ' ')} — {f.detail}")] for f in fleet.probe])
        )
    if fleet.watch_interval_s is not None:
        watched = f"Watched every {fleet.watch_interval_s:g} s during the evaluation"
        if not fleet.events:
            blocks.append(Paragraph([T(watched + ": no worker died, returned, joined or changed.")]))
        else:
            blocks.append(Paragraph([T(watched + ":")]))
            blocks.append(
                Bullets(
                    [
                        [T(("before the resume: " if e.earlier_session else "") + event_sentence(e))]
                        for e in fleet.events
                    ]
                )
            )
    blocks.append(Paragraph([T(fleet.attribution)]))
    return blocks
