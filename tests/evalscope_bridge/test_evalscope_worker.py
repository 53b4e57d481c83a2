"""One EvalScope worker process serves every benchmark of the stage (one EvalScope import, not one per
benchmark), one after another or side by side, and renders every prompt byte for byte as a worker of its
own per benchmark does; one benchmark's failure ends the worker, naming that benchmark.

Each test starts real EvalScope workers (seconds each); no request reaches a server unless a test says so.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from evalscope_helpers import picked_run, run_config
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import RunDir
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.protocol import Rendered
from evalpipe.evalscope_bridge.runner import EvalscopeFailed, WorkerProcess
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.evalscope_bridge.task import build_task
from evalpipe.resolve import resolve

#: Few-shot GSM8K (4 examples) and C-Eval (5, per subject), and IFEval: every kind of prompt assembly.
PICKS = {"ceval": ["accountant/0", "art_studies/3"], "ifeval": ["1162", "1051"]}

Task = tuple[str, dict[str, Any]]


@pytest.fixture(scope="module")
def materialized(
    tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path
) -> tuple[RunDir, list[Task]]:
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    lines = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    picks = {"gsm8k": [gsm8k_id(json.loads(line)["question"]) for line in lines], **PICKS}
    cfg = run_config({name: len(ids) for name, ids in picks.items()})
    rundir, manifest, datasets = picked_run(
        tmp_path_factory.mktemp("worker") / "run", cfg, picks, datasets_root=shared_datasets
    )
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    tasks = [
        (
            ds.benchmark,
            build_task(
                cfg,
                ds.benchmark,
                api_url="http://127.0.0.1:9/v1",  # nothing is sent: every benchmark is stopped once rendered
                dataset_dir=rundir.root / ds.path,
                subsets=ds.subsets,
                work_dir=rundir.evalscope_work_dir(ds.benchmark),
            ),
        )
        for ds in index_map.datasets
    ]
    return rundir, tasks


def _render(rundir: RunDir, tasks: list[Task], *, together: bool) -> dict[str, Rendered]:
    """Each benchmark's ``Rendered`` event from one worker started for ``tasks``; none is run."""
    out: dict[str, Rendered] = {}
    with WorkerProcess(rundir) as worker:
        worker.start(tasks, together=together)
        for name, _ in tasks:
            out[name] = worker.rendered(name)
            worker.stop(name)
        worker.wait_exit()
    return out


def _prompts(event: Rendered) -> dict[tuple[str, int], str]:
    return {(s.subset, s.index): s.prompt_sha256 for s in event.samples}


def test_one_worker_renders_every_prompt_as_a_worker_per_benchmark_does(materialized) -> None:
    rundir, tasks = materialized
    alone = {name: _render(rundir, [(name, task)], together=False)[name] for name, task in tasks}
    side_by_side = _render(rundir, list(reversed(tasks)), together=True)
    in_turn = _render(rundir, tasks, together=False)

    assert sorted(alone) == sorted(side_by_side) == sorted(in_turn) == ["ceval", "gsm8k", "ifeval"]
    for name in alone:
        expected = _prompts(alone[name])
        assert len(expected) == 2, name
        assert _prompts(side_by_side[name]) == expected, name
        assert _prompts(in_turn[name]) == expected, name
    # one process served all three benchmarks, in each schedule; a worker per benchmark is three processes
    assert len({e.pid for e in side_by_side.values()}) == 1
    assert len({e.pid for e in in_turn.values()}) == 1
    assert len({e.pid for e in alone.values()}) == 3
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    assert len(re.findall(r"worker pid \d+", log)) == 3 + 1 + 1
    assert not list(rundir.hf_cache_dir.iterdir())  # each worker's private HF cache is gone with it


def test_a_worker_started_before_the_run_directory_moves_into_it(materialized) -> None:
    """``evalpipe run`` starts its worker before the config is read (``prestart``): the first
    ``WorkerProcess`` takes it over, and once given its tasks it works from the run directory, writes to the
    run's EvalScope log (its import output first), renders the same prompts, and leaves no temporary home."""
    from evalpipe.evalscope_bridge import prestart as early

    rundir, tasks = materialized
    early.prestart()
    home = early._prestarted.home if early._prestarted is not None else None
    assert home is not None and home.is_dir()
    with open(home / "import.log", "a", encoding="utf-8") as log:  # as its import would
        log.write("planted import line\n")
    rendered: dict[str, Rendered] = {}
    with WorkerProcess(rundir) as worker:
        worker.start(tasks, together=False)
        assert early._prestarted is None  # taken over: a second worker would start afresh
        for name, _ in tasks:
            rendered[name] = worker.rendered(name)
            pid = rendered[name].pid
            assert pid == worker.pid
            assert Path(os.readlink(f"/proc/{pid}/cwd")) == rundir.root.resolve()
            for fd in (1, 2):
                assert Path(os.readlink(f"/proc/{pid}/fd/{fd}")) == rundir.evalscope_log.resolve()
            worker.stop(name)
        worker.wait_exit()
    assert not home.exists()
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    moved = log.rindex("before this run directory existed")
    assert log.index("planted import line", moved) > moved
    alone = _render(rundir, tasks, together=False)
    assert {n: _prompts(e) for n, e in rendered.items()} == {n: _prompts(e) for n, e in alone.items()}


