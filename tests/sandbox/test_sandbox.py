"""Model-written programs cannot reach the host from the sandbox (``evalpipe.sandbox``).

Each hostile program is run the way LiveCodeBench runs a solution — an interpreter with the test input
on stdin, printing to stdout — under every sandbox kind ``make test`` provides (``bwrap`` from Debian's
bubblewrap, ``unshare`` from util-linux).  Each must fail inside the sandbox with the denial named in its
result, and leave the host as it was: the planted secret files and the directory standing for the run
directory hash the same before and after, the listener standing for the recording proxy saw no
connection, and the secret text appears nowhere in the captured output.  The unsandboxed controls show
the same programs do reach the host when nothing stops them, so the hostile set can fail.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalpipe.config.code_execution import CodeExecutionConfig, SandboxLimits
from evalpipe.sandbox.probe import SandboxUnavailable, preflight_line, probe, resolve
from evalpipe.sandbox.run import SandboxPolicy, SandboxResult, run_sandboxed
from evalpipe.sandbox.view import UnsafeEnvironment, sandbox_environment

REPO = Path(__file__).resolve().parents[2]
KINDS = ("bwrap", "unshare")
SECRET = "evalpipe-planted-secret-7f3a9c"
ENV_SECRET = "sk-evalpipe-planted-api-key-51e0"
LIMITS = SandboxLimits(wall_s=20.0, cpu_s=20)


@dataclass
class Host:
    """What the hostile programs aim at: secret files, a run directory, a listening 'proxy'."""

    root: Path
    secret_file: Path
    ssh_key: Path
    rundir: Path
    port: int
    connections: list[object]

    def fingerprint(self) -> dict[str, str]:
        out = {}
        for path in sorted(self.root.rglob("*")):
            rel = str(path.relative_to(self.root))
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        return out


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> Iterator[Host]:
    # beside the checkout, not under /tmp: the sandbox's private /tmp would hide a planted /tmp path anyway
    root = Path(tempfile.mkdtemp(prefix=".sandbox-test-", dir=REPO))
    (root / "home" / ".ssh").mkdir(parents=True)
    ssh_key = root / "home" / ".ssh" / "id_rsa"
    ssh_key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SECRET}\n")
    secret_file = root / "credentials.json"
    secret_file.write_text(json.dumps({"token": SECRET}))
    rundir = root / "run"
    (rundir / "logs").mkdir(parents=True)
    (rundir / "summary.json").write_text('{"verdict": "pass"}')
    monkeypatch.setenv("HOME", str(root / "home"))
    monkeypatch.setenv("EVALPIPE_TEST_API_KEY", ENV_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.settimeout(0.2)
    connections: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connections.append(addr)
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield Host(root, secret_file, ssh_key, rundir, listener.getsockname()[1], connections)
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        shutil.rmtree(root)


def hostile(host: Host) -> dict[str, tuple[str, str]]:
    """name → (program, the denial it must end with)."""
    return {
        "read_ssh_key": (
            f"import glob, os\nfor p in [{str(host.ssh_key)!r}, *glob.glob('/root/.ssh/*'), "
            "os.path.expanduser('~/.ssh/id_rsa')]:\n    print(open(p).read())",
            "filesystem",
        ),
        "read_secret_file": (f"print(open({str(host.secret_file)!r}).read())", "filesystem"),
        "read_api_key_from_environment": (
            "import glob, os\nfor f in glob.glob('/proc/*/environ'):\n"
            "    try:\n        print(open(f, 'rb').read())\n    except OSError:\n        pass\n"
            "print(os.environ['EVALPIPE_TEST_API_KEY'])",
            "environment",
        ),
        "connect_to_proxy_port": (
            f"import socket\nsocket.create_connection(('127.0.0.1', {host.port}), timeout=5).send(b'hi')",
            "network",
        ),
        "connect_to_external_address": (
            "import socket\nsocket.create_connection(('192.0.2.1', 80), timeout=5)",
            "network",
        ),
        "write_into_run_directory": (
            f"open({str(host.rundir / 'summary.json')!r}, 'w').write('{{\"verdict\": \"forged\"}}')",
            "filesystem",
        ),
        # the same value written back: a sandbox that let it through would still leave the host as it was
        "write_host_kernel_setting": (
            "p = '/proc/sys/kernel/printk_ratelimit'\nv = open(p).read()\nopen(p, 'w').write(v)",
            "filesystem",
        ),
        "fork_bomb": ("import os\nwhile True:\n    os.fork()", "processes"),
        "allocate_64_gb": ("b = bytearray(64 * 1024**3)\nprint(len(b))", "address_space"),
        "write_10_gb_file": (
            "chunk = b'x' * 2**20\nwith open('/tmp/big', 'wb') as f:\n    for _ in range(10 * 1024):\n"
            "        f.write(chunk)",
            "file_size",
        ),
        "sleep_past_the_limit": ("import time\ntime.sleep(3600)", "wall_time"),
        "burn_cpu_past_the_limit": ("while True:\n    pass", "cpu_time"),
    }


HOSTILE_NAMES = list(hostile(Host(Path("/x"), Path("/x"), Path("/x"), Path("/x"), 1, [])))


def _limits_for(name: str) -> SandboxLimits:
    if name == "sleep_past_the_limit":
        return LIMITS.model_copy(update={"wall_s": 2.0})
    if name == "burn_cpu_past_the_limit":
        return LIMITS.model_copy(update={"cpu_s": 1})
    if name == "fork_bomb":
        return LIMITS.model_copy(update={"wall_s": 5.0})
    return LIMITS


def _leftover_processes(marker: str) -> list[int]:
    """Host processes whose command line contains ``marker`` (the sandbox must leave none)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def _run(kind: str, code: str, limits: SandboxLimits, stdin: bytes = b"") -> tuple[SandboxResult, str]:
    marker = f"# evalpipe-sandbox-test-{os.getpid()}-{threading.get_ident()}"
    result = run_sandboxed([sys.executable, "-c", f"{code}\n{marker}"], SandboxPolicy(kind, limits), stdin)
    return result, marker


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_hostile_program_fails_inside_the_sandbox_and_leaves_the_host_untouched(
    kind: str, name: str, host: Host
) -> None:
    code, expected = hostile(host)[name]
    before = host.fingerprint()
    result, marker = _run(kind, code, _limits_for(name), b"3\n1 2 3\n")
    kinds = [d.kind for d in result.denied]
    assert not result.ok, result
    assert expected in kinds, result
    assert result.sandbox == kind
    output = result.stdout + result.stderr
    assert SECRET not in output and ENV_SECRET not in output
    assert host.fingerprint() == before
    if name == "connect_to_proxy_port":
        time.sleep(0.5)  # the listener accepts in a thread: give a connection time to be recorded
    assert host.connections == []
    assert _leftover_processes(marker) == []
    if name == "sleep_past_the_limit":
        assert result.timed_out and result.wall_s < 2.0 + 5.0


