"""``parallel_variants: true`` with a ``speed:`` section: the speed rounds alternate across the variants' live
servers once every variant's evaluation is done (``evalpipe.speed.barrier``).

End to end on two answer-key servers (no GPU), the speed client replaced in the parent — which runs the
rounds — by a stand-in whose every round also asks *every* variant's server for ``/v1/models``: both servers
are up during every round, no evaluation request is in flight during any round (the recording proxies'
``requests.jsonl``), the rounds alternate ABBA, and the comparison and both reports say so.  A resumed run
with complete ``speed.json`` files measures nothing again.  A variant whose server dies during its evaluation
— or whose server dies while it waits at the barrier — releases the other (which finishes its own audit) and
the run stops with the usual exit code 4 and a resume line.  Variants run one after the other keep their own benchmark and "one after the other" wording
(``test_speed_pipeline.py``).
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from helpers.config import entry, write_config
from helpers.speed_client import StandInClient

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_barrier import Arrival, Release
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.config.speed import SpeedConfig
from evalpipe.processes.group import group_alive
from evalpipe.resolve import load_run
from evalpipe.run.variants import run_variants
from evalpipe.speed import run
from evalpipe.speed.barrier import BARRIER_DIR, RELEASE_JSON
from evalpipe.speed.clients.base import RoundPlan

DATA = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"
SAMPLERS = Path(__file__).resolve().parents[2] / "samplers" / "demo"
WORKLOAD = "in8-out4-c1"
ROUNDS = 4

#: A round of the probing stand-in: GET /v1/models on every variant's server (their URLs from the barrier's
#: arrival files), what each answered into probe.json, then the stand-in's own round (the rest of argv).
PROBE = """
import json, subprocess, sys, urllib.request
from pathlib import Path
out, urls, stand_in = Path(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3:]
answers = {}
for url in urls:
    with urllib.request.urlopen(url.rstrip("/") + "/v1/models", timeout=10) as response:
        answers[url] = response.status
out.write_text(json.dumps(answers))
sys.exit(subprocess.call(stand_in))
"""


class ProbingStandIn(StandInClient):
    """The stand-in client, whose every round first checks that every variant's server answers."""

    def argv(self, plan: RoundPlan, cfg: SpeedConfig) -> list[str]:
        barrier = plan.round_dir.parents[3] / BARRIER_DIR  # RUN/<variant>/speed/<workload>/round-NN
        urls = sorted(read_model(p, Arrival).base_url for p in barrier.glob("*.arrived.json"))
        probe = str(plan.round_dir / "probe.json")
        return [sys.executable, "-c", PROBE, probe, json.dumps(urls), *super().argv(plan, cfg)]


