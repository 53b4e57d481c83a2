"""The fleet artifact: ``server/fleet.json`` — every worker behind a router, at the start and at the end.

A router (SGLang's ``sglang-router``) hides its workers: its own ``/server_info`` is 404 and
``/get_server_info`` is a stub, so a run through a router verifies nothing unless each worker is asked
directly.  This record names every worker the router listed (``URL@rank`` entries of one data-parallel
server folded into one worker), the sha256 of each worker's redacted resolved configuration, its version
and health, twice — so a worker that joined, left or changed its configuration while the run was going
on is visible afterwards (``changes``, computed by the router kind's ``snapshot.fleet_changes``) — and what
the fleet watch saw in between, as it happened (``events``: the router kind's ``watch``).

Secrets are stripped at the point of capture: a config hash is taken over the *redacted* ``/server_info``
and no payload is stored here.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row

#: What a field of a request did on its way through the router, judged by its observable effect.
FieldVerdict = Literal[
    "honoured",  # the answer through the router is one a worker gives directly for the same request
    "rewritten_harmlessly",  # honoured, and the router is known to rename/re-encode it on the way
    "changed_generation",  # the answer through the router is none of the workers' direct answers
    "refused",  # the router answered an error where the workers answered the request
    "not_observable",  # the field has no visible effect on these workers (nor reproducible answers)
]
FleetChangeKind = Literal[
    "joined", "left", "unreadable", "config_changed", "version_changed", "health_changed"
]
#: What the fleet watch saw happen to one worker while the evaluation ran (the router kind's ``watch``).
FleetEventKind = Literal[
    "died",  # its /server_info stopped answering (or the router stopped listing it)
    "returned",  # answering again on its URL with the configuration verified at the start
    "restarted",  # same configuration, but a new process (its /server_info startup_time changed)
    "config_changed",  # answering again (or still) with another resolved configuration
    "joined",  # a worker the start snapshot did not have
]
#: What evalpipe did about it.
FleetEventAction = Literal[
    "none",
    "removed_from_router",  # DELETE /workers/{id} on a router evalpipe launched: no request reaches it
    "readded_to_router",  # POST /workers after its /server_info matched the start again
    "aborted",  # on_mismatch: abort — the run stopped (resumable)
    "marked",  # on_mismatch: warn — answers from then on may come from an unverified worker
]


class FleetWorker(Row):
    """One worker (one HTTP server) as the router listed it and as it described itself."""

    url: str = Field(description="Base URL as the router lists it (``@rank`` suffixes removed).")
    query_url: str = Field(
        description="Where evalpipe asked for /server_info: ``url`` after the configured rewrite map."
    )
    router_ids: list[str] = Field(default_factory=list, description="The router's worker ids (one per rank).")
    dp_ranks: list[int] = Field(
        default_factory=list, description="Data-parallel ranks listed as ``URL@rank`` (empty without)."
    )
    model_id: str | None = Field(default=None, description="Model id the router registered it under.")
    healthy: bool = Field(description="Every entry of this worker was healthy in the router's /workers.")
    version: str | None = Field(default=None, description="``version`` from the worker's /server_info.")
    engine: str | None = Field(default=None, description="``engine`` from /server_info (non-SGLang workers).")
    kv_cache_dtype: str | None = Field(default=None, description="Resolved KV cache dtype (/server_info).")
    config_sha256: str | None = Field(
        default=None,
        description="sha256 of the canonical JSON of the redacted /server_info without runtime counters; "
        "None when /server_info could not be read (the worker is then unverified, never passed).",
    )
    server_info_error: str | None = Field(
        default=None, description="Why /server_info could not be read from this worker."
    )
    launched: bool = Field(default=False, description="evalpipe launched this worker (and stopped it).")
    files: str | None = Field(
        default=None,
        description="Run-directory folder with its server_info.json, verification.json (and server.log when "
        "launched), e.g. server/workers/0.",
    )
    verified: bool | None = Field(
        default=None,
        description="Start only: every value the config pins resolved as configured on this worker (top level "
        "and every internal_states entry); None when /server_info was unreadable (unverified, never passed).",
    )
    problems: list[str] = Field(
        default_factory=list,
        description="Start only: one line per mismatch, naming the worker and the field.",
    )


class FleetSnapshot(Row):
    """The fleet at one moment."""

    taken_at: str = Field(description="UTC ISO-8601 time the router's /workers was read.")
    workers: list[FleetWorker] = Field(default_factory=list)
    listed_entries: int = Field(description="Entries in the router's /workers (``URL@rank`` counted each).")


class FleetChange(Row):
    """A difference between the start and end snapshots: an error finding for the audit, unless the fleet
    watch saw that worker die and stay gone (its death is then a warning) or saw it change (reported with
    the answers that may come from it)."""

    kind: FleetChangeKind
    url: str
    before: str | None = None
    after: str | None = None
    message: str = Field(description="One line naming the worker and what changed.")


class FleetEvent(Row):
    """One change the fleet watch saw during the evaluation, when, and what was in flight then."""

    at: str = Field(description="UTC ISO-8601 time the watch saw the change.")
    last_seen_as_started: str | None = Field(
        default=None,
        description="UTC ISO-8601 time of the watch's last poll that found this worker as verified at the "
        "start: the change happened after it (answers from then on may come from the changed worker).",
    )
    kind: FleetEventKind
    url: str
    message: str = Field(description="One line naming the worker and, for a changed one, the field.")
    fields: list[str] = Field(
        default_factory=list, description="config_changed: the /server_info keys whose values differ."
    )
    in_flight: list[str] = Field(
        default_factory=list,
        description="X-Request-Id of every evaluation request the recording proxy had at the server at ``at`` "
        "or that ended after the worker's last good poll (``last_seen_as_started``): the change happened in "
        "between, and a router fails what a dying worker held before the watch can see it.",
    )
    action: FleetEventAction = "none"


class WorkerRequestCount(Row):
    """Requests the router sent one worker, from its Prometheus counters (``URL@rank`` folded)."""

    url: str
    success: int = 0
    failure: int = 0


class FieldProbe(Row):
    """One request field evalpipe relies on, sent through the router and directly to each worker."""

    field: str = Field(description="Request field, e.g. max_tokens or chat_template_kwargs.enable_thinking.")
    verdict: FieldVerdict
    detail: str = Field(description="One line: what was sent and what came back.")
    forwarded_as: str | None = Field(
        default=None, description="How this router version is known to forward the field (from discovery)."
    )


class RequestFieldProbe(Row):
    """The result of the router kind's request-field probe (``probe_request_fields``) at the start of a run."""

    router_version: str | None = None
    fields: list[FieldProbe] = Field(default_factory=list)
    x_request_id_echoed: bool | None = Field(
        default=None, description="The router returned the client's X-Request-Id (None: not checked)."
    )
    requests_sent: int = 0