@pytest.mark.parametrize("kind", [*KINDS, "none"])
def test_a_correct_program_reading_stdin_works_in_every_sandbox(kind: str) -> None:
    code = "n = int(input())\nprint(sum(map(int, input().split())))"
    result, _ = _run(kind, code, LIMITS, b"3\n1 2 3\n")
    assert result.ok and result.stdout == "6\n" and result.denied == [], result


def test_controls_unsandboxed_the_same_programs_reach_the_host(host: Host) -> None:
    """The hostile set has teeth: without the sandbox's view and network namespace they succeed."""
    programs = hostile(host)
    secret, _ = _run("none", programs["read_secret_file"][0], LIMITS)
    assert secret.ok and SECRET in secret.stdout
    proxy, _ = _run("none", programs["connect_to_proxy_port"][0], LIMITS)
    assert proxy.ok
    forged, _ = _run("none", programs["write_into_run_directory"][0], LIMITS)
    assert forged.ok and "forged" in (host.rundir / "summary.json").read_text()
    deadline = time.monotonic() + 5
    while not host.connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(host.connections) == 1
    if os.geteuid() == 0:  # root on the host may write kernel settings (the same value, here)
        sysctl, _ = _run("none", programs["write_host_kernel_setting"][0], LIMITS)
        assert sysctl.ok, sysctl
    # the environment is an allow-list even unsandboxed: the planted key is not passed
    env, _ = _run("none", programs["read_api_key_from_environment"][0], LIMITS)
    assert "environment" in [d.kind for d in env.denied] and ENV_SECRET not in env.stdout


