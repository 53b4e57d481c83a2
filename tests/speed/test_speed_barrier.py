"""The speed barrier of ``parallel_variants`` (``evalpipe.speed.barrier``) without servers: every wait ends
(release, a parent that has gone, the rounds' bound), a variant that ends first releases the others, a setup
error found at the barrier lands in every variant's ``speed_error.txt``, complete alternating ``speed.json``
files skip the barrier, and a parallel run refuses a client it cannot run before any variant launches.

End to end with two answer-key servers: ``test_speed_parallel.py``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers.speed_client import StandInClient

from evalpipe.artifacts import RunDir, read_model, write_model
from evalpipe.artifacts.schema.speed_barrier import Release, RoundsStarted
from evalpipe.clock import utc_now
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.errors import SpeedSetupError
from evalpipe.resolve import load_run
from evalpipe.speed import run
from evalpipe.speed.barrier import (
    RELEASE_JSON,
    STARTED_JSON,
    SpeedCoordinator,
    VariantBarrier,
    needs_barrier,
    rounds_bound_s,
)

WORKLOAD = SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2)
CFG = SpeedConfig(workloads=[WORKLOAD], rounds=3, round_timeout_s=5)


def _coordinator(tmp_path: Path, lines: list[str]) -> SpeedCoordinator:
    coordinator = SpeedCoordinator(
        directory=tmp_path / "barrier",
        cfg=CFG,
        out_dirs={"a": tmp_path / "a", "b": tmp_path / "b"},
        api_keys={"a": None, "b": None},
        served_model="m",
        base_dir=None,
        say=lines.append,
    )
    for d in coordinator.out_dirs.values():
        d.mkdir()
    coordinator.reset()
    return coordinator


def test_the_rounds_bound_covers_every_client_run() -> None:
    # 3 rounds x 1 workload x 2 variants, each at most 5 s + 2 x 10 s of stopping, + 60 s of checks
    assert rounds_bound_s(CFG, 2) == 6 * 25 + 60


def test_a_waiting_variant_is_released(tmp_path: Path) -> None:
    barrier = VariantBarrier(tmp_path, "a", parent_pid=os.getppid(), poll_s=0.01)
    barrier.arrive("http://127.0.0.1:1")
    write_model(tmp_path / STARTED_JSON, RoundsStarted(started_at=utc_now(), bound_s=60))
    write_model(
        tmp_path / RELEASE_JSON, Release(outcome="measured", message="2 variants", released_at=utc_now())
    )
    lines: list[str] = []
    waited, measured = barrier.wait(tmp_path, lines.append)
    assert waited >= 0 and measured >= 0 and not RunDir(tmp_path).speed_error.exists()
    assert lines == ["a: speed rounds released (measured: 2 variants)"]


def test_a_variant_stops_waiting_when_its_parent_has_gone(tmp_path: Path) -> None:
    barrier = VariantBarrier(tmp_path, "a", parent_pid=-1, poll_s=0.01)  # never our parent pid
    barrier.arrive("http://127.0.0.1:1")
    barrier.wait(tmp_path, lambda line: None)
    assert RunDir(tmp_path).speed_error.read_text() == (
        "the run that coordinates the speed rounds has gone; this variant stopped waiting\n"
    )


def test_a_variant_stops_waiting_after_the_rounds_bound(tmp_path: Path) -> None:
    barrier = VariantBarrier(tmp_path, "a", parent_pid=os.getppid(), poll_s=0.01)
    write_model(tmp_path / STARTED_JSON, RoundsStarted(started_at=utc_now(), bound_s=0.2))
    start = time.monotonic()
    _, measured = barrier.wait(tmp_path, lambda line: None)
    assert 0.2 <= time.monotonic() - start < 10 and measured >= 0.2
    assert "did not end within their bound of 0 s" in RunDir(tmp_path).speed_error.read_text()


def test_a_variant_that_ends_first_releases_the_others(tmp_path: Path) -> None:
    lines: list[str] = []
    coordinator = _coordinator(tmp_path, lines)
    VariantBarrier(coordinator.directory, "a", parent_pid=0).arrive("http://127.0.0.1:1")
    coordinator.step({})
    assert coordinator.released is None  # b is still evaluating
    coordinator.step({"b": 4})
    release = read_model(coordinator.directory / RELEASE_JSON, Release)
    assert coordinator.released == release.outcome == "abandoned"
    for d in ("a", "b"):
        assert (
            RunDir(tmp_path / d).speed_error.read_text().startswith("variant b ended (exit 4) before every")
        )
    coordinator.step({"b": 4, "a": 0})  # released once
    assert read_model(coordinator.directory / RELEASE_JSON, Release) == release


def test_every_variant_arrived_runs_alternating_rounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "make_client", lambda cfg, **_: StandInClient())
    monkeypatch.setattr(run, "check_reachable", lambda url, key: None)
    monkeypatch.setattr(run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))
    lines: list[str] = []
    coordinator = _coordinator(tmp_path, lines)
    RunDir(tmp_path / "a").speed_error.write_text("an earlier attempt\n")
    for name, url in (("a", "http://h:1"), ("b", "http://h:2")):
        VariantBarrier(coordinator.directory, name, parent_pid=0).arrive(url)
    coordinator.step({})
    assert coordinator.released == "measured" and not RunDir(tmp_path / "a").speed_error.exists()
    assert read_model(coordinator.directory / STARTED_JSON, RoundsStarted).bound_s == rounds_bound_s(CFG, 2)
    assert lines[0] == "speed: every variant's evaluation is done; rounds alternate across a / b (ABBA…)"
    assert [line.split(" round ")[0].split()[0] + line.split(" round ")[1][0] for line in lines[1:]] == [
        "a1", "b1", "b2", "a2", "a3", "b3",
    ]  # fmt: skip
    assert not needs_barrier(CFG, [tmp_path / "a", tmp_path / "b"])  # complete and alternating: kept


def test_a_setup_error_at_the_barrier_goes_to_every_speed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(url: str, key: str | None) -> None:
        raise SpeedSetupError(f"speed: no OpenAI-compatible server answers at {url}/v1/models")

    monkeypatch.setattr(run, "make_client", lambda cfg, **_: StandInClient())
    monkeypatch.setattr(run, "check_reachable", unreachable)
    coordinator = _coordinator(tmp_path, [])
    for name in ("a", "b"):
        VariantBarrier(coordinator.directory, name, parent_pid=0).arrive("http://h:1")
    coordinator.step({})
    assert coordinator.released == "not_run"
    for d in ("a", "b"):
        assert RunDir(tmp_path / d).speed_error.read_text() == (
            "speed: no OpenAI-compatible server answers at http://h:1/v1/models\n"
        )


def test_a_speed_json_measured_alone_or_incomplete_needs_the_barrier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run, "check_reachable", lambda url, key: None)
    assert not needs_barrier(None, [tmp_path])
    assert needs_barrier(CFG, [tmp_path])  # nothing measured yet
    run.run_speed(
        run.SpeedTarget("default", "http://h:1", tmp_path),
        run.SpeedRequest(CFG, "m", client=StandInClient(), context_length=4096),
    )
    assert needs_barrier(CFG, [tmp_path])  # complete, but "single": not paired with the other variant
    targets = [
        run.SpeedTarget("a", "http://h:1", tmp_path / "a"),
        run.SpeedTarget("b", "http://h:2", tmp_path / "b"),
    ]
    short = StandInClient(short_seeds=frozenset({43}))
    run.run_speed_alternating(targets, run.SpeedRequest(CFG, "m", client=short, context_length=4096))
    assert needs_barrier(CFG, [tmp_path / "a", tmp_path / "b"])  # round 2 incomplete: measured again


def test_a_parallel_run_refuses_a_client_it_cannot_run_before_any_launch(tmp_path: Path) -> None:
    from helpers.config import entry, write_config

    from evalpipe.run.variants import run_variants

    data = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"
    config = write_config(
        tmp_path / "c.yaml",
        model={"path": "answer-key", "served_name": "answer-key"},
        server={"kind": "answer_key", "port": 0},
        benchmarks=[entry("gsm8k", subset="main", source={"local": str(data / "gsm8k")})],
        parallel_variants=True,
        variants=[{"name": "a"}, {"name": "b"}],
        speed={"client": "evalscope", "tokenizer": None, "rounds": 3, "workloads": [WORKLOAD.model_dump()]},
    )
    with pytest.raises(SpeedSetupError) as info:
        run_variants(load_run(config), out=tmp_path / "run")
    assert str(info.value.message).startswith("speed.tokenizer: evalscope perf builds its random prompts")
    assert not list((tmp_path / "run").glob("*/server"))  # no variant launched anything
