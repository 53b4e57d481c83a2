"""Judging a fleet, and auditing it from ``server/fleet.json`` (pure: canned payloads, no router).

Workers carry the real SGLang 0.5.23 ``/server_info`` of configs/glm-fp8.yaml, varied the way a fleet goes
wrong: one worker's KV cache, one data-parallel scheduler of one worker, one worker's SGLang build, a worker
that cannot be read.  Every problem is one line naming the worker and the field.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalpipe.artifacts.schema.fleet import (
    FieldProbe,
    FleetChange,
    FleetEvent,
    FleetRecord,
    FleetSnapshot,
    FleetWorker,
    RequestFieldProbe,
    WorkerRequestCount,
)
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.audit.fleet import ATTRIBUTION, check_fleet, fleet_summary
from evalpipe.config.loader import load_config
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.router.verdict import WorkerCheck, combined_verification, fleet_problems
from evalpipe.server.verify import verify

ROOT = Path(__file__).resolve().parents[2]
INFO = json.loads((ROOT / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json").read_text())
CFG = load_config(ROOT / "configs" / "glm-fp8.yaml", check_sampling=False)
A, B, C = "http://10.0.0.1:30000", "http://10.0.0.2:30000", "http://10.0.0.3:30000"


def _info(*, top: dict[str, Any] | None = None, states: dict[str, Any] | None = None) -> dict[str, Any]:
    info = copy.deepcopy(INFO)
    info.update(top or {})
    for state in info["internal_states"]:
        state.update(top or {})
    if states:
        info["internal_states"].append({**copy.deepcopy(info["internal_states"][0]), **states})
    return info


def _worker(url: str, info: dict[str, Any] | None, *, healthy: bool = True) -> WorkerCheck:
    v = verify(CFG, CFG.server, info, base_url=url, info_error=None if info else "/server_info: HTTP 404")
    reader = server_kind(CFG.server.kind).server_info_reader
    return WorkerCheck(
        url=url, healthy=healthy, verification=v, info=info, info_error=v.server_info_error, reader=reader
    )


def test_identical_workers_are_one_verified_configuration() -> None:
    fleet = [_worker(A, _info()), _worker(B, _info())]
    assert fleet_problems(fleet) == []
    v = combined_verification(fleet, [], kind="router", base_url="http://r:1", variant=None,
                              on_mismatch="abort", head="sglang-router 0.3.2 over 2 workers")  # fmt: skip
    assert v.verified and v.kv_cache_dtype == "fp8_e4m3" and v.tp_size == 8
    assert all(c.ok for c in v.checks) and v.description.endswith(
        "every worker verified from its own server_info"
    )


def test_a_worker_with_another_kv_cache_is_named_with_the_field() -> None:
    fleet = [_worker(A, _info()), _worker(B, _info(top={"kv_cache_dtype": "bfloat16"}))]
    problems = fleet_problems(fleet)
    assert problems[0] == (
        f"worker {B} resolved kv_cache_dtype 'bfloat16' (config 'fp8_e4m3'; {A}: 'fp8_e4m3')"
    )
    assert len(problems) == 1  # the disagreement is the same fact: not repeated
    v = combined_verification(fleet, problems, kind="router", base_url="http://r:1", variant=None,
                              on_mismatch="abort", head="h")  # fmt: skip
    kv = next(c for c in v.checks if c.key == "kv_cache_dtype")
    assert not v.verified and not kv.ok and v.kv_cache_dtype is None and "NOT verified" in v.description


def test_every_internal_state_counts_not_only_the_first() -> None:
    """One data-parallel scheduler of one worker fell back to BF16: the single-server check sees it too."""
    odd = _info(states={"kv_cache_dtype": "bfloat16"})
    single = verify(CFG, CFG.server, odd, base_url=B)
    assert not single.verified
    kv = next(c for c in single.checks if c.key == "kv_cache_dtype")
    assert kv.resolved == "internal_states[1]: 'bfloat16'"
    (problem,) = fleet_problems([_worker(A, _info()), _worker(B, odd)])
    assert problem.startswith(f"worker {B} resolved kv_cache_dtype \"internal_states[1]: 'bfloat16'\"")


def test_values_the_config_does_not_pin_must_still_agree() -> None:
    fleet = [_worker(A, _info()), _worker(B, _info()), _worker(C, _info(top={"version": "0.5.22"}))]
    assert fleet_problems(fleet) == [f"workers disagree on version: {A} '0.5.23', {B} '0.5.23', {C} '0.5.22'"]


def test_an_unreadable_or_unhealthy_worker_is_unverified_never_passed() -> None:
    fleet = [_worker(A, _info()), _worker(B, None), _worker(C, _info(), healthy=False)]
    problems = fleet_problems(fleet)
    assert problems == [
        f"worker {B}: /server_info unreadable (/server_info: HTTP 404): unverified",
        f"worker {C} is listed unhealthy by the router: unverified (it serves again once healthy)",
    ]
    v = combined_verification(fleet, problems, kind="endpoint", base_url="http://r:1", variant=None,
                              on_mismatch="warn", head="h")  # fmt: skip
    assert not v.verified and not all(c.ok for c in v.checks)  # B resolved nothing: no check is fleet-wide ok


# --- the audit of server/fleet.json ---------------------------------------------------------------------


def _fw(url: str, **kw: Any) -> FleetWorker:
    return FleetWorker(url=url, query_url=url, healthy=True, kv_cache_dtype="fp8_e4m3", config_sha256="c" * 64,
                       verified=True, **kw)  # fmt: skip


def _record(**kw: Any) -> FleetRecord:
    snap = FleetSnapshot(taken_at="2026-12-03T00:00:00+00:00", workers=[_fw(A), _fw(B)], listed_entries=2)
    base: dict[str, Any] = {
        "router_url": "http://r:31000",
        "router_launched": True,
        "router_version": "0.3.2",
        "verified": True,
        "start": snap,
        "end": snap,
        "requests_before": [WorkerRequestCount(url=A, success=4), WorkerRequestCount(url=B, success=4)],
        "requests_after": [WorkerRequestCount(url=A, success=84), WorkerRequestCount(url=B, success=84, failure=1)],
        "router_retries": 0,
        "probe": RequestFieldProbe(router_version="0.3.2", fields=[
            FieldProbe(field="seed", verdict="honoured", detail="d")]),
    }  # fmt: skip
    base.update(kw)
    return FleetRecord(**base)


def _codes(record: FleetRecord) -> list[tuple[str, str]]:
    return [(f.severity, f.code) for f in check_fleet(record)]


def test_a_clean_fleet_has_only_what_it_measured() -> None:
    record = _record()
    assert _codes(record) == [("warn", "fleet_worker_failures")]  # B: 1 failed request
    summary = fleet_summary(record)
    assert [(w.url, w.requests_ok, w.requests_failed, w.share) for w in summary.workers] == [
        (A, 80, 0, 0.5), (B, 80, 1, 0.5),
    ]  # fmt: skip
    assert summary.verified and summary.attribution == ATTRIBUTION and "cannot be attributed" in ATTRIBUTION


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"problems": [f"worker {B} resolved kv_cache_dtype 'bf16' (config 'fp8_e4m3')"], "verified": False,
          "on_mismatch": "warn"}, ("error", "fleet_not_verified")),
        ({"end": None}, ("error", "fleet_not_rechecked")),
        ({"changes": [FleetChange(kind="joined", url=C, message=f"worker {C} joined the fleet during the run")]},
         ("error", "fleet_worker_changed")),
        ({"changes": [FleetChange(kind="config_changed", url=A, message="m")]}, ("error", "fleet_worker_changed")),
        ({"changes": [FleetChange(kind="health_changed", url=A, message="m")]},
         ("warn", "fleet_worker_health_changed")),
        ({"probe": RequestFieldProbe(fields=[FieldProbe(field="seed", verdict="changed_generation", detail="d")])},
         ("error", "router_request_field")),
        ({"probe": RequestFieldProbe(fields=[FieldProbe(field="n", verdict="refused", detail="d")])},
         ("error", "router_request_field")),
        ({"probe": RequestFieldProbe(fields=[FieldProbe(field="n", verdict="not_observable", detail="d")])},
         ("info", "router_request_field_unobservable")),
        ({"probe": None}, ("info", "router_request_field_unobservable")),
        ({"requests_after": [WorkerRequestCount(url=A, success=164), WorkerRequestCount(url=B, success=4)]},
         ("warn", "fleet_worker_idle")),
        ({"router_retries": 3}, ("warn", "router_retries")),
        ({"requests_before": None, "requests_after": None}, ("info", "fleet_counters_unavailable")),
        ({"router_version": None}, ("info", "router_version_unknown")),
    ],
)  # fmt: skip
def test_each_gap_is_a_finding(changes: dict[str, Any], expected: tuple[str, str]) -> None:
    findings = check_fleet(_record(**changes))
    assert expected in [(f.severity, f.code) for f in findings]
    hit = next(f for f in findings if (f.severity, f.code) == expected)
    assert hit.path == "server/fleet.json" and hit.message


def test_an_idle_worker_is_named() -> None:
    record = _record(
        requests_after=[WorkerRequestCount(url=A, success=164), WorkerRequestCount(url=B, success=4)]
    )
    (idle,) = [f for f in check_fleet(record) if f.code == "fleet_worker_idle"]
    assert idle.message.startswith(f"worker {B} served none of the run's 160 request(s)")
    assert [w.share for w in fleet_summary(record).workers] == [1.0, 0.0]


def test_a_multi_node_instance_is_verified_from_rank_0_with_its_node_count() -> None:
    """Only node rank 0 serves HTTP: one URL, whose /server_info must report the configured nnodes."""
    multi_node = {"nnodes": 2, "dist_init_addr": "a:5000"}
    server = CFG.server.model_copy(update={"settings": {**CFG.server.settings, "multi_node": multi_node}})
    two = verify(CFG, server, _info(top={"nnodes": 2}), base_url=A)
    assert two.verified and ("nnodes", 2, 2) in [(c.key, c.expected, c.resolved) for c in two.checks]
    one = verify(CFG, server, _info(), base_url=A)  # started without --nnodes: a single-node instance
    assert not one.verified and "nnodes: config 2, server resolved 1" in one.description


# --- what the fleet watch saw during the evaluation (fleet.json events joined with requests.jsonl) -------


def _attempt(seq: int, at: str, status: int | None, prompt: str = "p", **kw: Any) -> RequestAttempt:
    return RequestAttempt(attempt_id=f"s-{seq:06d}", seq=seq, started_at=at, ended_at=at, method="POST",
                          path="/v1/chat/completions", body_sha256="b", messages_sha256=prompt, status=status,
                          x_request_id=f"evalpipe-s-{seq:06d}", **kw)  # fmt: skip


T0, T1, T2 = "2026-12-03T00:00:10+00:00", "2026-12-03T00:00:11+00:00", "2026-12-03T00:00:20+00:00"


def test_a_verified_worker_that_died_and_stayed_gone_is_a_warning_with_its_requests() -> None:
    died = FleetEvent(at=T1, last_seen_as_started=T0, kind="died", url=B, message=f"worker {B} stopped answering",
                      in_flight=["evalpipe-s-000002"], action="removed_from_router")  # fmt: skip
    left = FleetChange(kind="left", url=B, message=f"worker {B} left the fleet during the run")
    end = FleetSnapshot(taken_at=T2, workers=[_fw(A)], listed_entries=1)
    record = _record(events=[died], changes=[left], end=end, watch_interval_s=0.5)
    attempts = [
        _attempt(1, "2026-12-03T00:00:09+00:00", 200, "q"),
        _attempt(2, "2026-12-03T00:00:10.500000+00:00", 500),  # in flight at the kill: failed
        _attempt(3, "2026-12-03T00:00:11.200000+00:00", 200),  # its re-send, answered
        _attempt(4, "2026-12-03T00:00:15+00:00", 500, "r"),  # long after the removal: not the dead worker's
        _attempt(5, "2026-12-03T00:00:16+00:00", 200, "r"),
    ]
    findings = check_fleet(record, attempts)
    assert ("error", "fleet_worker_changed") not in [(f.severity, f.code) for f in findings]
    (dead,) = [f for f in findings if f.code == "fleet_worker_died"]
    assert dead.severity == "warn" and dead.message.startswith(f"{T1}: worker {B} stopped answering")
    assert (
        "1 request(s) in flight; 1 attempt(s) failed there, 1 re-sent, every request answered" in dead.message
    )
    summary = fleet_summary(record, attempts)
    assert summary.verified and summary.watch_interval_s == 0.5
    (ev,) = summary.events
    assert (ev.in_flight, ev.failed_attempts, ev.resent, ev.unanswered) == (1, 1, 1, 0)
    lost = check_fleet(record, attempts[:2])  # no later attempt answered it: a sample was lost
    assert ("error", "fleet_worker_died") in [(f.severity, f.code) for f in lost]


def test_a_worker_that_came_back_verified_is_info_and_a_change_let_through_counts_its_answers() -> None:
    died = FleetEvent(at=T0, kind="died", url=B, message="m", last_seen_as_started=T0)
    back = FleetEvent(
        at=T1, kind="returned", url=B, message=f"worker {B} answers again", last_seen_as_started=T1
    )
    assert ("info", "fleet_worker_returned") in _codes(_record(events=[died, back]))
    changed = FleetEvent(at=T1, last_seen_as_started=T0, kind="config_changed", url=B, action="marked",
                         fields=["kv_cache_dtype"], message=f"worker {B} resolved kv_cache_dtype 'q4_0'")  # fmt: skip
    attempts = [
        _attempt(1, "2026-12-03T00:00:09+00:00", 200),  # before: verified
        _attempt(2, "2026-12-03T00:00:12+00:00", 200, "q"),
        _attempt(3, "2026-12-03T00:00:13+00:00", 200, "r", client_disconnected=True),  # never used
        _attempt(4, "2026-12-03T00:00:14+00:00", 500, "s"),
    ]
    record = _record(events=[changed], changes=[FleetChange(kind="config_changed", url=B, message="end")])
    (hit,) = [f for f in check_fleet(record, attempts) if f.code == "fleet_worker_changed"]
    assert (
        hit.severity == "error" and "1 answer(s) since its last verified poll may come from it" in hit.message
    )
    summary = fleet_summary(record, attempts)
    assert not summary.verified and summary.events[0].unverified_answers == ["evalpipe-s-000002"]


def test_a_resumed_run_keeps_and_judges_the_earlier_sessions_events(tmp_path: Path) -> None:
    """A run stopped (aborted, interrupted) and resumed writes a new fleet.json: the events of the session
    before are carried over (``earlier_events``) and judged knowing the resumed session verified every worker
    again — an abort or a death whose requests were all answered is information, answers let through from a
    changed worker (warn: they may sit in EvalScope's cache) stay an error."""
    from evalpipe.artifacts import write_model
    from evalpipe.server.kinds.router.session import _earlier_events

    aborted = FleetEvent(at=T0, last_seen_as_started=T0, kind="config_changed", url=B, action="aborted",
                         fields=["kv_cache_dtype"], message=f"worker {B} resolved kv_cache_dtype 'q4_0'")  # fmt: skip
    first = _record(events=[aborted])
    path = tmp_path / "fleet.json"
    assert _earlier_events(path) == []  # a first session has none
    write_model(path, first)
    carried = _earlier_events(path)
    assert carried == [aborted]
    second = _record(events=[], earlier_events=carried)
    write_model(path, second)
    third = _record(events=[], earlier_events=_earlier_events(path))
    assert third.earlier_events == [aborted]  # a second resume keeps them, oldest first
    findings = check_fleet(third, [])
    (earlier,) = [f for f in findings if f.code == "fleet_earlier_session"]
    assert earlier.severity == "info" and earlier.message.startswith(
        "before this run directory was resumed: "
    )
    assert "fleet_worker_changed" not in [f.code for f in findings]
    (ev,) = fleet_summary(third, []).events
    assert ev.earlier_session and ev.action == "aborted"

    marked = aborted.model_copy(update={"action": "marked"})
    let_through = _record(events=[], earlier_events=[marked])
    answered = [_attempt(1, "2026-12-03T00:00:12+00:00", 200)]
    assert ("error", "fleet_worker_changed") in [
        (f.severity, f.code) for f in check_fleet(let_through, answered)
    ]
    path.write_text("{not json", encoding="utf-8")
    assert _earlier_events(path) == []  # unreadable: nothing carried (logged), the run goes on
