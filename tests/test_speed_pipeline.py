"""``evalpipe run`` with a ``speed:`` section, end to end without GPUs: the demo's paired variants on the
answer-key server (C-Eval only, to keep it short), the speed client replaced by the stand-in
(``tests/helpers/speed_client.py``).  Each variant's benchmark runs on its own server after its evaluation
and before the server stops, ``speed_compare.json`` lands beside ``compare.json`` (first variant = test), and
both variants' reports carry the "Serving speed" section with the paired ratio.

The real client on the real engine: ``test_speed_real.py``; ``make demo-model`` runs the whole thing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from helpers.speed_client import StandInClient

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.config.loader import load_config
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.run.variants import run_variants
from evalpipe.selftest.controls import demo_config_path
from evalpipe.speed import run
from evalpipe.speed.compare import SpeedComparison
from evalpipe.speed.model import SpeedArtifact


@pytest.fixture(scope="module")
def speed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    patch = pytest.MonkeyPatch()
    patch.setattr(run, "make_client", lambda cfg, **_: StandInClient())
    patch.setattr(run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))
    try:
        cfg = load_config(demo_config_path())
        speed = SpeedConfig(
            workloads=[SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2)], rounds=3
        )
        small = cfg.model_copy(
            update={"benchmarks": [b for b in cfg.benchmarks if b.name == "ceval"], "speed": speed}
        )
        small._config_path = cfg.config_path
        root = tmp_path_factory.mktemp("speed-pipeline") / "run"
        run_variants(small, out=root)
        return root
    finally:
        patch.undo()


def test_each_variant_is_benchmarked_on_its_own_server_between_evaluation_and_stop(speed_run: Path) -> None:
    for variant in ("faults", "clean"):
        vdir = speed_run / variant
        artifact = read_model(vdir / run.SPEED_JSON, SpeedArtifact)
        launch = read_model(vdir / "server" / "launch.json", LaunchRecord)
        assert artifact.variant == variant and artifact.schedule == "single"
        assert artifact.server_url == launch.base_url  # the server's own URL, not the recording proxy
        rounds = artifact.rounds_for("in8-out4-c1")
        assert [r.complete for r in rounds] == [True, True, True]
        assert launch.ready_at is not None and launch.stopped_at is not None
        ready, stopped = datetime.fromisoformat(launch.ready_at), datetime.fromisoformat(launch.stopped_at)
        assert ready < rounds[0].started_at and rounds[-1].finished_at < stopped
        stages = [s.stage for s in read_model(vdir / "timings.json", StageTimings).stages]
        assert stages.index("evalscope") < stages.index("speed") < stages.index("stop")


def test_speed_compare_json_and_both_reports(speed_run: Path) -> None:
    comparison = read_model(speed_run / run.COMPARE_JSON, SpeedComparison)
    assert (comparison.test, comparison.control) == ("faults", "clean")  # as compare.json: first = test
    assert comparison.schedule == "sequential"  # one launch after the other: unpaired resampling
    for variant in ("faults", "clean"):
        md = (speed_run / variant / "report.md").read_text()
        assert "## Serving speed" in md and "### Speed ratio faults / clean" in md
        assert "rounds ran one variant after the other" in md
        assert "- in8-out4-c1 (faults/clean, 3+3 rounds): output throughput x1.00 [" in md
        assert "Input TPS (speed benchmark)" in md
