"""A killed run leaves nothing behind: SIGKILL of ``evalpipe run`` with a router fleet up.

Every server evalpipe launches leads a session of its own (so the run can stop it as a group), which also
puts it out of reach of any signal to the run's own group.  A SIGKILL gives the run no chance to stop
anything, so the kernel does it: the router and each worker get SIGKILL when the run dies, and a variant
run at the same time (``parallel_variants``) gets SIGTERM and stops its own router and worker.  Checked by
process group from ``/proc`` (the router retitles itself ``sglang::router``; names are useless), and every
group recorded in the run directory is killed in teardown whatever happened.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.processes.group import group_alive, signal_group

# what a killed run leaves behind is checked with the product's default: workers spawned by the run
pytestmark = pytest.mark.spawned_worker

DATA = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"


def _config(tmp: Path, *, variants: bool) -> Path:
    cfg: dict[str, Any] = {
        "name": "killed",
        "model": {"path": "answer-key", "served_name": "answer-key"},
        "server": {
            "kind": "router",
            "port": 0,
            "launch_timeout_s": 60,
            "stop_timeout_s": 10,
            "router": {"probe_fields": False, "workers": [{"kind": "answer_key"}]},
        },
        "generation": {
            "temperature": 0.0,
            "concurrency": 1,
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
    if variants:
        cfg |= {"parallel_variants": True, "variants": [{"name": "a"}, {"name": "b"}]}
    path = tmp / "killed.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def _launches(out: Path) -> list[LaunchRecord]:
    """Every router and worker launch recorded under the run directory (variants included)."""
    return [read_model(p, LaunchRecord) for p in sorted(out.glob("**/server/**/launch.json"))]


def _tail(log: Path) -> str:
    return log.read_text(encoding="utf-8").rstrip() if log.is_file() else ""


def _routers_ready(out: Path, variants: bool) -> bool:
    paths = (
        [out / v / "server" / "launch.json" for v in ("a", "b")]
        if variants
        else [out / "server" / "launch.json"]
    )
    return all(p.is_file() and read_model(p, LaunchRecord).ready_at is not None for p in paths)


#: runs started before one is caught with its fleet up: three answer-key samples take seconds, and a loaded
#: host can hold this test's process back until the run has finished and stopped its servers itself
ATTEMPTS = 3


def _caught_with_its_fleet_up(run: subprocess.Popen[bytes], out: Path, variants: bool) -> set[int] | None:
    """The process groups of the run's routers and workers once they are up, all alive and the run still
    running; None when the run ended by itself (exit 0) before it could be caught so."""
    deadline = time.monotonic() + 120
    while not _routers_ready(out, variants):
        assert run.poll() is None, run.communicate()[1].decode()[-3000:]
        assert time.monotonic() < deadline, "the router(s) never came up"
        time.sleep(0.05)
    pgids = {launch.pid for launch in _launches(out) if launch.pid is not None}
    alive = {p: group_alive(p) for p in pgids}
    if run.poll() == 0:
        return None
    assert run.poll() is None, run.communicate()[1].decode()[-3000:]
    assert len(pgids) == (4 if variants else 2) and all(alive.values()), alive
    return pgids


@pytest.mark.parametrize("variants", [False, True], ids=["one-fleet", "parallel-variants"])
def test_sigkill_of_the_run_leaves_no_router_or_worker(tmp_path: Path, variants: bool) -> None:
    argv = [sys.executable, "-m", "evalpipe.cli.entry", "run", str(_config(tmp_path, variants=variants))]
    pgids: set[int] = set()
    try:
        for attempt in range(1, ATTEMPTS + 1):
            out = tmp_path / f"run-{attempt}"
            run = subprocess.Popen(
                [*argv, "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            caught = _caught_with_its_fleet_up(run, out, variants)
            if caught is not None:
                pgids = caught
                break
            run.wait()
        assert pgids, f"{ATTEMPTS} runs all ended by themselves before their fleet could be caught up"

        run.kill()  # SIGKILL: the run stops nothing itself
        assert run.wait(timeout=30) == -signal.SIGKILL

        gone_by = time.monotonic() + 60  # variants stop their own servers (SIGTERM, then the stop grace)
        while any(group_alive(p) for p in pgids) and time.monotonic() < gone_by:
            time.sleep(0.1)
        left = sorted(p for p in pgids if group_alive(p))
        assert not left, f"still running after SIGKILL of the run: process groups {left}"
        if variants:  # each variant stopped its servers itself, at once (not by running to its end)
            logs = {v: out / v / "logs" / "run.log" for v in ("a", "b")}
            ended = {v: f"interrupted by SIGTERM: run directory {out / v}" for v in logs}
            by = time.monotonic() + 30  # its last line comes once its servers' stops are recorded
            while time.monotonic() < by and not all(_tail(logs[v]).endswith(ended[v]) for v in logs):
                time.sleep(0.1)
            for v in logs:
                assert _tail(logs[v]).endswith(ended[v]), _tail(logs[v])[-1000:]
            assert all(
                launch.stopped_at is not None for launch in _launches(out)
            )  # recorded before that line
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        for pgid in pgids | {launch.pid for launch in _launches(out) if launch.pid is not None}:
            signal_group(pgid, signal.SIGKILL)
