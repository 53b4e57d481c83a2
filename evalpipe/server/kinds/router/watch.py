"""The fleet during the evaluation: a worker that dies, comes back, joins or changes configuration mid-run.

The start snapshot verifies every worker before the first sample and the end snapshot looks again after the
last; between the two a worker can be SIGKILLed, restarted on its URL with other flags, or replaced.  A
:class:`FleetWatch` polls the router's ``/workers`` and every worker's own ``/server_info`` (the router
hides both the worker and its configuration) every ``server.router.watch_interval_s`` while the evaluation
runs, and records each change in ``server/fleet.json`` (``events``) with its time and the X-Request-Id of
every request the recording proxy had in flight:

* **died** — its ``/server_info`` stopped answering.  On a router evalpipe launched it is taken out of the
  rotation at once (``DELETE /workers/{id}``: sglang-router 0.3.2 otherwise keeps sending it requests,
  answered 500, until three health checks failed); requests that failed under it are re-sent by the proxy.
  A worker verified at the start that stays gone is a warning: its answers came from a verified
  configuration.
* **returned** — answering again on its URL with the configuration verified at the start (same config
  sha256): put back into the rotation (``POST /workers``).  Until then it is unverified and serves nothing.
* **config_changed** — answering with another resolved configuration (restarted with other flags, or
  replaced on its URL).  ``on_mismatch: abort``: it stays out of the rotation and the run stops at once
  with one line naming the worker and the field (resumable with ``--resume``); ``warn``: it is put back,
  and the audit counts the answers that may have come from it.
* **restarted** — same configuration, new process (SGLang's ``startup_time`` changed) between two polls.
* **joined** — a worker the start snapshot did not have: verified only if it resolved exactly the
  configuration of the workers verified at the start; otherwise it is a change like the above.

The router's own view (``is_healthy``) lags by its health-check interval; the worker's ``/server_info``
is asked directly, so a restart is seen within one poll.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from evalpipe.artifacts import write_model
from evalpipe.artifacts.schema.fleet import FleetEvent, FleetEventAction, FleetEventKind, FleetRecord
from evalpipe.clock import utc_now
from evalpipe.errors import EvalpipeError
from evalpipe.server.kinds.router.client import FleetMember, RouterClient
from evalpipe.server.kinds.router.snapshot import config_sha256, config_view

log = logging.getLogger("evalpipe.server")

State = Literal["up", "gone", "changed"]
#: Shortest time between two polls when answers ask for them (under ``on_mismatch: abort`` every answer
#: waits for a poll begun after it): many answers at once share one poll; at most five polls a second.
MIN_GAP_S = 0.2


@dataclass
class WatchedWorker:
    """One worker as the watch knows it: what it was at the start and what it is now."""

    url: str
    query_url: str
    start_sha: str | None
    start_info: dict[str, Any] | None
    state: State = "up"
    out_of_rotation: bool = False
    last_seen_as_started: str | None = None
    started: str | None = None  # the process's own start time, when /server_info reports one


def process_start(info: dict[str, Any] | None) -> str | None:
    """What identifies a worker process's launch in its ``/server_info`` (runtime state, so not part of the
    config hash): SGLang's ``startup_time`` — a dict of that launch's phase durations in a live SGLang 0.5.17
    (``load_weight``, ``scheduler_e2e``, ``tokenizer_e2e`` …, measured anew at every launch and fixed for the
    process's life), a number in builds that report a start time — kept as the number, or the dict's canonical
    JSON as ``durations <sha256 prefix>``.  A new value with the same configuration is a restart."""
    if info is None:
        return None
    value = info.get("startup_time")
    states = info.get("internal_states")
    if value is None and isinstance(states, list) and states and isinstance(states[0], dict):
        value = states[0].get("startup_time")
    if isinstance(value, dict):
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
        return f"durations {hashlib.sha256(canonical.encode()).hexdigest()[:12]}"
    return None if value is None else str(value)


@dataclass
class FleetWatchPlan:
    """What ``fleet_session`` hands the run for the watch: the router, the record, and each worker's start."""

    client: RouterClient
    record: FleetRecord
    path: Path
    start_infos: dict[str, dict[str, Any] | None]
    on_mismatch: str
    router_launched: bool
    interval_s: float
    #: The values the workers must share, most telling first (``verdict.agreement_keys``): a changed worker
    #: is named by the first of them that changed.
    agreement: tuple[str, ...] = ()
    lock: threading.Lock = field(default_factory=threading.Lock)
    _watch: FleetWatch | None = None

    def watch(self) -> FleetWatch:
        """The run's one watch of this fleet (created on first use: it remembers each worker's state)."""
        if self._watch is None:
            self._watch = FleetWatch(self)
        return self._watch


def changed_fields(
    before: dict[str, Any], after: dict[str, Any], first: Sequence[str] = ()
) -> list[tuple[str, Any, Any]]:
    """``(key, before, after)`` for every configuration value that differs — top level, then each
    ``internal_states`` entry as ``internal_states[i].key`` (unless the top level already says the same) —
    the keys in ``first`` (what a fleet must share) first, in that order.  Runtime counters are not
    configuration.  Pure."""
    a, b = config_view(before), config_view(after)
    top_a = {k: v for k, v in a.items() if k != "internal_states"}
    top_b = {k: v for k, v in b.items() if k != "internal_states"}
    diffs = [
        (k, top_a.get(k), top_b.get(k))
        for k in sorted(top_a.keys() | top_b.keys())
        if top_a.get(k) != top_b.get(k)
    ]
    shown = {(k, x, y) for k, x, y in diffs}
    states_a, states_b = _states(a), _states(b)
    for i in range(max(len(states_a), len(states_b))):
        sa = states_a[i] if i < len(states_a) else {}
        sb = states_b[i] if i < len(states_b) else {}
        for k in sorted(sa.keys() | sb.keys()):
            if sa.get(k) != sb.get(k) and (k, sa.get(k), sb.get(k)) not in shown:
                diffs.append((f"internal_states[{i}].{k}", sa.get(k), sb.get(k)))

    def rank(diff: tuple[str, Any, Any]) -> int:
        name = diff[0].rsplit(".", 1)[-1]
        return first.index(name) if name in first else len(first)

    return sorted(diffs, key=rank)  # stable: within a rank, top level first, then by key


def _states(view: dict[str, Any]) -> list[dict[str, Any]]:
    states = view.get("internal_states")
    return [s if isinstance(s, dict) else {} for s in states] if isinstance(states, list) else []


def describe_change(url: str, diffs: list[tuple[str, Any, Any]]) -> str:
    """``worker http://b resolved kv_cache_dtype 'q4_0' (verified 'f16' at the start; +2 more fields)``."""
    if not diffs:
        return f"worker {url} changed its resolved configuration during the run"
    key, was, now = diffs[0]
    more = f"; +{len(diffs) - 1} more field(s)" if len(diffs) > 1 else ""
    return f"worker {url} resolved {key} {now!r} (verified {was!r} at the start{more})"


def _epoch(iso: str | None) -> float | None:
    return datetime.fromisoformat(iso).timestamp() if iso else None


class FleetWatch:
    """What the watch knows of each worker, kept for the whole run (the evaluation, then the speed stage);
    :meth:`running` polls every ``plan.interval_s`` in a thread of its own while a stage runs."""

    def __init__(self, plan: FleetWatchPlan) -> None:
        self.plan = plan
        self.in_flight: Callable[[float | None], list[str]] = lambda since: []
        self.on_abort: Callable[[str], None] = lambda line: None
        self.aborted: str | None = None
        #: time.time() at which the latest complete poll began (every worker looked at since then)
        self.last_poll_began = 0.0
        self._wake = threading.Event()  # a held answer asks for a poll now (not at the next interval)
        self.workers: dict[str, WatchedWorker] = {}
        now = utc_now()
        for w in plan.record.start.workers:
            self.workers[w.url] = WatchedWorker(
                url=w.url,
                query_url=w.query_url,
                start_sha=w.config_sha256,
                start_info=plan.start_infos.get(w.url),
                last_seen_as_started=now,
                started=process_start(plan.start_infos.get(w.url)),
            )

    # ------------------------------------------------------------------ thread
    @contextlib.contextmanager
    def running(
        self, *, in_flight: Callable[[float | None], list[str]], on_abort: Callable[[str], None]
    ) -> Iterator[None]:
        """Poll while the block runs; ``on_abort(line)`` is called (from the watch's thread) once when
        ``on_mismatch: abort`` must stop the run; ``in_flight(since)`` names the requests at the server now
        and those that ended after ``since`` (``time.time()``)."""
        self.in_flight, self.on_abort = in_flight, on_abort
        self.plan.record.watch_interval_s = self.plan.interval_s
        self._write()
        stop = threading.Event()
        thread = threading.Thread(target=self._run, args=(stop,), name="fleet-watch", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            self._wake.set()
            thread.join(timeout=max(30.0, self.plan.interval_s * 3))

    def _run(self, stop: threading.Event) -> None:
        """Poll every interval, or sooner when an answer waits for one (but never more often than
        ``MIN_GAP_S``: many answers at once share a poll)."""
        while True:
            self._wake.wait(self.plan.interval_s)
            if stop.is_set() or self.aborted is not None:
                return
            self._wake.clear()
            try:
                self.poll_once()
            except EvalpipeError as exc:  # the router itself is the server: its death ends the run elsewhere
                log.warning("fleet watch: %s", exc.message)
            except Exception as exc:  # a broken poll must not end the watch unseen: the next one may work
                log.warning("fleet watch: poll failed: %s: %s", type(exc).__name__, exc)
            stop.wait(min(MIN_GAP_S, self.plan.interval_s))

    # ------------------------------------------------------------------ one poll
    def verified_after(self, t: float) -> bool:
        """A poll that began after ``t`` (a ``time.time()``) has looked at every worker and nothing made
        the run stop: an answer that ended at ``t`` came from a verified worker (the proxy's gate under
        ``on_mismatch: abort``).  Not yet: a poll is asked for now."""
        if self.aborted is None and self.last_poll_began > t:
            return True
        self._wake.set()
        return False

    def poll_once(self) -> None:
        """Look at every worker once; record and act on what changed since the last poll."""
        began = time.time()
        client = self.plan.client
        try:
            listed = {m.url: m for m in client.members()}
        except EvalpipeError as exc:  # the workers are still asked directly; the router's death is not ours
            log.warning("fleet watch: %s", exc.message)
            listed = {}
        for url, worker in self.workers.items():
            member = listed.get(url) or FleetMember(url, worker.query_url, (), (), None, False)
            info, error = client.worker_server_info(member)
            if info is None:
                if worker.state != "gone":
                    self._died(worker, member, error)
                continue
            sha = config_sha256(info)
            if worker.start_sha is None:  # unreadable at the start: unverified all along (a start finding)
                worker.state = "up"
            elif sha == worker.start_sha:
                worker.last_seen_as_started = utc_now()
                started = process_start(info)
                if worker.state != "up":
                    self._returned(worker)
                elif started is not None and worker.started is not None and started != worker.started:
                    self._event(
                        "restarted",
                        worker,
                        f"worker {worker.url} restarted between two polls (its startup_time changed: "
                        f"{worker.started} → {started}) with the configuration verified at the start",
                    )
                worker.started = started or worker.started
            elif worker.state != "changed":
                self._changed(worker, member, info)
            if self.aborted is not None:
                return
        for url, member in listed.items():
            if url not in self.workers:
                self._joined(member)
                if self.aborted is not None:
                    return
        self.last_poll_began = began

    def _event(
        self,
        kind: FleetEventKind,
        worker: WatchedWorker,
        message: str,
        *,
        action: FleetEventAction = "none",
        fields: list[str] | None = None,
    ) -> FleetEvent:
        event = FleetEvent(
            at=utc_now(),
            last_seen_as_started=worker.last_seen_as_started,
            kind=kind,
            url=worker.url,
            message=message,
            fields=fields or [],
            # at the server now, or ended since the worker's last good poll: the change happened in between,
            # and a router fails what a dying worker had before the watch can see it
            in_flight=self.in_flight(_epoch(worker.last_seen_as_started)),
            action=action,
        )
        with self.plan.lock:
            self.plan.record.events.append(event)
        # a death or a return is the run's to survive (fleet.json and the report have it); a change let
        # through is a warning now; an abort says it in the run's one error line
        if action == "marked":
            log.warning("fleet watch: %s", message)
        else:
            log.info("fleet watch: %s", message)
        self._write()
        return event

    def _died(self, worker: WatchedWorker, member: FleetMember, error: str | None) -> None:
        worker.state = "gone"
        removed = self._remove(worker, member)
        self._event(
            "died",
            worker,
            f"worker {worker.url} stopped answering ({error or 'no answer'})"
            + ("; taken out of the router's rotation" if removed else ""),
            action="removed_from_router" if removed else "none",
        )

    def _returned(self, worker: WatchedWorker) -> None:
        worker.state = "up"
        added = self._readd(worker)
        self._event(
            "returned",
            worker,
            f"worker {worker.url} answers again with the configuration verified at the start"
            + ("; back in the router's rotation" if added else ""),
            action="readded_to_router" if added else "none",
        )

    def _changed(self, worker: WatchedWorker, member: FleetMember, info: dict[str, Any]) -> None:
        worker.state = "changed"
        diffs = changed_fields(worker.start_info or {}, info, self.plan.agreement)
        line = describe_change(worker.url, diffs)
        fields = [k for k, _, _ in diffs]
        if self.plan.on_mismatch == "abort":
            self._remove(worker, member)
            self._event("config_changed", worker, line, action="aborted", fields=fields)
            self._abort(line)
            return
        self._readd(worker)
        self._event(
            "config_changed",
            worker,
            line + " (on_mismatch: warn: its answers from then on are marked unverified)",
            action="marked",
            fields=fields,
        )

    def _joined(self, member: FleetMember) -> None:
        info, error = self.plan.client.worker_server_info(member)
        verified = {w.start_sha for w in self.workers.values() if w.start_sha is not None}
        sha = config_sha256(info) if info is not None else None
        reference = next((w.start_info for w in self.workers.values() if w.start_info is not None), None)
        worker = WatchedWorker(member.url, member.query_url, sha, info)
        self.workers[member.url] = worker
        if sha is not None and len(verified) == 1 and sha in verified:
            self._event(
                "joined", worker, f"worker {member.url} joined with the configuration verified at the start"
            )
            return
        why = (
            describe_change(member.url, changed_fields(reference or {}, info, self.plan.agreement))
            if info is not None
            else f"worker {member.url}: /server_info unreadable ({error}): unverified"
        )
        line = f"worker {member.url} joined the fleet during the run: " + why
        worker.state = "changed"
        if self.plan.on_mismatch == "abort":
            self._remove(worker, member)
            self._event("joined", worker, line, action="aborted")
            self._abort(line)
        else:
            self._event("joined", worker, line + " (on_mismatch: warn)", action="marked")

    def _abort(self, line: str) -> None:
        self.aborted = line
        self.on_abort(line)

    # ------------------------------------------------------------------ the router's rotation
    def _remove(self, worker: WatchedWorker, member: FleetMember) -> bool:
        """Take a worker out of a launched router's rotation (an attached router is never modified)."""
        if not self.plan.router_launched or worker.out_of_rotation:
            return worker.out_of_rotation
        for rid in member.router_ids:
            refused = self.plan.client.remove_worker(rid)
            if refused is not None:
                log.warning("fleet watch: could not remove %s from the router: %s", worker.url, refused)
                return False
        worker.out_of_rotation = bool(member.router_ids)
        return worker.out_of_rotation

    def _readd(self, worker: WatchedWorker) -> bool:
        """Put a worker evalpipe took out back into the launched router's rotation."""
        if not worker.out_of_rotation:
            return False
        refused = self.plan.client.add_worker(worker.url)
        if refused is not None:
            log.warning("fleet watch: could not put %s back into the router: %s", worker.url, refused)
            return False
        worker.out_of_rotation = False
        return True

    def _write(self) -> None:
        """fleet.json as it stands (written again at the end of the run by ``fleet_session``)."""
        with self.plan.lock:
            try:
                write_model(self.plan.path, self.plan.record)
            except OSError as exc:
                log.warning("fleet watch: could not write %s: %s", self.plan.path, exc)
