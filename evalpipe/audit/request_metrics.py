"""What the request log says, run-wide and per benchmark: actual requests per sample, duplicates, retries
and their causes, transport failures, the proxy's re-sends on a fresh connection, token throughput, and whether responses were selected by the
declared rule (never by correctness)."""

from __future__ import annotations

from collections import Counter

from evalpipe.artifacts.schema.manifest import ManifestEntry
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.summary import RequestAudit, ResponseSelection, Throughput
from evalpipe.audit.linkage import SELECTION_RULE, Linkage, attempt_ok, parse_time


def request_audit(
    entries: list[ManifestEntry], linkage: Linkage | None, benchmark: str | None, torn: bool
) -> RequestAudit:
    """Counts over the attempts linked to ``entries`` (``benchmark`` None: the whole run, unlinked included)."""
    if linkage is None:
        return RequestAudit(samples=len(entries), samples_with_requests=None, actual_requests=None)
    groups = list(linkage.groups.values()) if benchmark is None else linkage.groups_for_benchmark(benchmark)
    keys = {(e.benchmark, e.source_id) for e in entries}
    attempts = [a for g in groups for a in g.attempts]
    with_req = sum(1 for g in groups if g.attempts for s in g.samples if (s.benchmark, s.source_id) in keys)
    failed = sum(1 for a in attempts if not attempt_ok(a))
    unlinked = len(linkage.unlinked) if benchmark is None else None
    other = len(linkage.other) if benchmark is None else None
    resent = sum(1 for a in attempts if a.resent_after)
    if benchmark is None:  # run-wide: failures and re-sends of unlinked attempts count too
        failed += sum(1 for a in linkage.unlinked if not attempt_ok(a))
        resent += sum(1 for a in linkage.unlinked if a.resent_after)
    return RequestAudit(
        samples=len(entries),
        samples_with_requests=with_req,
        actual_requests=len(attempts),
        successful=sum(1 for a in attempts if attempt_ok(a)),
        duplicates=sum(g.duplicates for g in groups),
        retries=sum(g.retries for g in groups),
        retry_causes=dict(sorted(Counter(c for g in groups for c in g.retry_causes).items())),
        transport_failures=failed,
        hidden_resends=resent,
        unlinked=unlinked,
        other_requests=other,
        log_torn_tail=torn,
    )


def throughput(attempts: list[RequestAttempt], tp_size: int | None) -> Throughput | None:
    """Token rates over first attempt start → last attempt end of the benchmark's linked traffic."""
    if not attempts:
        return None
    starts = [t for a in attempts if (t := parse_time(a.started_at)) is not None]
    ends = [t for a in attempts if (t := parse_time(a.ended_at)) is not None]
    wall = (max(ends) - min(starts)).total_seconds() if starts and ends else None
    with_usage = [a for a in attempts if a.usage is not None]
    inp = sum(a.usage.prompt_tokens or 0 for a in with_usage if a.usage)
    outp = sum(a.usage.completion_tokens or 0 for a in with_usage if a.usage)
    total = sum(
        (
            a.usage.total_tokens
            if a.usage.total_tokens is not None
            else (a.usage.prompt_tokens or 0) + (a.usage.completion_tokens or 0)
        )
        for a in with_usage
        if a.usage
    )

    def rate(tokens: int) -> float | None:
        return tokens / wall if wall and wall > 0 else None

    def per_gpu(value: float | None) -> float | None:
        return value / tp_size if value is not None and tp_size else None

    ir, orate, tr = rate(inp), rate(outp), rate(total)
    return Throughput(
        attempts=len(attempts),
        attempts_with_usage=len(with_usage),
        wall_time_s=wall,
        input_tokens=inp,
        output_tokens=outp,
        total_tokens=total,
        input_tps=ir,
        output_tps=orate,
        total_tps=tr,
        tp_size=tp_size,
        input_tps_per_gpu=per_gpu(ir),
        output_tps_per_gpu=per_gpu(orate),
        total_tps_per_gpu=per_gpu(tr),
    )


def response_selection(linkage: Linkage | None, violations: int, unverifiable: int) -> ResponseSelection:
    """The declared selection rule and what the request checks found about it."""
    if linkage is None:
        return ResponseSelection(
            rule=SELECTION_RULE,
            samples_with_several_responses=None,
            violations=None,
            correctness_based_selection=None,
            statement="Response selection not checked: no request log.",
        )
    several = sum(len(g.samples) for g in linkage.groups.values() if len(g.successes) > g.responses_wanted)
    if violations:
        statement = (
            f"Response selection deviated from the declared rule for {violations} sample(s): "
            "correctness-based selection cannot be ruled out."
        )
        flag: bool | None = True
    elif unverifiable:
        statement = (
            f"No selection-rule violation found, but {unverifiable} sample(s) could not be traced "
            "to a logged response."
        )
        flag = None
    elif several:
        statement = (
            f"No correctness-based selection: {several} sample(s) had several successful responses "
            "and each used the last completed one that reached the client."
        )
        flag = False
    else:
        statement = "No correctness-based selection: every sample had a single successful response."
        flag = False
    return ResponseSelection(
        rule=SELECTION_RULE,
        samples_with_several_responses=several,
        violations=violations,
        correctness_based_selection=flag,
        statement=statement,
    )
