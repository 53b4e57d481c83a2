""" "Request audit": actual requests per sample, duplicates, retries and their causes, transport failures,
and the declared response-selection rule with what the audit found about it."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Heading, Paragraph, T
from evalpipe.words.numbers import plural


def request_paragraph(summary: Summary) -> str:
    r = summary.requests
    if r.actual_requests is None:
        return f"Request audit not available: no request log. {summary.response_selection.statement}"
    parts = [f"{plural(r.actual_requests, 'actual request')} for {plural(r.samples, 'sample')}"]
    parts.append(plural(r.duplicates or 0, "duplicate") if r.duplicates else "no duplicates")
    if r.retries:
        text = plural(r.retries, "retry", "retries")
        if len(r.retry_causes) == 1:
            text += f" after {next(iter(r.retry_causes))}"
        elif r.retry_causes:
            text += " (" + ", ".join(f"{n} after {cause}" for cause, n in r.retry_causes.items()) + ")"
        parts.append(text)
    else:
        parts.append("no retries")
    if r.transport_failures:
        parts.append(plural(r.transport_failures, "transport failure"))
    if r.hidden_resends:
        parts.append(
            f"{plural(r.hidden_resends, 'request')} re-sent by the proxy on a fresh connection after a reused "
            "one failed before any answer (the server may have received each twice)"
        )
    if r.unlinked:
        parts.append(f"{plural(r.unlinked, 'request')} not linked to any sample")
    if r.samples_with_requests is not None and r.samples_with_requests < r.samples:
        parts.append(f"{r.samples - r.samples_with_requests} sample(s) without a logged request")
    sel = summary.response_selection
    if sel.correctness_based_selection is False:
        parts.append("no correctness-based selection")
    else:
        parts.append(sel.statement.rstrip(".")[0].lower() + sel.statement.rstrip(".")[1:])
    text = "; ".join(parts) + "."
    if r.log_torn_tail:
        text += " The request log's last line was torn (crash mid-write) and skipped."
    return text


def utilisation_paragraph(summary: Summary) -> str | None:
    """One line on how full the server was (None when the log could not say)."""
    u = summary.requests.utilisation
    if u is None:
        return None
    text = (
        f"Server utilisation {u.utilisation:.0%}: on average {u.mean_in_flight:.2f} of {u.concurrency} "
        f"concurrent requests in flight over {u.window_s:.1f} s of evaluation (at most {u.max_in_flight}); "
        f"{u.idle_slot_s:.1f} idle slot-seconds — {u.idle_in_tails_slot_s:.1f} in benchmark tails, "
        f"{u.idle_between_benchmarks_slot_s:.1f} between benchmarks, {u.idle_other_slot_s:.1f} while "
        "requests were still being sent"
    )
    if u.mean_queue_wait_s is not None:
        text += f"; requests waited {u.mean_queue_wait_s:.2f} s on average for a slot"
    return text + "."


def request_audit_section(summary: Summary) -> list[Block]:
    used = utilisation_paragraph(summary)
    return [
        Heading(2, "Request audit"),
        Paragraph([T(request_paragraph(summary))]),
        *([Paragraph([T(used)])] if used is not None else []),
        Paragraph(
            [
                T("Declared response-selection rule: " + summary.response_selection.rule + ". "),
                T(summary.response_selection.statement),
            ]
        ),
    ]
