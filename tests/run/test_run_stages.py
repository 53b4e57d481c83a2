"""The stage declarations of ``evalpipe.run.stages`` are true, and resume and ``timings.json`` follow from them.

One run on the answer-key server (the demo's GSM8K and C-Eval samples, a ``speed:`` section measured by the
stand-in client), then two resumes of copies of it:

* every output a stage declares as always written is in the run directory, and every file there is some
  stage's declared output or one of the runner's own (``RUNNER_FILES``);
* a resume keeps exactly the stages whose outputs are complete: the sample stage (the manifest reloads) and
  the speed stage (``speed.json`` holds every round) — and, with ``speed.json`` gone, the sample stage only;
* ``timings.json`` holds one entry per stage the plan declares, under the stage's name, in order, kept
  stages included.

Without a run: for every shape of plan, each stage's inputs are written by a stage before it.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest
from helpers.speed_client import StandInClient

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.config.loader import load_config
from evalpipe.config.models import AnswerKeyConfig, GateConfig, RunConfig
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.resolve import resolve
from evalpipe.run import pipeline
from evalpipe.run.options import (
    Coordination,
    ExtendedRun,
    FreshRun,
    Origin,
    ParentSpeed,
    ResumedRun,
    SampledRun,
    ServerTarget,
)
from evalpipe.run.pipeline import RunResult
from evalpipe.run.runner import RUNNER_FILES
from evalpipe.run.sample import Spine
from evalpipe.run.spec import RunSpec
from evalpipe.run.stages import declared_stages
from evalpipe.run.stages.base import RunFile
from evalpipe.run.stages.sampling import SAMPLE
from evalpipe.selftest.controls import demo_config_path
from evalpipe.speed import run as speed_run
from evalpipe.speed.barrier import VariantBarrier

#: What this run writes beyond the outputs every run of a stage writes: the answer-key server is launched
#: (its log, /server_info, /model_info, the preflight of a launched kind), and the speed stage measured.
EXPECTED_HERE = {
    "preflight": {"server/preflight.json"},
    "launch": {"server/server.log", "server/server_info.json", "server/model_info.json"},
    "speed": {"speed.json", "speed"},
}


def _config() -> RunConfig:
    cfg = load_config(demo_config_path())
    speed = SpeedConfig(
        workloads=[SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2)], rounds=3
    )
    server = cfg.server.model_copy(update={"answer_key": AnswerKeyConfig(mode="positive", faults=[])})
    out = cfg.model_copy(
        update={
            "variants": [],
            "benchmarks": [b for b in cfg.benchmarks if b.name in ("gsm8k", "ceval")],
            "gates": GateConfig(max_error_findings=100),
            "server": server,
            "speed": speed,
        }
    )
    out._config_path = cfg.config_path
    return out


@dataclass(frozen=True)
class Runs:
    plan: RunSpec
    first: RunResult
    resumed: RunResult
    resumed_plan: RunSpec
    without_speed: RunResult


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("stages")
    cfg = _config()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(speed_run, "make_client", lambda cfg, **_: StandInClient())
        patch.setattr(speed_run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))
        resolved = resolve(cfg)
        plan = RunSpec(resolved, FreshRun(out=root / "run"))
        first = pipeline.run(plan)
        shutil.copytree(root / "run", root / "resumed")
        with open(root / "resumed" / "requests.jsonl", "ab") as fh:  # a crash mid-write: the runner cuts it
            fh.write(b'{"attempt_id": "torn')
        resumed_plan = RunSpec(resolved, ResumedRun(root / "resumed"))
        resumed = pipeline.run(resumed_plan)
        shutil.copytree(root / "run", root / "without-speed")
        RunDir(root / "without-speed").speed_json.unlink()
        without_speed = pipeline.run(RunSpec(resolved, ResumedRun(root / "without-speed")))
    return Runs(plan, first, resumed, resumed_plan, without_speed)


def _files(rd: RunDir) -> list[PurePosixPath]:
    return sorted(PurePosixPath(p.relative_to(rd.root).as_posix()) for p in rd.root.rglob("*") if p.is_file())


def _present(declared: RunFile, files: list[PurePosixPath]) -> bool:
    return any(declared.covers(f) for f in files)


def test_every_output_a_stage_always_writes_is_there(runs: Runs) -> None:
    files = _files(runs.first.rundir)
    for stage in declared_stages(runs.plan):
        always = [f for f in stage.outputs if f.only is None]
        missing = [str(f.path) for f in always if not _present(f, files)]
        assert not missing, f"{stage.name}: declared outputs missing from the run: {missing}"
        here = [f for f in stage.outputs if str(f.path) in EXPECTED_HERE.get(stage.name, set())]
        assert {str(f.path) for f in here} == EXPECTED_HERE.get(stage.name, set())
        assert all(_present(f, files) for f in here), stage.name


@pytest.mark.parametrize("which", ["first", "resumed", "without_speed"])
def test_every_file_of_the_run_directory_is_declared(runs: Runs, which: str) -> None:
    result: RunResult = getattr(runs, which)
    undeclared = [
        str(f)
        for f in _files(result.rundir)
        if not any(s.writes(f) for s in declared_stages(runs.plan)) and not any(r.covers(f) for r in RUNNER_FILES)
    ]
    assert not undeclared, f"files no stage declares: {undeclared}"


def test_the_resumed_copy_cut_its_torn_record_outside_the_stages(runs: Runs) -> None:
    torn = runs.resumed.rundir.logs_dir / "torn_repairs.jsonl"
    assert torn.is_file() and "requests.jsonl" in torn.read_text(encoding="utf-8")
    assert _present(RUNNER_FILES[1], [PurePosixPath("logs/torn_repairs.jsonl")])


def test_a_resume_keeps_exactly_the_stages_whose_outputs_are_complete(runs: Runs) -> None:
    assert runs.first.kept == [] and not runs.first.resumed
    assert runs.resumed.kept == ["sample", "speed"]  # the manifest reloads; speed.json holds every round
    assert runs.without_speed.kept == ["sample"]  # speed.json gone: the benchmark ran again
    again = read_model(runs.without_speed.rundir.speed_json, SpeedArtifact)
    assert [r.complete for r in again.rounds_for("in8-out4-c1")] == [True, True, True]
    # the kept stages' outputs are the ones the run wrote: the manifest was reloaded, not re-sampled
    assert runs.resumed.manifest == read_model(runs.first.rundir.manifest, Manifest)
    assert runs.resumed.rundir.manifest.read_bytes() == runs.first.rundir.manifest.read_bytes()


@pytest.mark.parametrize("which", ["first", "resumed", "without_speed"])
def test_timings_json_holds_each_declared_stage_under_its_name(runs: Runs, which: str) -> None:
    result: RunResult = getattr(runs, which)
    timings = read_model(result.rundir.timings, StageTimings)
    names = [s.name for s in declared_stages(runs.plan)]
    assert [t.stage for t in timings.stages] == names
    assert [t.stage for t in result.timings] == names
    assert timings.utilisation is not None


def _spine(root: Path) -> Spine:
    return Spine(RunDir(root), Manifest(seed=1, benchmarks=[], entries=[]), {})


def _plans(tmp_path: Path) -> list[RunSpec]:
    cfg = _config()
    origins: list[Origin] = [
        FreshRun(),
        ResumedRun(tmp_path),
        ExtendedRun(tmp_path),
        SampledRun(_spine(tmp_path)),
        SampledRun(_spine(tmp_path), resuming=True),
    ]
    barrier = VariantBarrier(tmp_path / "barrier", "a", 1)
    roles = [Coordination(), Coordination(ParentSpeed()), Coordination(ParentSpeed(barrier))]
    runs = (resolve(cfg), resolve(cfg.accuracy_only()))
    plans = [RunSpec(c, o, ServerTarget(), r) for c in runs for o in origins for r in roles]
    return [*plans, RunSpec(runs[0], FreshRun(), audit=False)]


def _overlaps(a: RunFile, b: RunFile) -> bool:
    return a.path == b.path or a.covers(b.path) or b.covers(a.path)


def test_every_stage_input_is_written_by_a_stage_before_it(tmp_path: Path) -> None:
    for plan in _plans(tmp_path):
        # a caller's spine comes with the sample stage's files (the variants' copies, a replay's)
        written = list(SAMPLE.outputs) if isinstance(plan.origin, SampledRun) else []
        for stage in declared_stages(plan):
            for wanted in stage.inputs:
                assert any(_overlaps(wanted, f) for f in written), (
                    f"{stage.name} reads {wanted.path}: no stage before it writes it"
                )
            written += stage.outputs


def test_the_plan_declares_the_stages_its_options_call_for(tmp_path: Path) -> None:
    cfg = _config()
    resolved = resolve(cfg)
    names = [s.name for s in declared_stages(RunSpec(resolved, FreshRun()))]
    assert names == [
        "sample",
        "preflight",
        "launch",
        "materialize",
        "evalscope",
        "speed",
        "stop",
        "outcomes",
        "audit",
    ]
    sampled = declared_stages(RunSpec(resolve(cfg.accuracy_only()), SampledRun(_spine(tmp_path)), audit=False))
    assert [s.name for s in sampled] == [
        "preflight",
        "launch",
        "materialize",
        "evalscope",
        "stop",
        "outcomes",
    ]
    measured_by_parent = RunSpec(resolved, SampledRun(_spine(tmp_path)), coordination=Coordination(ParentSpeed()))
    assert "speed" not in [s.name for s in declared_stages(measured_by_parent)]
    barrier = Coordination(ParentSpeed(VariantBarrier(tmp_path, "a", 1)))
    at_barrier = list(declared_stages(RunSpec(resolved, SampledRun(_spine(tmp_path)), coordination=barrier)))
    assert [s.wall_time for s in at_barrier if s.name == "speed"] == [False]  # it times the wait apart
