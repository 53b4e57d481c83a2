"""The fleet behind a router, audited from ``server/fleet.json`` alone.

A run through SGLang's router is one configuration only if every worker behind it was that configuration
for the whole run and every request field reached the workers with its effect.  ``fleet.json`` records the
workers at the start (each verified against the config) and at the end, the request-field probe and the
router's per-worker counters; the findings here turn each gap into a line naming the worker:

* errors — the fleet was not verified at the start (a run ``on_mismatch: warn`` let through), a worker
  joined, left, became unreadable or changed its configuration or version during the run, the fleet was
  not read again at the end, the router changed a request field so that generation changes;
* warnings — a worker served none of the run's requests, requests failed on a worker, the router retried
  requests on another worker (invisible in ``requests.jsonl``), a worker's health changed;
* info — what could not be checked (a field with no visible effect on these workers, counters or router
  version unknown).
"""

from __future__ import annotations

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.fleet import FleetRecord, FleetSummary, FleetWorkerSummary, WorkerRequestCount
from evalpipe.artifacts.schema.summary import Finding, FindingCode, Severity
from evalpipe.errors import ArtifactError

PATH = "server/fleet.json"
BAD_VERDICTS = ("changed_generation", "refused")
#: What the report says about per-worker accuracy through sglang-router (0.3.2): nothing can attribute it.
ATTRIBUTION = (
    "Accuracy per worker cannot be attributed through sglang-router: no response names the worker that "
    "produced it (the X-Request-Id each request carried reaches its worker, whose own log may name it); "
    "requests per worker come from the router's counters."
)


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


def check_fleet(record: FleetRecord) -> list[Finding]:
    """Every finding ``fleet.json`` supports (see the module docstring)."""
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
    for change in record.changes:
        add(*_CHANGE_FINDING.get(change.kind, _ANY_OTHER_CHANGE), change.message)
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
            "router version unknown: sglang-router reports none over HTTP (set server.router.version when "
            "attaching)",
        )
    return out


def fleet_summary(record: FleetRecord) -> FleetSummary:
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
        verified=record.verified and record.end is not None and not record.changes,
        workers=workers,
        probe=list(record.probe.fields) if record.probe is not None else [],
        counters=counters,
        attribution=ATTRIBUTION,
    )


def fleet_limitations(record: FleetRecord) -> list[str]:
    """Lines for the report's limitations when the run went through a router."""
    n = len(record.start.workers)
    return [
        f"The run went through SGLang's router to {n} worker(s); each was verified from its own server_info. "
        + ATTRIBUTION
    ]
