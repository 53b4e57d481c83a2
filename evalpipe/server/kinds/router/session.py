"""A fleet behind a router for the length of a run: verified before any sample, accounted for after.

Used by ``server.kind: router`` (evalpipe launched the router) and by ``kind: endpoint`` / ``--endpoint``
when the endpoint turns out to be a router (it lists workers on ``/workers``).  Before the first sample:

1. the router's listing: at least one healthy worker, every configured worker listed healthy;
2. each worker's own ``/server_info``, saved and verified against the config exactly as a single server's
   (``ServeContext.verify`` of the worker's member context: ``server/workers/<n>/``), then the workers
   judged together (``verdict``): a mismatch or disagreement names the worker and the field, an unreadable
   or unhealthy worker is unverified — with ``on_mismatch: abort`` the run stops here;
3. the request-field probe (``probe``): a field the router drops or rewrites so that generation changes is a
   problem like a mismatch;
4. ``server/fleet.json`` with the start snapshot, and the router's per-worker counters.

During the evaluation the run watches the fleet (``watch``, from the plan left on the handle):
a worker that dies, returns, joins or changes configuration is recorded as it happens.  After the evaluation
(also when it failed, not when it was interrupted): the end snapshot, what changed, and the counters again,
so the report can say which worker served how many requests.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evalpipe.artifacts import read_model, write_model
from evalpipe.artifacts.schema.fleet import FleetEvent, FleetRecord, FleetSnapshot, RequestFieldProbe
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.clock import utc_now
from evalpipe.errors import EvalpipeError, ServerError
from evalpipe.server import fetch
from evalpipe.server.chat_template import THINKING_TOGGLE, thinking_kwargs
from evalpipe.server.kinds.base import ServerHandle
from evalpipe.server.kinds.router.client import FleetMember, RouterClient, fold_workers
from evalpipe.server.kinds.router.probe import probe_request_fields
from evalpipe.server.kinds.router.snapshot import fleet_changes, take_snapshot, worker_record
from evalpipe.server.kinds.router.verdict import (
    WorkerCheck,
    agreement_keys,
    combined_verification,
    fleet_problems,
)
from evalpipe.server.kinds.router.watch import FleetWatchPlan

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig
    from evalpipe.server.kinds.base import ServeContext, ServerHandle

log = logging.getLogger("evalpipe.server")

#: Probe verdicts that make the fleet unverified: the field does not reach the workers with its effect.
BAD_VERDICTS = ("changed_generation", "refused")


@dataclass
class PlannedWorker:
    """A worker the config names: launched by evalpipe (``handle``) or running already (``handle`` None)."""

    url: str  # as the router was given it (and lists it)
    ctx: ServeContext  # its member context: files under server/workers/<n>/
    verify_as: ServerConfig  # the settings it must have resolved (the top-level ones)
    handle: ServerHandle | None = None
    ready_paths: tuple[str, ...] = ()


def attached_view(server: ServerConfig, url: str) -> ServerConfig:
    """What a worker evalpipe did not launch must resolve: the top-level settings, read as ``endpoint``
    reads a server (SGLang's names, or another engine's own when it reports one)."""
    return server.model_copy(update={"kind": "endpoint", "endpoint": url, "router": None})


@contextlib.contextmanager
def fleet_session(
    ctx: ServeContext,
    router: ServerHandle,
    client: RouterClient,
    *,
    planned: Sequence[PlannedWorker],
    router_version: str | None,
    version_source: Literal["package", "config", "unknown"],
    policy: str | None,
    launched: bool,
) -> Iterator[ServerHandle]:
    """Verify the fleet behind ``router`` (steps 1–4 above), yield ``router`` as the run's server with the
    fleet's combined verification, and record the end of the run in ``server/fleet.json``."""
    server = ctx.server
    settings = server.router_settings()
    entries = client.listed_workers()
    members = fold_workers(entries, client.rewrites)
    if not any(m.healthy for m in members):
        client.healthy_members()  # raises NoHealthyWorkers: one line with the router's own readiness
    healthy = {m.url for m in members if m.healthy}
    for p in planned:
        if p.url not in healthy:
            raise ServerError(
                f"worker {p.url} is not listed healthy by the router {client.url} (listed: "
                f"{', '.join(sorted(m.url for m in members)) or 'none'}): a worker whose /health does not "
                "answer 200 from the router's host is never registered"
            )

    by_url = {p.url: p for p in planned}
    checks: list[WorkerCheck] = []
    rows = []
    extra = len(planned)
    for member in sorted(members, key=lambda m: m.url):
        plan = by_url.get(member.url)
        if plan is None:  # a worker the router lists that the config does not name (attach mode)
            plan = PlannedWorker(
                member.url, ctx.member(str(extra), attached_view(server, member.query_url)),
                attached_view(server, member.query_url),
            )  # fmt: skip
            extra += 1
        check, row_info = _verify_member(ctx, plan, member)
        checks.append(check)
        record = worker_record(member, row_info, check.info_error)
        record.launched = plan.handle is not None and plan.handle.process is not None
        record.files = _relative(plan.ctx.files.dir, ctx.files.dir)
        rows.append(record)
    problems = fleet_problems(checks)
    for record, check in zip(rows, checks, strict=True):
        own = [p for p in problems if f"worker {check.url} " in p or f"worker {check.url}:" in p]
        record.problems = own
        record.verified = None if check.info is None else (check.healthy and not own)

    head = _head(router_version, policy, checks, ctx)
    verification = combined_verification(
        checks,
        problems,
        kind=server.kind,
        base_url=router.base_url,
        variant=router.launch.variant,
        on_mismatch=server.on_mismatch,
        head=head,
    )
    write_model(ctx.files.verification, verification)
    record_ = FleetRecord(
        router_url=client.url,
        router_launched=launched,
        policy=policy,
        on_mismatch=server.on_mismatch,
        verified=not problems,
        problems=list(problems),
        router_version=router_version,
        router_version_source=version_source,
        url_rewrites=dict(client.rewrites.mapping),
        start=FleetSnapshot(taken_at=utc_now(), workers=rows, listed_entries=len(entries)),
        earlier_events=_earlier_events(ctx.files.fleet),
    )
    write_model(ctx.files.fleet, record_)
    _judge(problems, server.on_mismatch, ctx)

    if settings.probe_fields:
        probe = _probe(ctx, client, [c for c in checks if c.healthy], router_version)
        record_.probe = probe
        bad = [
            f"router {client.url} {f.verdict.replace('_', ' ')}: {f.field} ({f.detail})"
            for f in probe.fields
            if f.verdict in BAD_VERDICTS
        ]
        if bad:  # the probe's own verdicts stay in record_.probe (the audit reports each)
            record_.verified = False
            verification.verified = False
            verification.description += " — request fields: " + "; ".join(bad)
            write_model(ctx.files.verification, verification)
        write_model(ctx.files.fleet, record_)
        _judge(bad, server.on_mismatch, ctx)

    before = client.request_counts()
    if before is not None:
        record_.requests_before = before[0]
    write_model(ctx.files.fleet, record_)
    router.verification = verification
    router.members = [p.handle for p in planned if p.handle is not None and p.handle.process is not None]
    router.fleet_watch = FleetWatchPlan(
        client=client,
        record=record_,
        path=ctx.files.fleet,
        start_infos={c.url: c.info for c in checks},
        on_mismatch=server.on_mismatch,
        router_launched=launched,
        interval_s=settings.watch_interval_s,
        agreement=agreement_keys(checks),
    )
    try:
        yield router
    except Exception:
        _finish(ctx, client, record_, before)
        raise
    else:
        _finish(ctx, client, record_, before)


