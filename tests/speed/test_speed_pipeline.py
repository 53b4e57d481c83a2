"""``evalpipe run`` with a ``speed:`` section, end to end without GPUs: the demo's paired variants on the
answer-key server (the session's ``paired_demo`` run: GSM8K + C-Eval, shared with the A/A and replay tests),
the speed client replaced by the stand-in (``tests/helpers/speed_client.py``).  Each variant's benchmark
runs on its own server after its evaluation and before the server stops, ``speed_compare.json`` lands
beside ``compare.json`` (first variant = test, against the control), and both variants' reports carry the
"Serving speed" section with the paired ratio.

The real client on the real engine: ``test_speed_real.py``; ``make demo-model`` runs the whole thing."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from helpers.paired_demo import PairedDemo

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.timings import StageTimings


@pytest.fixture(scope="module")
def speed_run(paired_demo: PairedDemo) -> Path:
    """The session's paired demo run (``helpers/paired_demo.py``): its ``speed:`` section has one workload
    (in 8, out 4, concurrency 1, 2 prompts) over 3 rounds, measured by the stand-in client."""
    return paired_demo.rundir.root


def test_each_variant_is_benchmarked_on_its_own_server_between_evaluation_and_stop(speed_run: Path) -> None:
    for variant in ("faults", "clean", "clean_again"):
        vdir = speed_run / variant
        artifact = read_model(RunDir(vdir).speed_json, SpeedArtifact)
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
    comparison = read_model(RunDir(speed_run).speed_compare, SpeedComparison)
    assert (comparison.test, comparison.control) == ("faults", "clean")  # as compare.json: first = test
    assert comparison.schedule == "sequential"  # one launch after the other: unpaired resampling
    for variant in ("faults", "clean"):
        md = (speed_run / variant / "report.md").read_text()
        assert "## Serving speed" in md and "### Speed ratio faults / clean" in md
        assert "rounds ran one variant after the other" in md
        assert "- in8-out4-c1 (faults/clean, 3+3 rounds): output throughput x1.00 [" in md
        assert "Input TPS (speed benchmark)" in md
