"""The fleet behind a router, audited from ``server/fleet.json`` alone.

A run through a router is one configuration only if every worker behind it was that configuration
for the whole run and every request field reached the workers with its effect.  ``fleet.json`` records the
workers at the start (each verified against the config) and at the end, the request-field probe and the
router's per-worker counters; the findings here turn each gap into a line naming the worker:

* errors — the fleet was not verified at the start (a run ``on_mismatch: warn`` let through), a worker
  joined, left, became unreadable or changed its configuration or version during the run, the fleet was
  not read again at the end, the router changed a request field so that generation changes; a worker the
  fleet watch saw change configuration (or join unverified) states how many answers may come from it;
* warnings — a worker verified at the start died and stayed gone (the watch's time, the requests in
  flight, the attempts that failed and their re-sends: its answers came from a verified configuration), a
  worker served none of the run's requests, requests failed on a worker, the router retried requests on
  another worker (invisible in ``requests.jsonl``), a worker's health changed;
* info — a worker that died and came back with the configuration verified at the start; what could not
  be checked (a field with no visible effect on these workers, counters or router
  version unknown).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.fleet import (
    FleetEvent,
    FleetEventSummary,
    FleetRecord,
    FleetSummary,
    FleetWorkerSummary,
    WorkerRequestCount,
)
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.summary import Finding, FindingCode, Severity
from evalpipe.audit.linkage import attempt_ok, parse_time
from evalpipe.errors import ArtifactError
from evalpipe.server.kinds.router import ATTRIBUTION, ROUTER_NAME, VERSION_NOT_REPORTED
from evalpipe.words.sentences import event_sentence

PATH = str(RunDir(Path(".")).fleet_json)  # as findings name it, relative to the run directory
BAD_VERDICTS = ("changed_generation", "refused")


def load_fleet(rd: RunDir, findings: list[Finding]) -> FleetRecord | None:
    """``server/fleet.json`` when the run went through a router (absent: not a fleet; unreadable: a finding)."""
    if not rd.fleet_json.is_file():
        return None
    try:
        return read_model(rd.fleet_json, FleetRecord)
    except ArtifactError as exc:
        detail = f": {exc.details[0]}" if exc.details else ""
        findings.append(
            Finding(severity="error", code="unreadable_artifact", path=PATH, message=exc.message + detail)
        )
        return None


def served(record: FleetRecord) -> dict[str, WorkerRequestCount] | None:
    """Requests each worker got during the evaluation (counters after − before), by URL; None unknown."""
    if record.requests_before is None or record.requests_after is None:
        return None
    before = {r.url: r for r in record.requests_before}
    out: dict[str, WorkerRequestCount] = {}
    urls = {w.url for w in record.start.workers} | {r.url for r in record.requests_after}
    after = {r.url: r for r in record.requests_after}
    for url in sorted(urls):
        a = after.get(url, WorkerRequestCount(url=url))
        b = before.get(url, WorkerRequestCount(url=url))
        out[url] = WorkerRequestCount(url=url, success=a.success - b.success, failure=a.failure - b.failure)
    return out


#: A worker whose health flipped may serve again: a warning; a worker that joined, left, became unreadable or
#: changed its configuration or version is an error.
_CHANGE_FINDING: dict[str, tuple[Severity, FindingCode]] = {
    "health_changed": ("warn", "fleet_worker_health_changed")
}
_ANY_OTHER_CHANGE: tuple[Severity, FindingCode] = ("error", "fleet_worker_changed")


def stayed_gone(record: FleetRecord) -> set[str]:
    """Workers verified at the start that the watch saw die and never come back: their end-of-run changes
    (left, unreadable, unhealthy) are the death, reported once as a warning."""
    verified = {w.url for w in record.start.workers if w.verified}
    last: dict[str, FleetEvent] = {}
    for e in record.events:
        last[e.url] = e
    return {url for url, e in last.items() if e.kind == "died" and url in verified}


def watch_changed(record: FleetRecord) -> set[str]:
    """Workers the watch saw change configuration or join unverified (reported with their answers)."""
    return {e.url for e in record.events if e.kind == "config_changed" or e.action in ("aborted", "marked")}


def event_summaries(
    record: FleetRecord, attempts: Sequence[RequestAttempt] | None
) -> list[FleetEventSummary]:
    """Each watch event joined with ``requests.jsonl``: for a death, the attempts that failed from the
    worker's last good poll until the proxy's re-sends were over, how many were sent again and whether any
    request was left unanswered; for a change let through (warn), the answers that reached EvalScope after
    the worker's last poll as verified."""
    out = []
    interval = timedelta(seconds=record.watch_interval_s or 0.0)
    sessions = [(e, True) for e in record.earlier_events] + [(e, False) for e in record.events]
    for e, earlier in sessions:
        row = FleetEventSummary(
            at=e.at,
            url=e.url,
            kind=e.kind,
            action=e.action,
            message=e.message,
            fields=list(e.fields),
            in_flight=len(e.in_flight),
            earlier_session=earlier,
        )
        since, seen = parse_time(e.last_seen_as_started), parse_time(e.at)
        if attempts is not None and since is not None and seen is not None:
            if e.kind == "died":
                until = _death_window_end(record, e, seen, interval, earlier=earlier)
                failed = [
                    a
                    for a in attempts
                    if not attempt_ok(a)
                    and a.x_request_id is not None
                    and (a.x_request_id in e.in_flight or _within(a, since, until))
                ]
                chats = [a for a in attempts if a.x_request_id is not None]
                resent = unanswered = 0
                for f in failed:
                    after = [
                        a
                        for a in chats
                        if a.messages_sha256 == f.messages_sha256 and a.started_at > f.started_at
                    ]
                    resent += bool(after)
                    unanswered += not any(attempt_ok(a) for a in after)
                row.failed_attempts, row.resent, row.unanswered = len(failed), resent, unanswered
            elif e.action == "marked":
                marked = [
                    a.x_request_id
                    for a in attempts
                    if attempt_ok(a)
                    and not a.client_disconnected
                    and a.x_request_id is not None
                    and (parse_time(a.ended_at) or since) > since
                ]
                row.answers_after_change, row.unverified_answers = len(marked), marked
        out.append(row)
    return out