def _config(tmp: Path, *, benchmarks: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    sections: dict[str, Any] = {
        "name": "parallel-speed",
        "parallel_variants": True,
        "variants": [{"name": "a"}, {"name": "b"}],
        "generation": {
            "temperature": 0.0,
            "concurrency": 2,
            "request_timeout_s": 30,
            "default_max_tokens": 256,
        },
        "speed": {
            "rounds": ROUNDS,
            "workloads": [{"input_len": 8, "output_len": 4, "concurrency": 1, "prompts_per_round": 2}],
            "round_timeout_s": 60,
        },
        **extra,
    }
    return write_config(
        tmp / "parallel-speed.yaml",
        model={"path": "answer-key", "served_name": "answer-key"},
        server={"kind": "answer_key", "port": 0, "launch_timeout_s": 60, "stop_timeout_s": 10},
        benchmarks=benchmarks
        or [entry("gsm8k", total=3, subset="main", source={"local": str(DATA / "gsm8k")})],
        **sections,
    )


def _when(ts: str | None) -> datetime:
    assert ts is not None
    return datetime.fromisoformat(ts)


@pytest.fixture(scope="module")
def parallel_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One parallel run with the probing stand-in in this (the parent) process."""
    tmp = tmp_path_factory.mktemp("speed-parallel")
    patch = pytest.MonkeyPatch()
    patch.setattr(run, "make_client", lambda cfg, **_: ProbingStandIn())
    patch.setattr(run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))
    try:
        root = tmp / "run"
        run_variants(load_run(_config(tmp)), out=root)
        return root
    finally:
        patch.undo()


def _rounds(root: Path) -> list[tuple[str, Any]]:
    out = []
    for variant in ("a", "b"):
        artifact = read_model(RunDir(root / variant).speed_json, SpeedArtifact)
        out += [(variant, r) for r in artifact.rounds_for(WORKLOAD)]
    return sorted(out, key=lambda vr: vr[1].started_at)


def test_rounds_alternate_abba_on_both_live_servers(parallel_run: Path) -> None:
    launches = {v: read_model(parallel_run / v / "server" / "launch.json", LaunchRecord) for v in ("a", "b")}
    for variant in ("a", "b"):
        artifact = read_model(RunDir(parallel_run / variant).speed_json, SpeedArtifact)
        assert artifact.schedule == "alternating"
        assert artifact.server_url == launches[variant].base_url  # the server's own URL, never the proxy
        assert not RunDir(parallel_run / variant).speed_error.exists()
    rounds = _rounds(parallel_run)
    assert [(v, r.round_index) for v, r in rounds] == [
        ("a", 0), ("b", 0), ("b", 1), ("a", 1), ("a", 2), ("b", 2), ("b", 3), ("a", 3),
    ]  # fmt: skip
    assert all(r.complete for _, r in rounds)
    for (_, r), (_, nxt) in itertools.pairwise(rounds):
        assert r.finished_at <= nxt.started_at  # one client run at a time
    urls = sorted(launch.base_url for launch in launches.values())
    for variant, r in rounds:  # every server answered during every round, and was up around all of them
        probe = json.loads((parallel_run / variant / "speed" / WORKLOAD / f"round-{r.round_index + 1:02d}"
                            / "probe.json").read_text())  # fmt: skip
        assert probe == {url: 200 for url in urls}
        for launch in launches.values():
            assert _when(launch.ready_at) < r.started_at and r.finished_at < _when(launch.stopped_at)
    release = read_model(parallel_run / BARRIER_DIR / RELEASE_JSON, Release)
    assert release.outcome == "measured"


def test_no_evaluation_request_during_the_speed_rounds(parallel_run: Path) -> None:
    first_round = _rounds(parallel_run)[0][1].started_at
    attempts = [
        row
        for variant in ("a", "b")
        for row in read_jsonl(parallel_run / variant / "requests.jsonl", RequestAttempt)
        if isinstance(row, RequestAttempt)
    ]
    assert len(attempts) >= 6  # 3 samples per variant went through each proxy
    assert all(_when(a.ended_at) < first_round for a in attempts)
    for variant in ("a", "b"):  # the variant's server waited (speed_wait), then the rounds (speed), then stop
        stages = [s.stage for s in read_model(parallel_run / variant / "timings.json", StageTimings).stages]
        assert (
            stages.index("evalscope")
            < stages.index("speed_wait")
            < stages.index("speed")
            < stages.index("stop")
        )


def test_comparison_and_reports_say_the_rounds_alternated(parallel_run: Path) -> None:
    comparison = read_model(RunDir(parallel_run).speed_compare, SpeedComparison)
    assert (comparison.test, comparison.control, comparison.schedule) == ("a", "b", "alternating")
    for variant in ("a", "b"):
        md = (parallel_run / variant / "report.md").read_text()
        assert "once every variant's accuracy evaluation had finished" in md
        assert "the variants' rounds alternated in time (ABBA…) with every variant's server up" in md
        assert "one variant after the other" not in md and "right after its accuracy evaluation" not in md
        assert f"- {WORKLOAD} (a/b, {ROUNDS}+{ROUNDS} rounds): output throughput x" in md


def test_resume_with_complete_speed_files_measures_nothing_again(parallel_run: Path) -> None:
    before = {v: RunDir(parallel_run / v).speed_json.read_bytes() for v in ("a", "b")}
    patch = pytest.MonkeyPatch()

    def no_client(cfg: SpeedConfig, **_: object) -> StandInClient:
        raise AssertionError("a resumed run with complete speed.json files must not measure again")

    patch.setattr(run, "make_client", no_client)
    try:
        run_variants(load_run(parallel_run.parent / "parallel-speed.yaml"), resume=parallel_run)
    finally:
        patch.undo()
    assert {v: RunDir(parallel_run / v).speed_json.read_bytes() for v in ("a", "b")} == before
    assert read_model(RunDir(parallel_run).speed_compare, SpeedComparison).schedule == "alternating"
    for variant in ("a", "b"):
        stages = [s.stage for s in read_model(parallel_run / variant / "timings.json", StageTimings).stages]
        assert "speed_wait" not in stages  # no barrier: the server did not wait for anything


@pytest.mark.parametrize(
    ("victim", "other", "during"),
    [("b", "a", "during the evaluation"), ("a", "b", "during the wait for the speed rounds")],
    ids=["evaluating-variant-dies", "waiting-variant-dies"],
)
def test_a_variant_whose_server_dies_releases_the_other(
    tmp_path: Path, victim: str, other: str, during: str
) -> None:
    """b's server holds one IFEval answer (the duplicate_request fault) while a waits at the barrier; then one
    server is killed — b's (mid-evaluation) or a's (waiting): the other variant is released at once, finishes
    its audit with a speed_setup finding, and the run stops with the usual exit 4 and a resume line."""
    config = _config(
        tmp_path,
        benchmarks=[
            {
                "name": "ifeval",
                "subset": "default",
                "source": {"local": str(DATA / "ifeval")},
                "sampling": str(SAMPLERS / "ifeval.yaml"),
            }
        ],
        sampling_seed=42,  # the fault's item ranks first in its stratum under seed 42 (data/faults.json)
        generation={"temperature": 0.0, "concurrency": 2, "request_timeout_s": 15, "default_max_tokens": 256},
        variants=[
            {"name": "a"},
            {"name": "b", "overrides": {"answer_key": {"faults": ["duplicate_request"]}}},
        ],
        speed={
            "tokenizer": "gguf:smollm2",  # the real client is checked before the launch; it never runs here
            "rounds": 3,
            "workloads": [{"input_len": 8, "output_len": 4, "concurrency": 1, "prompts_per_round": 2}],
        },
    )
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "evalpipe.cli.entry", "run", str(config), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        arrived_a = out / BARRIER_DIR / "a.arrived.json"
        while not (arrived_a.is_file() and (out / "b" / "requests.jsonl").is_file()):
            assert proc.poll() is None and time.monotonic() < deadline, "a never reached the barrier"
            time.sleep(0.05)
        assert not (out / BARRIER_DIR / "b.arrived.json").exists()  # b is still evaluating (its held answer)
        pid = read_model(out / victim / "server" / "launch.json", LaunchRecord).pid
        assert pid is not None
        os.killpg(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)  # bounded: no variant waits for a release forever
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, stdout[-2000:] + stderr[-2000:]
    assert f"resume with: evalpipe run {config} --resume {out}" in stderr.splitlines()[-1]
    release = read_model(out / BARRIER_DIR / RELEASE_JSON, Release)
    assert release.outcome == "abandoned" and release.message.startswith(f"variant {victim} ended (exit 4)")
    assert RunDir(out / other).speed_error.read_text().startswith(f"variant {victim} ended (exit 4)")
    assert not list(out.glob(f"*/{RunDir(out).speed_json.name}"))
    summary = json.loads((out / other / "summary.json").read_text())  # the other finished: outcomes, audit
    assert "speed_setup" in {f["code"] for f in summary["findings"]}
    assert f"the server died {during}" in (out / victim / "logs" / "run.log").read_text()
    for launch in (read_model(p, LaunchRecord) for p in sorted(out.glob("*/server/**/launch.json"))):
        assert launch.pid is not None and not group_alive(launch.pid)