def test_a_prestarted_worker_nobody_takes_is_ended_with_its_home() -> None:
    """A refused config, variants at once: the early worker is ended and its home removed."""
    from evalpipe.evalscope_bridge import prestart as early

    early.prestart()
    assert early._prestarted is not None
    proc, home = early._prestarted.proc, early._prestarted.home
    early.discard_prestarted()
    assert proc.poll() is not None and not home.exists()
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)
    early.discard_prestarted()  # idempotent


@pytest.mark.parametrize("schedule", ["pipelined", "sequential"])
def test_a_failing_benchmark_ends_the_shared_worker_naming_it(
    tmp_path: Path, shared_datasets: Path, schedule: str
) -> None:
    """IFEval's dataset no longer loads: the stage ends with IFEval's error, whichever benchmark's wait saw
    the worker end first; the worker's process group is gone and its cache removed."""
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    line = (shared_datasets / "gsm8k" / "test.jsonl").read_text(encoding="utf-8").splitlines()[0]
    cfg = run_config(
        {"gsm8k": 1, "ifeval": 1},
        generation={
            "concurrency": 2,
            "schedule": schedule,
            "max_tokens": {"gsm8k": 64},
            "request_timeout_s": 60,
        },
    )
    picks = {"gsm8k": [gsm8k_id(json.loads(line)["question"])], "ifeval": ["1162"]}
    rundir, manifest, datasets = picked_run(tmp_path / "run", cfg, picks, datasets_root=shared_datasets)
    index_map = materialize(rundir, manifest, datasets, resolve(cfg))
    (rundir.datasets_dir / "ifeval" / "default" / "train.jsonl").write_text("{not json\n", encoding="utf-8")
    with ScriptedServer([], default=Rule("", "The answer is \\boxed{1}.", delay_s=0.5)) as srv:
        with pytest.raises(EvalscopeFailed, match="EvalScope failed on ifeval") as info:
            run_evalscope(resolve(cfg), rundir, index_map, api_url=srv.base_url)
    assert "exit code 1" in info.value.details
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    (pid,) = re.findall(r"worker pid (\d+)", log)
    with pytest.raises(ProcessLookupError):
        os.killpg(int(pid), 0)  # nothing left in the worker's process group
    assert "Traceback" in log
    assert not list(rundir.hf_cache_dir.iterdir())


def test_the_run_starts_the_worker_early_and_stops_it_when_it_fails_before_the_stage(
    tmp_path: Path, shared_datasets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``evalpipe run`` starts the worker once the run directory exists (its EvalScope import overlaps the
    stages before the EvalScope stage); a run that fails before that stage stops it — nothing left in its
    process group, its cache removed, the log saying it was never given a task."""
    from evalpipe.errors import DataError
    from evalpipe.processes.group import group_alive
    from evalpipe.run import pipeline
    from evalpipe.run.options import FreshRun, ServerTarget
    from evalpipe.run.spec import RunSpec
    from evalpipe.run.stages import preparation

    spawned: list[int] = []
    spawn = WorkerProcess.spawn

    def recording_spawn(self: WorkerProcess) -> None:
        spawn(self)
        assert self.pid is not None
        spawned.append(self.pid)

    def failing_preflight(*args: Any, **kwargs: Any) -> Any:
        assert spawned and group_alive(spawned[0])  # started before the preflight stage, still running
        raise DataError("preflight failed (test)")

    monkeypatch.setattr(WorkerProcess, "spawn", recording_spawn)
    monkeypatch.setattr(
        preparation, "check_context_fit", failing_preflight
    )  # the name the preflight stage calls first
    cfg = run_config({"gsm8k": 1})
    out = tmp_path / "run"
    with pytest.raises(DataError, match="preflight failed"):
        pipeline.run(
            RunSpec(resolve(cfg), FreshRun(out, shared_datasets), ServerTarget(endpoint="http://127.0.0.1:9"))
        )
    rundir = RunDir(out)
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    assert re.findall(r"worker pid (\d+)", log) == [str(spawned[0])]
    with pytest.raises(ProcessLookupError):
        os.killpg(spawned[0], 0)  # nothing left in the worker's process group
    assert "the worker was stopped before it was given any task" in log
    assert not list(rundir.hf_cache_dir.iterdir())


def test_a_worker_given_no_task_exits_0_at_the_end_of_its_input(tmp_path: Path) -> None:
    """The parent closing stdin before the spec (a run that ended before its EvalScope stage) ends the worker
    at once with exit 0 once it has imported EvalScope — never a traceback or a wait."""
    rundir = RunDir(tmp_path / "run")
    rundir.root.mkdir()
    worker = WorkerProcess(rundir)
    try:
        worker.spawn()
        assert worker.proc is not None and worker.proc.stdin is not None
        worker.proc.stdin.close()
        assert worker.proc.wait(timeout=120) == 0
    finally:
        worker.close()
    log = rundir.evalscope_log.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log and "stopped before it was given any task" in log