def _verify_member(
    ctx: ServeContext, plan: PlannedWorker, member: FleetMember
) -> tuple[WorkerCheck, dict[str, Any] | None]:
    """Verify one worker through its member context; its redacted ``/server_info`` as saved (None when
    unreadable)."""
    handle = plan.handle
    if handle is None:
        handle = _attached_handle(ctx, plan, member)
    verification = plan.ctx.verify(handle, against=plan.verify_as, enforce=False)
    info: dict[str, Any] | None = None
    if verification.resolved_config_available:
        loaded = json.loads(plan.ctx.files.server_info.read_text(encoding="utf-8"))
        info = loaded if isinstance(loaded, dict) else None
    check = WorkerCheck(
        url=member.url,
        healthy=member.healthy,
        verification=verification,
        info=info,
        info_error=_unreadable_why(member, verification.server_info_error) if info is None else None,
        reader=plan.ctx.server_info_reader(verification.kind),
    )
    return check, info


def _unreadable_why(member: FleetMember, error: str | None) -> str:
    """Why a worker's ``/server_info`` could not be read, naming the address tried; when nothing answers
    there at all (the router reaches the worker, this host does not), what to do about it."""
    why = f"{member.query_url}: {error or 'no answer'}"
    if fetch.get(member.query_url + "/health", timeout=5.0).status is None:
        why += (
            "; the router reaches it, this host does not: map the listed address to one this host reaches "
            "in server.router.url_rewrites"
        )
    return why


