"""Paired variants at the same time (``parallel_variants: true``), each behind its own real router.

Each variant is ``server.kind: router`` over one answer-key worker (launched by evalpipe), on free ports:
nothing shared, so both run at once — their routers are up at the same time — and are compared as usual.
A SIGTERM to evalpipe stops both (each its own router and worker) with one resume line; the resumed run
finishes both.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import yaml

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.fleet import FleetRecord
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.processes.group import group_alive

DATA = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"


def _config(tmp: Path) -> Path:
    cfg = {
        "name": "parallel",
        "model": {"path": "answer-key", "served_name": "answer-key"},
        "server": {
            "kind": "router",
            "port": 0,
            "launch_timeout_s": 60,
            "stop_timeout_s": 10,
            "router": {"probe_fields": False, "workers": [{"kind": "answer_key"}]},
        },
        "parallel_variants": True,
        "variants": [{"name": "a"}, {"name": "b"}],
        "generation": {
            "temperature": 0.0,
            "concurrency": 2,
            "request_timeout_s": 30,
            "default_max_tokens": 256,
        },
        "benchmarks": [
            {
                "name": "gsm8k",
                "subset": "main",
                "source": {"local": str(DATA / "gsm8k")},
                "sampling": {"stratify_by": "none", "total": 3, "allocation": "uniform"},
            }
        ],
    }
    path = tmp / "parallel.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalpipe.cli.entry", *args]


def _launches(out: Path) -> list[LaunchRecord]:
    return [read_model(p, LaunchRecord) for p in sorted(out.glob("*/server/**/launch.json"))]


def _when(ts: str | None) -> float:
    assert ts is not None
    return datetime.fromisoformat(ts).timestamp()


def test_variants_run_at_the_same_time_on_their_own_routers(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(_cli("run", str(_config(tmp_path)), "--out", str(out)), capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (out / "compare.json").is_file()
    workers = {}
    for name in ("a", "b"):
        record = read_model(out / name / "server" / "fleet.json", FleetRecord)
        assert record.verified and len(record.start.workers) == 1
        workers[name] = record.start.workers[0].url
    assert workers["a"] != workers["b"]
    ra = read_model(out / "a" / "server" / "launch.json", LaunchRecord)
    rb = read_model(out / "b" / "server" / "launch.json", LaunchRecord)
    # both routers were up at once: each started before the other stopped
    assert _when(ra.started_at) < _when(rb.stopped_at) and _when(rb.started_at) < _when(ra.stopped_at)
    stages = read_model(out / "timings.json", StageTimings).stages
    together = next(s.seconds for s in stages if s.stage == "variants" and s.variant is None)
    each = {v: sum(s.seconds for s in stages if s.variant == v) for v in ("a", "b")}
    assert together < each["a"] + each["b"]
    assert "total wall time:" in proc.stdout and "(the variants at the same time:" in proc.stdout
    for launch in _launches(out):
        assert launch.pid is not None and not group_alive(launch.pid)


def test_sigterm_stops_every_variant_and_the_run_resumes(tmp_path: Path) -> None:
    config = _config(tmp_path)
    out = tmp_path / "run"
    proc = subprocess.Popen(_cli("run", str(config), "--out", str(out)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    routers = [out / v / "server" / "launch.json" for v in ("a", "b")]
    while not all(p.is_file() and read_model(p, LaunchRecord).ready_at for p in routers):
        assert proc.poll() is None and time.monotonic() < deadline, "both routers never came up"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines[-1] == (
        f"interrupted by SIGTERM: run directory {out}; resume with: evalpipe run {config} --resume {out}"
    )
    for launch in _launches(out):  # both routers and both workers
        assert launch.pid is not None and launch.stopped_at is not None and not group_alive(launch.pid)
    resumed = subprocess.run(_cli("run", str(config), "--resume", str(out)), capture_output=True, text=True,
                             timeout=300)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert (out / "compare.json").is_file() and (out / "a" / "summary.json").is_file()
