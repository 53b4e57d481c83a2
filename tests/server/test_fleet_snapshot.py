"""fleet.json: worker config hashes (redacted, runtime counters ignored), the joined/left/changed
comparison, and the request-field probe's verdicts — pure functions, no server needed."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.fleet import FleetRecord, FleetSnapshot, FleetWorker
from evalpipe.server.kinds.router.client import FleetMember
from evalpipe.server.kinds.router.probe import Answer, Observations, default_checks, judge, request_body
from evalpipe.server.kinds.router.sglang_router import FORWARDING
from evalpipe.server.kinds.router.snapshot import config_sha256, config_view, fleet_changes, worker_record

FIXTURE = Path(__file__).parents[1] / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json"
PLANTED_KEY = "sk-evalpipe-PLANTED-fixture-key-0123456789abcdef"


def _info() -> dict[str, Any]:
    return dict(json.loads(FIXTURE.read_text(encoding="utf-8")))


def _member(url: str, healthy: bool = True) -> FleetMember:
    return FleetMember(
        url=url, query_url=url, router_ids=("id-" + url[-1],), dp_ranks=(), model_id="m", healthy=healthy
    )


def test_config_hash_ignores_runtime_counters_and_never_holds_the_key() -> None:
    info = _info()
    assert PLANTED_KEY in json.dumps(info)
    view = config_view(info)
    assert PLANTED_KEY not in json.dumps(view) and view["api_key"] == "***"
    busy = copy.deepcopy(info)
    busy["internal_states"][0]["last_gen_throughput"] = 1234.5
    busy["internal_states"][0]["memory_usage"] = {"kvcache": 61.2}
    busy["startup_time"] = 1764729999.0
    busy["status"] = "busy"
    assert config_sha256(busy) == config_sha256(info)
    for changed in ({"kv_cache_dtype": "bf16"}, {"version": "0.5.24"}):
        other = {**info, **changed}
        assert config_sha256(other) != config_sha256(info), changed
    nested = copy.deepcopy(info)
    nested["internal_states"][0]["kv_cache_dtype"] = "bf16"
    assert config_sha256(nested) != config_sha256(info)
    assert config_sha256({**info, "weird": float("nan")}) != config_sha256(info)  # NaN hashes, no crash


def test_worker_record_unreachable_is_unverified_not_passed() -> None:
    ok = worker_record(_member("http://a:1"), _info(), None)
    assert ok.kv_cache_dtype == "fp8_e4m3" and ok.version == "0.5.23" and ok.config_sha256
    gone = worker_record(_member("http://b:2"), None, "http://b:2/server_info: URLError: refused")
    assert gone.config_sha256 is None and gone.server_info_error and gone.kv_cache_dtype is None
    only_nested = {"internal_states": [{"kv_cache_dtype": "fp8_e5m2"}]}
    assert worker_record(_member("http://c:3"), only_nested, None).kv_cache_dtype == "fp8_e5m2"


def _snap(*workers: FleetWorker) -> FleetSnapshot:
    return FleetSnapshot(
        taken_at="2026-12-03T00:00:00+00:00", workers=list(workers), listed_entries=len(workers)
    )


def test_fleet_changes_names_each_worker_and_what_changed() -> None:
    a = worker_record(_member("http://a:1"), _info(), None)
    b = worker_record(_member("http://b:2"), _info(), None)
    c = worker_record(_member("http://c:3"), _info(), None)
    assert fleet_changes(_snap(a, b), _snap(a, b)) == []
    a2 = worker_record(
        _member("http://a:1"), {**_info(), "kv_cache_dtype": "bf16", "version": "0.5.24"}, None
    )
    b2 = worker_record(_member("http://b:2", healthy=False), _info(), None)
    changes = fleet_changes(_snap(a, b, c), _snap(b2, a2))
    assert [(ch.kind, ch.url) for ch in changes] == [
        ("config_changed", "http://a:1"),
        ("version_changed", "http://a:1"),
        ("health_changed", "http://b:2"),
        ("left", "http://c:3"),
    ]
    assert changes[1].message == "worker http://a:1 changed version during the run (0.5.23 → 0.5.24)"
    assert changes[3].message == "worker http://c:3 left the fleet during the run"
    joined = fleet_changes(_snap(a), _snap(a, c))
    assert [(ch.kind, ch.url, ch.message) for ch in joined] == [
        ("joined", "http://c:3", "worker http://c:3 joined the fleet during the run")
    ]
    unreadable_now = worker_record(_member("http://a:1"), None, "timeout")
    (lost,) = fleet_changes(_snap(a), _snap(unreadable_now))
    assert lost.kind == "unreadable" and lost.message == (
        "worker http://a:1: /server_info unreadable at the end of the run (timeout); "
        "its configuration over the run is unverified"
    )


def test_fleet_record_schema_version_first_and_round_trips() -> None:
    rec = FleetRecord(
        router_url="http://r:1",
        router_launched=True,
        verified=True,
        start=_snap(worker_record(_member("http://a:1"), _info(), None)),
    )
    data = json.loads(rec.model_dump_json())
    assert next(iter(data)) == "schema_version" and data["schema_version"] == 2
    assert FleetRecord.model_validate(data) == rec
    assert PLANTED_KEY not in rec.model_dump_json()


# --- the probe's verdicts -------------------------------------------------------------------------------


def _a(text: str, finish: str = "length", tokens: int = 12, n: int = 1) -> Answer:
    return Answer(200, tuple((text, None, finish) for _ in range(n)), tokens * n)


def _check(field: str) -> Any:
    return next(c for c in default_checks("enable_thinking") if c.field == field)


def test_seed_dropped_on_the_way_is_changed_generation() -> None:
    obs = Observations(
        direct={"http://a:1": [_a("cat sea"), _a("cat sea")], "http://b:2": [_a("sea cat"), _a("sea cat")]},
        control={"http://a:1": _a("moon wind"), "http://b:2": _a("wind moon")},
        routed=[_a("random one"), _a("sea cat")],
    )
    probe = judge(_check("seed"), obs, FORWARDING["0.3.2"]["seed"])
    assert probe.verdict == "changed_generation"
    assert probe.detail.startswith("temperature=1.5, seed=1234: router gave ")
    obs.routed = [_a("sea cat"), _a("cat sea")]
    assert judge(_check("seed"), obs, FORWARDING["0.3.2"]["seed"]).verdict == "honoured"


def test_max_tokens_is_judged_on_finish_reason_and_token_count() -> None:
    short = Answer(200, (("Once upon a", None, "length"),), 4)
    obs = Observations(
        direct={"http://a:1": [short, short]},
        control={"http://a:1": _a("Once upon a time in")},
        routed=[Answer(200, (("Different words", None, "length"),), 4)],  # same length: still honoured
    )
    probe = judge(_check("max_tokens"), obs, FORWARDING["0.3.2"]["max_tokens"])
    assert (
        probe.verdict == "rewritten_harmlessly" and probe.forwarded_as == "forwarded as max_completion_tokens"
    )
    obs.routed = [_a("a much longer answer", finish="stop", tokens=40)]
    probe = judge(_check("max_tokens"), obs, None)
    assert probe.verdict == "changed_generation"
    assert "not finish_reason length with completion_tokens == 4" in probe.detail


def test_not_observable_and_refused() -> None:
    same = _a("no thinking here")
    toggle = _check("chat_template_kwargs.enable_thinking")
    obs = Observations(direct={"http://a:1": [same, same]}, control={"http://a:1": same}, routed=[same, same])
    probe = judge(toggle, obs, None)
    assert probe.verdict == "not_observable" and "changes nothing on these workers" in probe.detail
    flaky = Observations(
        direct={"http://a:1": [_a("x"), _a("y")]}, control={"http://a:1": _a("z")}, routed=[_a("x")]
    )
    assert judge(_check("seed"), flaky, None).verdict == "not_observable"
    err = Answer(400, error='HTTP 400: {"error": "n must be 1"}')
    refused_direct = Observations(
        direct={"http://a:1": [err, err]}, control={"http://a:1": _a("x")}, routed=[err]
    )
    probe = judge(_check("n"), refused_direct, None)
    assert probe.verdict == "not_observable" and "the workers refuse it directly" in probe.detail
    two = _a("x", n=2)
    refused_by_router = Observations(
        direct={"http://a:1": [two, two]}, control={"http://a:1": _a("x")}, routed=[err]
    )
    probe = judge(_check("n"), refused_by_router, None)
    assert probe.verdict == "refused" and "HTTP 400" in probe.detail


def test_probe_request_keeps_the_runs_template_kwargs() -> None:
    body = request_body("m", {"chat_template_kwargs": {"enable_thinking": False}, "seed": 5}, {"foo": 1})
    assert body["chat_template_kwargs"] == {"foo": 1, "enable_thinking": False}
    assert body["seed"] == 5 and body["max_tokens"] == 12 and body["temperature"] == 0
    assert [c.field for c in default_checks(None)] == ["max_tokens", "temperature", "seed", "top_p", "n"]


def test_a_changed_worker_is_named_by_the_field_a_fleet_must_share_first() -> None:
    from evalpipe.server.kinds.router.watch import changed_fields, describe_change

    info = _info()
    assert changed_fields(info, copy.deepcopy(info)) == []
    busy = {**copy.deepcopy(info), "status": "busy"}  # runtime state is not configuration
    assert changed_fields(info, busy) == []
    other = copy.deepcopy(info)
    other["internal_states"][0]["kv_cache_dtype"] = "bf16"
    other["kv_cache_dtype"] = "bf16"
    other["zz_new_flag"] = 1
    diffs = changed_fields(info, other)
    assert [k for k, _, _ in diffs] == ["kv_cache_dtype", "zz_new_flag"]
    assert describe_change("http://b:2", diffs) == (
        "worker http://b:2 resolved kv_cache_dtype 'bf16' (verified 'fp8_e4m3' at the start; +1 more field(s))"
    )
    nested = copy.deepcopy(info)
    nested["internal_states"][0]["attention_backend"] = "triton"
    assert changed_fields(info, nested) == [("internal_states[0].attention_backend", "dsa", "triton")]


def test_a_restart_with_the_same_configuration_shows_in_the_process_start_time_only() -> None:
    from evalpipe.server.kinds.router.watch import process_start

    info = _info()
    again = {**copy.deepcopy(info), "startup_time": 1764800000.5}
    assert config_sha256(again) == config_sha256(info)  # the same configuration …
    assert process_start(info) != process_start(again) == "1764800000.5"  # … another process
    nested = {"internal_states": [{"startup_time": 12.0}]}
    assert process_start(nested) == "12.0" and process_start({"engine": "llama.cpp"}) is None


def test_a_live_sglang_startup_time_is_a_record_of_its_launch_not_a_start_time() -> None:
    """A live SGLang 0.5.17 reports ``startup_time`` as the phase durations of its launch (two launches of the
    DSA fixture: different records); each identifies its launch, and the same record is the same process."""
    from evalpipe.server.kinds.router.watch import process_start

    live = Path(__file__).resolve().parents[1] / "fixtures" / "sglang-0.5.17-dsa-live"
    one, two = (
        json.loads((live / f"server_info-{arm}.json").read_text(encoding="utf-8"))
        for arm in ("bf16_tilelang", "fp8_flashmla_kv")
    )
    assert isinstance(one["startup_time"], dict) and "load_weight" in one["startup_time"]
    first = process_start(one)
    assert first is not None and first.startswith("durations ") and first == process_start(copy.deepcopy(one))
    assert process_start(two) != first