def test_environment_is_an_allow_list() -> None:
    host_env = {"OPENAI_API_KEY": "x", "HF_TOKEN": "x", "AWS_SECRET_ACCESS_KEY": "x", "https_proxy": "x",
                "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "SSH_AUTH_SOCK": "/x"}  # fmt: skip
    env = sandbox_environment("/tmp", {"HF_DATASETS_OFFLINE": "1"}, host=host_env)
    assert {"LANG", "PYTHONHASHSEED", "HF_DATASETS_OFFLINE", "HOME", "PATH"} <= set(env)
    assert not {"OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "https_proxy", "SSH_AUTH_SOCK"} & set(
        env
    )
    for name in ("MY_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "HTTP_PROXY", "AWS_REGION"):
        with pytest.raises(UnsafeEnvironment, match=name):
            sandbox_environment("/tmp", {name: "x"}, host={})


def test_config_none_needs_allow_unsandboxed_and_preflight_names_the_sandbox() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        CodeExecutionConfig.model_validate({"sandbox": "none"})
    assert err.value.errors()[0]["loc"] == ("allow_unsandboxed",)
    with pytest.raises(ValidationError, match="extra"):
        CodeExecutionConfig.model_validate({"sandbox": "auto", "limitz": {}})
    assert resolve(CodeExecutionConfig()) == "bwrap"  # make test installs bubblewrap
    assert preflight_line(CodeExecutionConfig()).startswith("model-written code runs in bwrap (bubblewrap ")
    unsafe = CodeExecutionConfig(sandbox="none", allow_unsandboxed=True)
    assert resolve(unsafe) == "none" and "UNSANDBOXED" in preflight_line(unsafe)


def test_a_requested_sandbox_that_is_missing_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    probe.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        with pytest.raises(SandboxUnavailable) as err:
            resolve(CodeExecutionConfig(sandbox="bwrap"))
        message = str(err.value)
        assert "\n" not in message and message.startswith("code_execution.sandbox: bwrap is not available")
        assert "apt-get install -y bubblewrap" in message
        assert err.value.exit_code == 2
    finally:
        probe.cache_clear()


@pytest.mark.parametrize("kind", KINDS)
def test_the_sandbox_has_a_private_loopback_of_its_own(kind: str) -> None:
    code = (
        "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\ns.listen()\n"
        "c = socket.create_connection(s.getsockname())\nconn, _ = s.accept()\nc.send(b'hi')\nprint(conn.recv(2))"
    )
    result, _ = _run(kind, code, LIMITS)
    assert result.ok and result.stdout == "b'hi'\n", result


# ---------------------------------------------------------------- same results as unsandboxed

#: Runs EvalScope's own LiveCodeBench test code (``testing_util.run_test``) on each job of its stdin in a
#: fresh process, deriving the tests from the dataset row as the adapter does; prints one JSON line per job.
EVALSCOPE_DRIVER = """
import json, os, sys
from evalscope.benchmarks.live_code_bench.load_utils import transform
from evalscope.benchmarks.live_code_bench.testing_util import run_test
for line in sys.stdin.read().splitlines():
    job = json.loads(line)
    r, w = os.pipe()
    if os.fork() == 0:  # one process per program, as EvalScope's review (run_test disables os.* after itself)
        os.close(r)
        sample = {"input_output": transform(dict(job["record"]))["evaluation_sample"]}
        results, metadata = run_test(sample, test=job["code"], debug=False, timeout=6)
        results = [x.item() if hasattr(x, "item") else x for x in results]
        metadata.pop("execution time", None)  # wall-clock seconds: the one field that differs run to run
        os.write(w, json.dumps({"id": job["id"], "results": results, "metadata": metadata}, default=str).encode())
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        print(f.read().decode(), flush=True)
    os.wait()
"""


def test_evalscope_test_code_gives_the_same_results_sandboxed_and_unsandboxed() -> None:
    data = REPO / "evalpipe" / "selftest" / "data"
    rows = [json.loads(x) for x in (data / "livecodebench" / "code_generation_lite_selftest.jsonl").open()]
    for row in rows:  # as evalpipe materializes a row without private tests
        row.setdefault("private_test_cases", "[]")
    solutions = json.loads((data / "solutions.json").read_text(encoding="utf-8"))["live_code_bench"]
    programs = {"correct": None, "wrong": "print(0)", "runtime_error": "a = []\nprint(a[3])"}
    jobs = [
        json.dumps({"id": f"{row['question_id']}/{name}", "record": row,
                    "code": code if code is not None else solutions[row["question_id"]]})
        for row in rows for name, code in programs.items()
    ]  # fmt: skip
    stdin = ("\n".join(jobs) + "\n").encode()
    limits = SandboxLimits(wall_s=600.0)
    by_kind = {}
    for kind in ("none", *KINDS):
        result = run_sandboxed([sys.executable, "-c", EVALSCOPE_DRIVER], SandboxPolicy(kind, limits), stdin)
        assert result.ok, result
        by_kind[kind] = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(by_kind["none"]) == len(jobs)
    passed = {r["id"] for r in by_kind["none"] if r["results"] and all(x is True for x in r["results"])}
    assert passed == {f"{row['question_id']}/correct" for row in rows}  # every bundled solution passes
    assert by_kind["bwrap"] == by_kind["none"]
    assert by_kind["unshare"] == by_kind["none"]


@pytest.mark.parametrize("kind", [*KINDS, "none"])
def test_program_pid_is_the_program_below_the_launcher(kind: str) -> None:
    """The re-check's parent reads the program's run delay from /proc/PID: it needs the program's pid."""
    from evalpipe.sandbox.run import program_pid

    seen: dict[str, object] = {}

    def on_start(proc: object) -> None:
        pid = program_pid(kind, proc.pid)  # type: ignore[attr-defined]
        assert pid is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the pid is found before its exec of the program completes
            seen["cmdline"] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if seen["cmdline"][:2] == [sys.executable.encode(), b"-c"]:
                break
            time.sleep(0.005)

    code = "import sys\nsys.stdin.read()\nprint('done')"
    result = run_sandboxed([sys.executable, "-c", code], SandboxPolicy(kind, LIMITS), b"", on_start=on_start)  # type: ignore[arg-type]
    assert result.ok
    assert seen["cmdline"][:3] == [sys.executable.encode(), b"-c", code.encode()]


@pytest.mark.parametrize("kind", KINDS)
def test_a_program_cannot_create_nested_user_namespaces(kind: str) -> None:
    """Less kernel surface: inside the sandbox ``unshare(CLONE_NEWUSER)`` fails (ENOSPC: limit 0)."""
    code = (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "if libc.unshare(0x10000000) != 0:\n    raise SystemExit(f'errno {ctypes.get_errno()}')\nprint('nested')"
    )
    result, _ = _run(kind, code, LIMITS)
    assert result.returncode == 1 and result.stderr.strip() == "errno 28", result
    control, _ = _run("none", code, LIMITS)
    assert control.ok and control.stdout == "nested\n"  # the host itself allows them: the test can fail


_PARENT = """
import subprocess, sys, time
from evalpipe.sandbox.launcher import ProgramLauncher
launcher = ProgramLauncher.for_sandbox(sys.argv[1])
with launcher.start([sys.executable, "-c", sys.argv[2]], stdin=subprocess.DEVNULL) as program:
    print("started", flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("kind", [*KINDS, "none"])
def test_a_parent_killed_by_sigkill_leaves_no_test_process_behind(kind: str) -> None:
    """The parent of a sandboxed program (the EvalScope worker, the re-check) dies without cleaning up:
    the program dies with it (bwrap --die-with-parent; setpriv --pdeathsig KILL for unshare and none)."""
    import signal
    import subprocess

    marker = f"# evalpipe-orphan-test-{os.getpid()}-{kind}"
    code = f"import time\ntime.sleep(120)\n{marker}"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, kind, code], stdout=subprocess.PIPE, cwd=REPO, start_new_session=True
    )
    try:
        assert parent.stdout is not None and parent.stdout.readline() == b"started\n"
        # wait for the program itself (the parent's own command line holds the marker too)
        program = f"{sys.executable}\0-c\0{code}\0".encode()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            Path(f"/proc/{pid}/cmdline").read_bytes() == program for pid in _leftover_processes(marker)
        ):
            time.sleep(0.02)
        assert [pid for pid in _leftover_processes(marker) if pid != parent.pid], "the program never started"
        parent.kill()  # SIGKILL: no finally block, no atexit in the parent
        parent.wait()
        deadline = time.monotonic() + 10
        while _leftover_processes(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _leftover_processes(marker) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        for pid in _leftover_processes(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