def _death_window_end(
    record: FleetRecord, e: FleetEvent, seen: datetime, interval: timedelta, *, earlier: bool = False
) -> datetime:
    """Until when a failed attempt may be the dead worker's: taken out of a launched router's rotation at
    ``seen``, it gets nothing a moment later; otherwise until the next event on its URL or the end of its
    session (the end snapshot; for an earlier session, the resumed session's start, which verified it again)."""
    if e.action == "removed_from_router":
        return seen + 2 * interval
    events = [*record.earlier_events, *record.events]
    nxt = next((parse_time(x.at) for x in events if x.url == e.url and x.at > e.at), None)
    last = record.start if earlier else record.end
    end = parse_time(last.taken_at) if last is not None else None
    return nxt or end or datetime.max.replace(tzinfo=UTC)


def _within(a: RequestAttempt, start: datetime, end: datetime) -> bool:
    ended = parse_time(a.ended_at)
    return ended is not None and start <= ended <= end


def check_fleet(record: FleetRecord, attempts: Sequence[RequestAttempt] | None = None) -> list[Finding]:
    """Every finding ``fleet.json`` supports (see the module docstring); ``attempts`` (``requests.jsonl``)
    let the watch's events say which requests failed, were re-sent, or may come from a changed worker."""
    out: list[Finding] = []

    def add(severity: Severity, code: FindingCode, message: str) -> None:
        out.append(Finding(severity=severity, code=code, path=PATH, message=message))

    for problem in record.problems:
        add(
            "error",
            "fleet_not_verified",
            f"at the start of the run: {problem} (on_mismatch: {record.on_mismatch})",
        )
    if record.end is None:
        add(
            "error",
            "fleet_not_rechecked",
            "the router's workers were not read again at the end of the run: a worker that joined, left or "
            "changed its configuration during it would go unnoticed",
        )
    gone, changed = stayed_gone(record), watch_changed(record)
    for change in record.changes:
        if change.url in gone or change.url in changed:
            continue  # the watch saw it happen: reported below with its time and requests
        add(*_CHANGE_FINDING.get(change.kind, _ANY_OTHER_CHANGE), change.message)
    for ev in event_summaries(record, attempts):
        line = event_sentence(ev)
        if ev.earlier_session:  # the resumed session verified every worker again at its start
            before = f"before this run directory was resumed: {line}"
            if ev.action == "marked" or (ev.kind == "died" and ev.unanswered):
                # answers of an unverified worker may sit in EvalScope's cache; a lost request is still lost
                add("error", "fleet_worker_changed" if ev.action == "marked" else "fleet_worker_died", before)
            else:
                add("info", "fleet_earlier_session", before)
            continue
        if ev.kind == "died" and ev.url in gone:
            add(
                "warn" if not ev.unanswered else "error",
                "fleet_worker_died",
                line + " — it stayed gone; its answers came from the configuration verified at the start",
            )
        elif ev.kind in ("returned", "restarted"):
            add("info", "fleet_worker_returned", line)
        elif ev.action in ("aborted", "marked"):
            add("error", "fleet_worker_changed", line)
    if record.probe is None:
        add(
            "info",
            "router_request_field_unobservable",
            "request-field probe not run (router.probe_fields: false)",
        )
    else:
        for f in record.probe.fields:
            if f.verdict in BAD_VERDICTS:
                add(
                    "error",
                    "router_request_field",
                    f"the router {f.verdict.replace('_', ' ')} {f.field}: {f.detail}",
                )
            elif f.verdict == "not_observable":
                add(
                    "info",
                    "router_request_field_unobservable",
                    f"whether the router passes {f.field} on intact is not observable on these workers: {f.detail}",
                )
    counts = served(record)
    if counts is None:
        add(
            "info",
            "fleet_counters_unavailable",
            "requests per worker unknown: the router's Prometheus counters were not available (set "
            "server.router.metrics_url when attaching to a router)",
        )
    else:
        total = sum(c.success for c in counts.values())
        for w in record.start.workers:
            c = counts.get(w.url, WorkerRequestCount(url=w.url))
            if c.success == 0 and total > 0:
                add(
                    "warn",
                    "fleet_worker_idle",
                    f"worker {w.url} served none of the run's {total} request(s): what the run measured says "
                    "nothing about it",
                )
            if c.failure > 0:
                add("warn", "fleet_worker_failures", f"worker {w.url}: {c.failure} request(s) failed there")
    if record.router_retries:
        add(
            "warn",
            "router_retries",
            f"the router retried {record.router_retries} request(s) on another worker; those attempts are not in "
            "requests.jsonl (launch with router.disable_retries: true to record every attempt)",
        )
    if record.router_version is None:
        add(
            "info",
            "router_version_unknown",
            f"router version unknown: {VERSION_NOT_REPORTED}",
        )
    return out