def _attached_handle(ctx: ServeContext, plan: PlannedWorker, member: FleetMember) -> ServerHandle:
    """A handle for a worker evalpipe did not start (reached at its rewritten URL); its launch record says
    "attached" — nothing to wait for: the router has just listed it healthy."""
    now = utc_now()
    launch = LaunchRecord(
        kind=plan.verify_as.kind,
        variant=None,
        base_url=member.query_url,
        started_at=now,
        ready_at=now,
        stop_method="attached",
    )
    write_model(plan.ctx.files.launch, launch)
    return ServerHandle(base_url=member.query_url, launch=launch, server=plan.verify_as, api_key=ctx.api_key)


def _relative(path: Any, root: Any) -> str:
    try:
        return str(path.relative_to(root.parent))
    except ValueError:
        return str(path)


def _head(version: str | None, policy: str | None, checks: Sequence[WorkerCheck], ctx: ServeContext) -> str:
    """``sglang-router 0.3.2 (round_robin) over 2 workers (http://a, http://b): <first worker's head>``."""
    n = len(checks)
    urls = ", ".join(c.url for c in checks)
    head = f"sglang-router {version or '(version unknown)'}" + (f" ({policy})" if policy else "")
    head += f" over {n} worker{'s' if n != 1 else ''} ({urls})"
    first = next((c for c in checks if c.verification is not None and c.info is not None), None)
    if first is not None and first.verification is not None:
        head += ": " + ctx.describe_head(first.verification, first.info)
    return head


def _judge(problems: Sequence[str], on_mismatch: str, ctx: ServeContext) -> None:
    """Stop before any sample (``on_mismatch: abort``) with one line naming the worker and the field."""
    if not problems:
        return
    if on_mismatch == "abort":
        more = f" (+{len(problems) - 1} more in {ctx.files.fleet})" if len(problems) > 1 else ""
        raise ServerError(f"fleet not verified (on_mismatch: abort): {problems[0]}{more}")
    for line in problems:
        log.warning("fleet not verified (on_mismatch: warn): %s", line)


def _probe(
    ctx: ServeContext, client: RouterClient, checks: Sequence[WorkerCheck], version: str | None
) -> RequestFieldProbe:
    cfg = ctx.cfg
    urls = [c.verification.base_url for c in checks if c.verification is not None]
    return probe_request_fields(
        client.url,
        urls,
        cfg.model.served_name,
        thinking_toggle=THINKING_TOGGLE.get(cfg.model.reasoning_parser),
        chat_template_kwargs=thinking_kwargs(cfg),
        router_version=version,
        api_key=ctx.api_key,
        timeout_s=min(cfg.generation.request_timeout_s, 600.0),
    )


def _earlier_events(path: Path) -> list[FleetEvent]:
    """The events of the sessions before this one in the same run directory (``--resume``): this session
    writes a new record over ``fleet.json``, so what they saw is carried over, oldest first.  A record that
    cannot be read (a version before the watch, a damaged file) carries nothing and says so in the log."""
    if not path.is_file():
        return []
    try:
        earlier = read_model(path, FleetRecord)
    except EvalpipeError as exc:
        log.warning(
            "fleet: the earlier session's %s is unreadable, its events are not carried: %s", path, exc
        )
        return []
    return [*earlier.earlier_events, *earlier.events]


def _finish(
    ctx: ServeContext,
    client: RouterClient,
    record: FleetRecord,
    before: tuple[list[Any], int] | None,
) -> None:
    """The end snapshot, what changed, and the counters again (the router is still up).  Never raises: a
    failure here leaves ``end`` empty, which the audit reports."""
    try:
        end = take_snapshot(client)
        record.end = end
        record.changes = fleet_changes(record.start, end)
        after = client.request_counts()
        if after is not None:
            record.requests_after = after[0]
            record.router_retries = after[1] - before[1] if before is not None else None
    except EvalpipeError as exc:
        log.warning("fleet: could not read the workers again at the end of the run: %s", exc.message)
    write_model(ctx.files.fleet, record)
