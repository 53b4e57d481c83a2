"""The orchestration around the clients, driven by a stand-in client (``tests/helpers/speed_client.py``: a
real subprocess per round that writes a small result file): ABBA order, one ``speed.json`` per variant rewritten after every round, the
comparison file, a timed-out round killed and recorded, a superseded round directory kept.

The real clients are exercised in ``test_speed_real.py`` (evalscope perf) and ``test_speed_sglang.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.speed_client import StandInClient

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.speed import run

WORKLOAD = SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2)


@pytest.fixture(autouse=True)
def _no_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "check_reachable", lambda url, key: None)
    monkeypatch.setattr(run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))


def _cfg(**overrides: object) -> SpeedConfig:
    return SpeedConfig.model_validate({"workloads": [WORKLOAD.model_dump()], "rounds": 3, **overrides})


def test_rounds_alternate_and_every_variant_gets_the_same_seeds(tmp_path: Path) -> None:
    endpoints = {"slow": "http://h:1", "fast": "http://h:2"}
    artifacts, comparison = run.speed_command(
        run.SpeedRequest(_cfg(), "m", client=StandInClient()), endpoints, tmp_path, min_output_throughput_ratio=1.1
    )
    assert comparison is not None
    order = sorted(
        (json.loads((tmp_path / v / kept.path).read_text())["at"], v, r.round_index)
        for v in endpoints
        for r in artifacts[v].rounds_for(WORKLOAD.name)
        for kept in r.raw_files
        if kept.path.endswith("result.json")
    )
    assert [(v, i) for _, v, i in order] == [
        ("slow", 0), ("fast", 0), ("fast", 1), ("slow", 1), ("slow", 2), ("fast", 2),
    ]  # fmt: skip
    for v in endpoints:
        on_disk = read_model(RunDir(tmp_path / v).speed_json, SpeedArtifact)
        assert [r.seed for r in on_disk.rounds_for(WORKLOAD.name)] == [42, 43, 44]
        assert on_disk.schedule == "alternating" and on_disk.client.program == "stand-in"
        assert on_disk.rounds_for(WORKLOAD.name)[1].argv[-2] == "43"
    saved = read_model(RunDir(tmp_path).speed_compare, SpeedComparison)
    assert saved == comparison and (saved.control, saved.test) == ("slow", "fast")
    (w,) = saved.workloads
    assert w.verdict == "faster" and w.same_prompts is True and saved.gate_passed is True
    assert w.metrics[0].ratio == pytest.approx(121.0 / 101.0)


def test_a_round_that_overruns_is_killed_and_recorded(tmp_path: Path) -> None:
    cfg = _cfg(round_timeout_s=0.5)
    artifact = run.run_speed(
        run.SpeedTarget("default", "http://h:1", tmp_path), run.SpeedRequest(cfg, "m", client=StandInClient(sleep_s=30))
    )
    rounds = artifact.rounds_for(WORKLOAD.name)
    assert len(rounds) == 3 and all(
        r.timed_out and r.client_exit_code is None and not r.complete for r in rounds
    )
    assert rounds[0].problems[:2] == [
        "0 of 2 requests completed",
        "the client was stopped after 0.5 s (speed.round_timeout_s)",
    ]
    assert next(p.severity for p in artifact.problems if p.round_index == 0) == "error"
    assert all((r.finished_at - r.started_at).total_seconds() < 15 for r in rounds)


def test_a_rerun_keeps_the_earlier_round_directories(tmp_path: Path) -> None:
    run.run_speed(run.SpeedTarget("default", "http://h:1", tmp_path), run.SpeedRequest(_cfg(), "m", client=StandInClient()))
    run.run_speed(run.SpeedTarget("default", "http://h:1", tmp_path), run.SpeedRequest(_cfg(), "m", client=StandInClient()))
    names = sorted(p.name for p in (tmp_path / "speed" / WORKLOAD.name).iterdir())
    assert [n for n in names if "." not in n] == ["round-01", "round-02", "round-03"]
    assert sorted(n.split(".")[0] for n in names if ".superseded-" in n) == [
        "round-01",
        "round-02",
        "round-03",
    ]


def test_two_targets_with_one_name_are_refused(tmp_path: Path) -> None:
    targets = [
        run.SpeedTarget("a", "http://h:1", tmp_path / "a"),
        run.SpeedTarget("a", "http://h:2", tmp_path / "b"),
    ]
    with pytest.raises(run.SpeedSetupError, match="two targets share a variant name"):
        run.run_speed_alternating(targets, run.SpeedRequest(_cfg(), "m", client=StandInClient()))