class FleetRecord(Artifact):
    """``server/fleet.json``."""

    schema_version: int = 2
    router_url: str
    router_launched: bool = Field(
        description="evalpipe launched the router (kind: router) or attached to it."
    )
    policy: str | None = Field(default=None, description="Routing policy of a launched router.")
    on_mismatch: Literal["abort", "warn"] = "abort"
    verified: bool = Field(
        description="Every worker's /server_info was read and resolved the configured settings, the workers "
        "agree with each other, and the request-field probe found nothing that changes generation."
    )
    problems: list[str] = Field(
        default_factory=list,
        description="Why the fleet is not verified, one line each naming the worker and the field (a run "
        "with on_mismatch: abort stops on the first before any sample).",
    )
    router_version: str | None = Field(
        default=None,
        description="sglang-router version; sglang-router 0.3.2 does not report it over HTTP, so it is "
        "known only for a router evalpipe launched (package metadata) or when the config states it.",
    )
    router_version_source: Literal["package", "config", "unknown"] = "unknown"
    url_rewrites: dict[str, str] = Field(
        default_factory=dict, description="Listed worker URL prefix → URL evalpipe used instead."
    )
    start: FleetSnapshot
    end: FleetSnapshot | None = None
    changes: list[FleetChange] = Field(default_factory=list)
    requests_before: list[WorkerRequestCount] | None = None
    requests_after: list[WorkerRequestCount] | None = None
    router_retries: int | None = Field(
        default=None,
        description="Requests the router retried on another worker during the run (its own retries are "
        "invisible to requests.jsonl); None when Prometheus was not available.",
    )
    probe: RequestFieldProbe | None = None
    watch_interval_s: float | None = Field(
        default=None,
        description="Seconds between the fleet watch's polls of /workers and each worker's /server_info "
        "during the evaluation (None: not watched, e.g. a run directory from before the watch).",
    )
    events: list[FleetEvent] = Field(
        default_factory=list, description="What the fleet watch saw during the evaluation, in order."
    )
    earlier_events: list[FleetEvent] = Field(
        default_factory=list,
        description="What the watch saw in earlier sessions of this run directory (a run stopped — aborted, "
        "interrupted, killed — and resumed), oldest first: a resume writes a new record and keeps these.",
    )


