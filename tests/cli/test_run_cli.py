"""``evalpipe run`` from the command line: a real run, usage errors, and Ctrl-C leaving no process behind."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from evalscope_helpers import gsm8k_answer
from helpers.config import SERVED, entry, write_config
from helpers.server_process import SCRIPTED_SERVER, ServerProcess

from evalpipe.errors import ExitCode

REPO = Path(__file__).resolve().parents[2]
EVALPIPE = [sys.executable, "-m", "evalpipe.cli.entry"]
SERVER = Path(SCRIPTED_SERVER[1])


#: The CLI runs: two concurrent requests, a short answer budget (model and server: helpers.config defaults).
CLI_RUN = {
    "name": "cli-run",
    "generation": {"concurrency": 2, "max_tokens": {"gsm8k": 128}, "request_timeout_s": 120},
}


def gsm8k(total: int) -> list[dict[str, Any]]:
    return [entry("gsm8k", total=total, subset="main", few_shot=0)]


class ScriptedProcess:
    """tests/scripted_server.py as a subprocess answering from ``rules`` (the shared ``ServerProcess``: its
    own process group, stopped and checked gone in stop())."""

    def __init__(
        self,
        tmp: Path,
        rules: list[dict],
        default: dict | None = None,
        *,
        served_name: str = SERVED,
        server_info: Path | None = None,
    ) -> None:
        self.tmp = tmp
        self.served_name = served_name
        self.server_info = server_info
        self.rules_file = tmp / "rules.json"
        self.rules_file.write_text(json.dumps({"rules": rules, "default": default}), encoding="utf-8")
        self.port_file = tmp / "server.port"
        self.request_log = tmp / "server-requests.jsonl"
        self.process: ServerProcess | None = None

    def start(self, port: int = 0) -> str:
        info = ["--server-info", str(self.server_info)] if self.server_info else []
        argv = [*SCRIPTED_SERVER, "--rules", str(self.rules_file), "--port-file", str(self.port_file),
                "--request-log", str(self.request_log), "--served-name", self.served_name, "--port", str(port),
                *info]  # fmt: skip
        self.process = ServerProcess(
            argv, log=self.tmp / "server.log", port_file=self.port_file, ready_path=None, timeout=30
        ).start()
        return self.process.base_url

    def requests(self) -> list[dict]:
        if not self.request_log.exists():
            return []
        return [json.loads(x) for x in self.request_log.read_text().splitlines() if x.strip()]

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()


def gsm8k_rules(datasets: Path) -> list[dict]:
    rows = [json.loads(x) for x in (datasets / "gsm8k" / "test.jsonl").read_text().splitlines()]
    return [{"match": r["question"], "content": f"\\boxed{{{gsm8k_answer(r)}}}"} for r in rows]


def run_cli(*args: str, timeout: float = 300, merged: bool = False) -> subprocess.CompletedProcess:
    """``evalpipe`` with output captured (not a terminal); ``merged``: stderr into stdout, like ``> log 2>&1``."""
    err = subprocess.STDOUT if merged else subprocess.PIPE
    return subprocess.run(
        [*EVALPIPE, *args], stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout, cwd=REPO
    )


def test_run_attaches_to_an_endpoint_and_writes_outcomes(tmp_path: Path, shared_datasets: Path) -> None:
    server = ScriptedProcess(tmp_path, gsm8k_rules(shared_datasets))
    try:
        url = server.start()
        # server.kind sglang: --endpoint attaches anyway
        config = write_config(tmp_path / "run.yaml", benchmarks=gsm8k(2), **CLI_RUN)
        out = tmp_path / "run"
        proc = run_cli(
            "run",
            str(config),
            "--endpoint",
            url,
            "--dataset-root",
            str(shared_datasets),
            "--out",
            str(out),
            merged=True,
        )
        assert proc.returncode == 0, proc.stdout[-3000:]
        rows = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]
        assert [r["failure_class"] for r in rows] == ["ok", "ok"]
        assert len(server.requests()) == 2
        table = re.search(r"gsm8k\s*│\s*2\s*│\s*2", proc.stdout)
        assert table, proc.stdout
        # not a terminal: no progress bars (rich would print them after the tables), one line per benchmark
        assert not re.search(r"━+\s+\d+/\d+", proc.stdout), proc.stdout
        done = [m.start() for m in re.finditer(r"(?m)^gsm8k: 2/2 done in \d+\.\d s$", proc.stdout)]
        assert len(done) == 1 and done[0] < table.start(), proc.stdout
        assert "outcomes →" in proc.stdout
        # resuming a finished run re-asks nothing and repairs nothing
        again = run_cli(
            "run",
            str(config),
            "--endpoint",
            url,
            "--dataset-root",
            str(shared_datasets),
            "--resume",
            str(out),
        )
        assert again.returncode == 0, again.stderr[-3000:]
        assert len(server.requests()) == 2
        assert "cache-identity repairs: 0" in again.stdout
    finally:
        server.stop()


def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, shared_datasets: Path) -> None:
    config = write_config(tmp_path / "run.yaml", benchmarks=gsm8k(2), **CLI_RUN)
    proc = run_cli("run", str(config), "--dataset-root", str(shared_datasets), "--out", str(tmp_path / "r"))
    # kind sglang without --endpoint launches SGLang: preflight refuses (not installed, no model) before
    # anything is launched, naming each failed rule, in clean lines without a traceback
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: preflight: sglang is not importable")
    assert any("--model-path /models/none" in line for line in lines)
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r" / "server" / "launch.json").exists()
    proc = run_cli("run", str(config), "--endpoint", "http://127.0.0.1:9", "--resume", str(tmp_path / "nope"))
    assert proc.returncode == 2 and "no manifest.json" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli(
        "run", str(config), "--endpoint", "localhost:30000", "--dataset-root", str(shared_datasets)
    )
    assert proc.returncode == 2 and "expected http(s)://host:port, optionally with a path" in proc.stderr


def test_sandbox_none_without_allow_unsandboxed_is_refused_in_one_line(tmp_path: Path) -> None:
    """Running model-written code on the host is a written decision: ``code_execution.sandbox: none`` alone
    stops the run at the config, exit 2, one line naming the field; nothing is created."""
    config = write_config(tmp_path / "run.yaml")
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    cfg["code_execution"] = {"sandbox": "none"}
    config.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    proc = run_cli("run", str(config), "--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "r"))
    assert proc.returncode == ExitCode.USAGE == 2, proc.stderr
    # the config loader's format: the file and its error count, then one line per error (file:line: field)
    head, *errors = proc.stderr.strip().splitlines()
    assert head.endswith("run.yaml: 1 error(s)") and len(errors) == 1, proc.stderr
    assert re.search(
        r"run\.yaml:\d+: code_execution\.allow_unsandboxed: sandbox: none runs model-written", errors[0]
    )
    assert not (tmp_path / "r").exists()


# SIGTERM with a spawned worker (the product's default), SIGINT with one the suite's fork server forked
@pytest.mark.parametrize(
    ("sig", "code"),
    [(signal.SIGINT, 130), pytest.param(signal.SIGTERM, 143, marks=pytest.mark.spawned_worker)],
)
def test_interrupt_ends_the_evalscope_worker_and_its_process_group(
    tmp_path: Path, shared_datasets: Path, sig: signal.Signals, code: int
) -> None:
    server = ScriptedProcess(tmp_path, [], default={"match": "", "content": "\\boxed{1}", "delay_s": 120})
    try:
        url = server.start()
        config = write_config(tmp_path / "run.yaml", benchmarks=gsm8k(2), **CLI_RUN)
        out = tmp_path / "run"
        cli = subprocess.Popen(
            [
                *EVALPIPE,
                "run",
                str(config),
                "--endpoint",
                url,
                "--dataset-root",
                str(shared_datasets),
                "--out",
                str(out),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            # SIGINT's disposition is left as inherited: started from a background shell job (``make test &``)
            # the CLI inherits it ignored, and must still stop on Ctrl-C (evalpipe.cli.main installs its handler)
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while not server.requests():  # the worker is running and waiting on the (slow) server
                assert cli.poll() is None, cli.communicate()[1][-3000:]
                assert time.monotonic() < deadline, "no request reached the server"
                time.sleep(0.2)
            log = (out / "logs" / "evalscope.log").read_text(encoding="utf-8", errors="replace")
            worker_pid = int(re.search(r"worker pid (\d+)", log).group(1))
            os.killpg(worker_pid, 0)  # alive, in its own group
            cli.send_signal(sig)
            _, err = cli.communicate(timeout=60)
            assert cli.returncode == code, err[-3000:]
            with pytest.raises(ProcessLookupError):
                os.killpg(worker_pid, 0)  # nothing left in the worker's process group
            # one line naming the run directory and the exact command that resumes it
            resume = f"evalpipe run {config} --resume {out} --endpoint {url} --dataset-root {shared_datasets}"
            line = f"interrupted by {sig.name}: run directory {out}; resume with: {resume}"
            assert [x for x in err.splitlines() if "resume with" in x] == [line], err[-3000:]
            assert "Traceback" not in err, err[-3000:]
        finally:
            if cli.poll() is None:
                os.killpg(cli.pid, signal.SIGKILL)
                cli.wait()
    finally:
        server.stop()


GLM_CONFIG = REPO / "configs" / "glm-fp8.yaml"
GLM_SERVER_INFO = REPO / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json"


def glm_config(path: Path, *, total: int = 3) -> tuple[Path, dict]:
    """configs/glm-fp8.yaml as shipped (model, server, generation incl. retries, gates), sampling a few
    GSM8K records from the local mirror instead of the 160-sample plan (which needs the hub)."""
    # SGLang's bench_serving needs SGLang (a GPU host); the speed stage has its own tests
    write_config(
        path, base=GLM_CONFIG, benchmarks=gsm8k(total), output_root=str(path.parent / "results"), speed=None
    )
    return path, yaml.safe_load(path.read_text(encoding="utf-8"))


def test_glm_config_retries_a_failed_request_and_passes_with_the_retry_in_the_audit(
    tmp_path: Path, shared_datasets: Path
) -> None:
    config, cfg = glm_config(tmp_path / "glm.yaml")
    assert cfg["generation"]["retries"] >= 1  # the shipped sign-off config retries by default
    # the selection depends only on data, plan and seed: sample once to learn which questions the run asks
    sampled = tmp_path / "sampled"
    proc = run_cli("sample", str(config), "--dataset-root", str(shared_datasets), "--out", str(sampled))
    assert proc.returncode == 0, proc.stderr[-3000:]
    from evalpipe.benchmarks.gsm8k import gsm8k_id

    by_id = {gsm8k_id(r["match"]): r["match"] for r in gsm8k_rules(shared_datasets)}
    questions = [
        by_id[e["source_id"]] for e in json.loads((sampled / "manifest.json").read_text())["entries"]
    ]
    rules = gsm8k_rules(shared_datasets)
    flaky = next(r for r in rules if r["match"] == questions[0])
    rules = [{**flaky, "status": 500, "fail_times": 1}, *rules]  # the first attempt fails, once
    server = ScriptedProcess(
        tmp_path, rules, served_name=cfg["model"]["served_name"], server_info=GLM_SERVER_INFO
    )
    try:
        url = server.start()
        out = tmp_path / "run"
        proc = run_cli(
            "run", str(config), "--endpoint", url, "--dataset-root", str(shared_datasets), "--out", str(out)
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "Verdict: PASS" in proc.stdout
        seen = [r for r in server.requests() if r["path"].endswith("/chat/completions")]
        assert [r["status"] for r in seen if questions[0] in (r["last_user"] or "")] == [500, 200]
        assert len(seen) == len(questions) + 1
        summary = json.loads((out / "summary.json").read_text())
        r = summary["requests"]
        assert (r["actual_requests"], r["samples"], r["retries"], r["transport_failures"]) == (4, 3, 1, 1)
        assert r["retry_causes"] == {"HTTP 500": 1}
        assert summary["verdict"] == "pass"
        report = (out / "report.md").read_text()
        assert (
            "4 actual requests for 3 samples; no duplicates; 1 retry after HTTP 500; 1 transport failure"
            in (report)
        )
        outcomes = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]
        assert [o["failure_class"] for o in outcomes] == ["ok", "ok", "ok"]
    finally:
        server.stop()


def test_server_killed_mid_run_ends_naming_its_log_and_resume_completes_on_a_restarted_server(
    tmp_path: Path, shared_datasets: Path
) -> None:
    rules_file = tmp_path / "rules.json"
    slow = [
        {**r, "delay_s": 3.0} for r in gsm8k_rules(shared_datasets)
    ]  # requests stay in flight until the kill
    rules_file.write_text(json.dumps({"rules": slow}), encoding="utf-8")
    server_requests = tmp_path / "server-requests.jsonl"
    command = ["{python}", str(SERVER), "--rules", str(rules_file), "--port-file", str(tmp_path / "port"),
               "--port", "{port}", "--served-name", SERVED, "--request-log", str(server_requests)]  # fmt: skip
    config = write_config(
        tmp_path / "run.yaml",
        benchmarks=gsm8k(4),
        server={"kind": "command", "command": command, "port": 0, "launch_timeout_s": 60},
        **CLI_RUN,
    )
    out = tmp_path / "run"
    cli = subprocess.Popen(
        [*EVALPIPE, "run", str(config), "--dataset-root", str(shared_datasets), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not server_requests.exists() or not server_requests.read_text().strip():
            assert cli.poll() is None, cli.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "no request reached the server"
            time.sleep(0.2)
        pgid = json.loads((out / "server" / "launch.json").read_text())["pid"]
        os.killpg(pgid, signal.SIGKILL)  # the server dies while EvalScope is sending
        killed = time.monotonic()
        _, err = cli.communicate(timeout=120)
        elapsed = time.monotonic() - killed
        print(f"kill → exit: {elapsed:.1f} s")
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
    assert cli.returncode == ExitCode.SERVER, err[-3000:]  # the server died: not a usage error
    assert elapsed < 60, elapsed  # bounded: not every remaining request failing one by one
    log = out / "server" / "server.log"
    resume = f"evalpipe run {config} --resume {out} --dataset-root {shared_datasets}"
    assert [x for x in err.splitlines() if "resume with" in x] == [
        f"the server died during the evaluation (killed by SIGKILL; log: {log}): run directory {out}; "
        f"resume with: {resume}"
    ], err[-3000:]
    assert "Traceback" not in err, err[-3000:]

    # restart: the same config relaunches the server (answering at once now) and finishes the run
    rules_file.write_text(json.dumps({"rules": gsm8k_rules(shared_datasets)}), encoding="utf-8")
    proc = run_cli("run", str(config), "--resume", str(out), "--dataset-root", str(shared_datasets))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    outcomes = [json.loads(x) for x in (out / "outcomes.jsonl").read_text().splitlines()]
    assert [(o["failure_class"], o["n_predictions"], o["n_reviews"]) for o in outcomes] == [("ok", 1, 1)] * 4
    attempts = [json.loads(x) for x in (out / "requests.jsonl").read_text().splitlines()]
    chat = [a for a in attempts if a["path"].endswith("/chat/completions")]
    dead = [
        a
        for a in chat
        if a.get("transport_error") or (a.get("status") or 0) >= 500 or a.get("status") is None
    ]
    assert dead, "the attempts the dead server never answered are in the request log"
    assert len(chat) == 4 + len(dead)  # every sample answered once; the dead attempts on top
    summary = json.loads((out / "summary.json").read_text())
    assert summary["requests"]["transport_failures"] == len(dead)
    assert summary["verdict"] == "pass"


@pytest.mark.spawned_worker  # /proc/<worker>/environ: a forked worker's shows the fork server's start-up
def test_glm_config_without_sglang_runs_accuracy_only_and_the_worker_never_holds_a_secret(
    tmp_path: Path, shared_datasets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configs/glm-fp8.yaml as shipped (speed client sglang, not installed here) against a loopback endpoint
    with an API key, a ratio gate, and two planted secrets in the environment:

    * without --no-speed: exit 2 before anything is sent, the line naming --no-speed;
    * with --no-speed --waive-speed-gate: the run passes on accuracy; run.json records both flags; the report
      says serving speed was not measured; the ratio gate is listed as waived (advisory);
    * the EvalScope worker's /proc/<pid>/environ holds neither the key nor a planted secret (its environment
      is an allow-list); the server still got the key on every request (the recording proxy adds it);
    * no file of the run directory (the gzip members of responses.jsonl.gz unpacked) holds either value."""
    import gzip

    from evalpipe.audit.secret_scan import scan_paths

    key, planted = "sk-faults-server-key-5b1e9d", "planted-cloud-secret-77a0c4"
    monkeypatch.setenv("FAULTS_TEST_SERVER_KEY", key)
    monkeypatch.setenv("PLANTED_CLOUD_TOKEN", planted)
    monkeypatch.setenv("EVALPIPE_PLANTED_API_KEY", planted)  # an evalpipe-prefixed name that looks secret
    base = yaml.safe_load(GLM_CONFIG.read_text(encoding="utf-8"))
    config = write_config(
        tmp_path / "glm.yaml", base=GLM_CONFIG, benchmarks=gsm8k(2), output_root=str(tmp_path / "results"),
        server={"api_key_env": "FAULTS_TEST_SERVER_KEY"},
        gates={**base["gates"], "min_output_throughput_ratio": 0.95},
    )  # fmt: skip
    assert base["speed"]["client"] == "sglang"
    rules = [{**r, "delay_s": 0.3} for r in gsm8k_rules(shared_datasets)]
    server = ScriptedProcess(
        tmp_path, rules, served_name=base["model"]["served_name"], server_info=GLM_SERVER_INFO
    )
    try:
        url = server.start()
        common = ["run", str(config), "--endpoint", url, "--dataset-root", str(shared_datasets)]
        refused = run_cli(*common, "--out", str(tmp_path / "refused"))
        assert refused.returncode == 2, refused.stderr[-3000:]
        assert refused.stderr.strip().splitlines() == [
            "error: speed.client sglang: SGLang is not installed (pip install -e '.[sglang]', GPU hosts); to run the "
            "accuracy evaluation without the speed benchmark: evalpipe run ... --no-speed"
        ], refused.stderr
        assert not server.requests()

        out = tmp_path / "run"
        cli = subprocess.Popen(
            [*EVALPIPE, *common, "--out", str(out), "--no-speed", "--waive-speed-gate"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, start_new_session=True,
        )  # fmt: skip
        try:
            environ: list[bytes] = []
            deadline = time.monotonic() + 120
            while not environ and cli.poll() is None and time.monotonic() < deadline:
                log = out / "logs" / "evalscope.log"
                found = (
                    re.search(r"worker pid (\d+)", log.read_text(errors="replace")) if log.is_file() else None
                )
                if found:
                    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                        environ = Path(f"/proc/{found.group(1)}/environ").read_bytes().split(b"\0")
                time.sleep(0.05)
            stdout, _ = cli.communicate(timeout=240)
        finally:
            if cli.poll() is None:
                os.killpg(cli.pid, signal.SIGKILL)
                cli.wait()
        assert cli.returncode == 0, stdout[-3000:]
        names = {e.split(b"=", 1)[0].decode() for e in environ if e}
        assert {"HF_HUB_OFFLINE", "PATH", "PYTHONPATH"} <= names, names
        assert not names & {"FAULTS_TEST_SERVER_KEY", "PLANTED_CLOUD_TOKEN", "EVALPIPE_PLANTED_API_KEY"}, (
            names
        )
        assert not [e for e in environ if key.encode() in e or planted.encode() in e]

        chats = [r for r in server.requests() if r["path"].endswith("/chat/completions")]
        assert len(chats) == 2
        assert [{k.lower(): v for k, v in r["headers"].items()}["authorization"] for r in chats] == [
            f"Bearer {key}"
        ] * 2

        record = json.loads((out / "run.json").read_text())
        assert (record["schema_version"], record["no_speed"], record["speed_gate_waived"]) == (3, True, True)
        assert "Verdict: PASS" in stdout, stdout[-3000:]
        report = (out / "report.md").read_text(encoding="utf-8")
        assert "This run is accuracy only: serving speed not measured (--no-speed)" in report
        summary = json.loads((out / "summary.json").read_text())
        (gate,) = [g for g in summary["gates"] if g["gate"] == "min_output_throughput_ratio"]
        assert gate["advisory"] and gate["message"].startswith(
            "serving speed not measured (--no-speed): waived"
        )
        assert not (out / "speed.json").exists()
        for path in (p for p in out.rglob("*") if p.is_file()):
            data = path.read_bytes()
            if path.name.endswith(".gz"):
                data = gzip.decompress(data)
            assert key.encode() not in data and planted.encode() not in data, path
        assert scan_paths(out, [out]) == []
    finally:
        server.stop()
