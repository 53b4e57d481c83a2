"""Fleet snapshots for ``fleet.json`` and the start/end comparison.

A worker's identity over a run is its base URL; its configuration is the sha256 of its redacted
``/server_info`` with the runtime counters taken out (throughput, memory, status, start time change while
the configuration does not).  Two workers on different ports never hash alike (``/server_info`` names
the port), so the hash answers "did *this* worker change", not "do two workers agree" — the per-field
verification of each worker against the config answers that.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from evalpipe.artifacts.redact import redact
from evalpipe.artifacts.schema.fleet import FleetChange, FleetSnapshot, FleetWorker
from evalpipe.hashing import sha256_json
from evalpipe.server.kinds.router.client import FleetMember, RouterClient, fold_workers

#: ``/server_info`` keys (top level and in each ``internal_states`` entry) that are runtime state, not
#: configuration: SGLang 0.5.23 reports throughput and memory there, and its start time and status.
VOLATILE_SERVER_INFO_KEYS = frozenset({"last_gen_throughput", "memory_usage", "status", "startup_time"})


def _finite(value: Any) -> Any:
    """NaN/infinity as strings, so the canonical JSON (which refuses them) can hash any payload."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def config_view(server_info: dict[str, Any]) -> dict[str, Any]:
    """The redacted ``/server_info`` without runtime counters (what the config hash is taken over)."""
    view: dict[str, Any] = {
        k: v for k, v in redact(server_info).items() if k not in VOLATILE_SERVER_INFO_KEYS
    }
    states = view.get("internal_states")
    if isinstance(states, list):
        view["internal_states"] = [
            {k: v for k, v in s.items() if k not in VOLATILE_SERVER_INFO_KEYS} if isinstance(s, dict) else s
            for s in states
        ]
    return dict(_finite(view))


def config_sha256(server_info: dict[str, Any]) -> str:
    return sha256_json(config_view(server_info))


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def resolved_kv_cache_dtype(server_info: dict[str, Any]) -> str | None:
    """``kv_cache_dtype`` at the top level, else from the first ``internal_states`` entry."""
    top = _str(server_info.get("kv_cache_dtype"))
    if top is not None:
        return top
    states = server_info.get("internal_states")
    if isinstance(states, list) and states and isinstance(states[0], dict):
        return _str(states[0].get("kv_cache_dtype"))
    return None


def worker_record(member: FleetMember, server_info: dict[str, Any] | None, error: str | None) -> FleetWorker:
    """One ``fleet.json`` worker row from what the router listed and what the worker reported."""
    info = server_info or {}
    return FleetWorker(
        url=member.url,
        query_url=member.query_url,
        router_ids=list(member.router_ids),
        dp_ranks=list(member.dp_ranks),
        model_id=member.model_id,
        healthy=member.healthy,
        version=_str(info.get("version")),
        engine=_str(info.get("engine")),
        kv_cache_dtype=resolved_kv_cache_dtype(info),
        config_sha256=config_sha256(server_info) if server_info is not None else None,
        server_info_error=error,
    )


def take_snapshot(client: RouterClient, *, now: datetime | None = None) -> FleetSnapshot:
    """List the router's workers and ask each for its ``/server_info`` (unreachable: recorded, not fatal)."""
    taken_at = (now or datetime.now(UTC)).isoformat()
    entries = client.listed_workers()
    workers = []
    for member in sorted(fold_workers(entries, client.rewrites), key=lambda m: m.url):
        info, error = client.worker_server_info(member)
        workers.append(worker_record(member, info, error))
    return FleetSnapshot(taken_at=taken_at, workers=workers, listed_entries=len(entries))


def fleet_changes(start: FleetSnapshot, end: FleetSnapshot) -> list[FleetChange]:
    """Workers that joined, left, became unreadable (or readable), changed configuration or version, or
    changed health between two snapshots, in URL order; each with one line naming the worker.  Pure."""
    before = {w.url: w for w in start.workers}
    after = {w.url: w for w in end.workers}
    out: list[FleetChange] = []
    for url in sorted(before.keys() | after.keys()):
        b, a = before.get(url), after.get(url)
        if b is None and a is not None:
            out.append(FleetChange(kind="joined", url=url, after=a.config_sha256,
                                   message=f"worker {url} joined the fleet during the run"))  # fmt: skip
            continue
        if a is None and b is not None:
            out.append(FleetChange(kind="left", url=url, before=b.config_sha256,
                                   message=f"worker {url} left the fleet during the run"))  # fmt: skip
            continue
        assert a is not None and b is not None
        if (a.config_sha256 is None) != (b.config_sha256 is None):
            when, err = (
                ("end", a.server_info_error) if a.config_sha256 is None else ("start", b.server_info_error)
            )
            out.append(
                FleetChange(
                    kind="unreadable",
                    url=url,
                    before=b.config_sha256,
                    after=a.config_sha256,
                    message=f"worker {url}: /server_info unreadable at the {when} of the run ({err}); "
                    "its configuration over the run is unverified",
                )
            )
        elif a.config_sha256 != b.config_sha256:
            out.append(
                FleetChange(
                    kind="config_changed",
                    url=url,
                    before=b.config_sha256,
                    after=a.config_sha256,
                    message=f"worker {url} changed its resolved configuration during the run "
                    f"(server_info sha256 {_short(b.config_sha256)} → {_short(a.config_sha256)})",
                )
            )
        if a.version != b.version and a.config_sha256 is not None and b.config_sha256 is not None:
            out.append(
                FleetChange(
                    kind="version_changed",
                    url=url,
                    before=b.version,
                    after=a.version,
                    message=f"worker {url} changed version during the run ({b.version} → {a.version})",
                )
            )
        if a.healthy != b.healthy:
            state = {True: "healthy", False: "unhealthy"}
            out.append(
                FleetChange(
                    kind="health_changed",
                    url=url,
                    before=state[b.healthy],
                    after=state[a.healthy],
                    message=f"worker {url} went from {state[b.healthy]} to {state[a.healthy]} during the run",
                )
            )
    return out


def _short(sha: str | None) -> str:
    return "none" if sha is None else sha[:12]