class FleetWorkerSummary(Row):
    """One worker in ``summary.json``: what it resolved and what share of the run it served."""

    url: str
    kv_cache_dtype: str | None = None
    version: str | None = None
    engine: str | None = None
    verified: bool | None = None
    launched: bool = False
    requests_ok: int | None = Field(
        default=None, description="Successful requests during the run (router counters)."
    )
    requests_failed: int | None = None
    share: float | None = Field(
        default=None, description="requests_ok / all successful requests of the fleet."
    )


class FleetEventSummary(Row):
    """One fleet-watch event in ``summary.json``, joined with ``requests.jsonl``."""

    at: str
    url: str
    kind: FleetEventKind
    action: FleetEventAction
    message: str
    fields: list[str] = Field(default_factory=list)
    in_flight: int = Field(description="Evaluation requests at the server when the watch saw the change.")
    failed_attempts: int | None = Field(
        default=None,
        description="died: attempts that failed from the worker's last good poll until the proxy's re-sends "
        "were over (None: requests.jsonl unreadable).",
    )
    resent: int | None = Field(default=None, description="died: how many of those were sent again.")
    unanswered: int | None = Field(
        default=None, description="died: failed requests no later attempt answered (0: nothing was lost)."
    )
    answers_after_change: int | None = Field(
        default=None,
        description="config_changed / joined under on_mismatch: warn: answers that reached EvalScope after "
        "the worker's last poll as verified — any of them may come from the unverified worker.",
    )
    unverified_answers: list[str] = Field(
        default_factory=list,
        description="The X-Request-Id of each of those answers (requests.jsonl names the attempt; a worker's "
        "own log, where it logs X-Request-Id, tells which of them it served).",
    )
    earlier_session: bool = Field(
        default=False,
        description="Seen in an earlier session of this run directory, before it was resumed (fleet.json "
        "earlier_events); the workers were verified again when the resumed session started.",
    )


class FleetSummary(Row):
    """The fleet behind a router, as ``server/fleet.json`` recorded it."""

    router_url: str
    router_version: str | None = None
    router_launched: bool
    policy: str | None = None
    verified: bool
    workers: list[FleetWorkerSummary] = Field(default_factory=list)
    probe: list[FieldProbe] = Field(default_factory=list)
    counters: str = Field(description="Where requests per worker come from, or why they are unknown.")
    watch_interval_s: float | None = None
    events: list[FleetEventSummary] = Field(
        default_factory=list, description="What the fleet watch saw during the evaluation, in order."
    )
    attribution: str = Field(description="Whether accuracy can be attributed to each worker, said plainly.")