def fleet_summary(record: FleetRecord, attempts: Sequence[RequestAttempt] | None = None) -> FleetSummary:
    """The fleet section of ``summary.json``: the router, each worker and its share of the run."""
    counts = served(record)
    total = sum(c.success for c in counts.values()) if counts is not None else 0
    workers = []
    for w in record.start.workers:
        c = counts.get(w.url) if counts is not None else None
        workers.append(
            FleetWorkerSummary(
                url=w.url,
                kv_cache_dtype=w.kv_cache_dtype,
                version=w.version,
                engine=w.engine,
                verified=w.verified,
                launched=w.launched,
                requests_ok=c.success if c is not None else None,
                requests_failed=c.failure if c is not None else None,
                share=round(c.success / total, 4) if c is not None and total else None,
            )
        )
    if counts is None:
        counters = "Requests per worker unknown (the router's Prometheus counters were not available)"
    else:
        counters = (
            "Requests per worker from the router's Prometheus counters (smg_worker_cb_outcomes_total) read "
            f"before and after the evaluation: {total} successful"
            + (f"; the router retried {record.router_retries}" if record.router_retries else "")
        )
    return FleetSummary(
        router_url=record.router_url,
        router_version=record.router_version,
        router_launched=record.router_launched,
        policy=record.policy,
        verified=record.verified
        and record.end is not None
        and not watch_changed(record)
        and all(c.url in stayed_gone(record) for c in record.changes),
        workers=workers,
        probe=list(record.probe.fields) if record.probe is not None else [],
        counters=counters,
        watch_interval_s=record.watch_interval_s,
        events=event_summaries(record, attempts),
        attribution=ATTRIBUTION,
    )


def fleet_limitations(record: FleetRecord) -> list[str]:
    """Lines for the report's limitations when the run went through a router."""
    n = len(record.start.workers)
    return [
        f"The run went through {ROUTER_NAME} to {n} worker(s); each was verified from its own server_info. "
        + ATTRIBUTION
    ]
