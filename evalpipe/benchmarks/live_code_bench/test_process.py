"""The LiveCodeBench test process: one model-written program against its tests, in the run's sandbox.

Both executions of a program — EvalScope's review (``review``) and the load-independent re-check
(``recheck``) — run it here, with EvalScope's own test code (``testing_util.run_test``: same compile
step, same stdin/call-based harness, same output comparison, same result codes), in a process started
by ``run_tests`` through the run's ``ProgramLauncher``: bwrap/unshare (or ``none`` with consent), no
network, a read-only view of the interpreter, a private tmp as cwd and ``$HOME``, the environment
allow-list, rlimits and the whole tree killed at the end.

Run as ``python -m evalpipe.benchmarks.live_code_bench.test_process FD`` this module is the test
process: it reads its job (program, tests or the dataset row they are derived from, limit, clock) as a
line on stdin, imports EvalScope's test code, writes ``ready N`` (N tests) to file descriptor ``FD``,
waits for ``go`` on stdin — the limits start there, not at the spawn of its interpreter or the sandbox —
and writes one JSON result line to ``FD``.  Two clocks, one process:

* ``wall`` (the review): EvalScope's own per-test limit, wall-clock time (``_set_alarm``); the parent's
  global limit is EvalScope's ``(limit + 1) × tests`` seconds of wall time;
* ``cpu`` (the re-check): the per-test limit is the program's CPU time (``ITIMER_PROF``) plus a
  backstop of ``wall_factor`` × the limit for a program that blocks, counted in wall time minus the time
  the process waited for a CPU (``/proc/self/schedstat``); the parent's global limit is measured the
  same way on the program's host pid, with a hard cap of plain wall time.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from evalpipe.artifacts.schema.sandbox import Denial
from evalpipe.config.code_execution import SandboxKind
from evalpipe.sandbox.launcher import ProgramLauncher, RunningProgram
from evalpipe.sandbox.run import signal_name

#: The test process: ``python -m MODULE FD`` (this module).
MODULE = "evalpipe.benchmarks.live_code_bench.test_process"
#: How often the test process checks the ``cpu`` clock's wall backstop.
TICK_S = 0.25
#: How long a test process may take to import EvalScope's test code and say "ready" (the host may be busy).
READY_TIMEOUT_S = 180.0
#: ``cpu`` clock: plain wall-clock cap on the global limit, as a multiple of it (however busy the host is).
HARD_CAP_FACTOR = 10

Clock = Literal["wall", "cpu"]
Outcome = str  # done | global_timeout | died (…) | never_ready


@dataclass(frozen=True)
class TestJob:
    """One program and its tests (EvalScope's ``evaluation_sample`` JSON, or the dataset row it comes from)."""

    code: str
    tests: str | Mapping[str, Any]
    limit_s: float
    clock: Clock
    wall_factor: float = 5.0

    def line(self) -> bytes:
        key = "input_output" if isinstance(self.tests, str) else "record"
        tests = self.tests if isinstance(self.tests, str) else dict(self.tests)
        job = {"code": self.code, key: tests, "timeout": self.limit_s, "clock": self.clock,
               "wall_factor": self.wall_factor}  # fmt: skip
        return json.dumps(job, default=str).encode() + b"\n"


@dataclass
class TestRun:
    """How one test process ended."""

    result: dict[str, Any] | None  # its JSON line: results, metadata, passed, wall_s, cpu_s
    outcome: Outcome
    attempts: int
    tests: int | None
    sandbox: SandboxKind
    denied: list[Denial] = field(default_factory=list)
    ready_s: float | None = None  # launch → "ready": sandbox, interpreter and EvalScope's test code up

    def sandbox_metadata(self) -> dict[str, Any]:
        """What the run's sandbox reports about this program (stored with the review's metadata)."""
        return {
            "kind": self.sandbox,
            "outcome": self.outcome,
            "denied": [d.model_dump() for d in self.denied],
            "ready_s": None if self.ready_s is None else round(self.ready_s, 3),
        }


def run_delay_s(pid: int | str = "self") -> float | None:
    """Seconds process ``pid`` has spent runnable but waiting for a CPU (``/proc/PID/schedstat``).

    The load of other processes shows up here and nowhere else, so "wall time minus run delay" is the
    time a program ran or blocked on its own.  Read with ``os.open``: the test harness mocks ``open``.
    """
    try:
        fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY)
        try:
            return int(os.read(fd, 200).split()[1]) / 1e9
        finally:
            os.close(fd)
    except (OSError, IndexError, ValueError):
        return None


# ---------------------------------------------------------------- parent side


def _read_line(fd: int, buf: bytearray, deadline: float) -> str | None:
    """One line from ``fd`` before ``deadline`` (monotonic); None on timeout or end of file."""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        buf.extend(chunk)
    line, _, rest = bytes(buf).partition(b"\n")
    buf[:] = rest
    return line.decode("utf-8", errors="replace")


def _await_result(
    fd: int, buf: bytearray, program: RunningProgram, limit_s: float, clock: Clock
) -> str | None:
    """The result line, or None once the global limit ``limit_s`` is used up.

    ``wall``: plain wall time.  ``cpu``: the program's own time — wall time minus the time it waited for
    a CPU (run delay of its host pid, below the sandbox's launcher) — so a busy host does not use up the
    limit; ``HARD_CAP_FACTOR`` × the limit of plain wall time bounds the wait in any case.
    """
    pid = program.program_pid() if clock == "cpu" else None
    start = time.monotonic()
    delay0 = (run_delay_s(pid) if pid is not None else None) or 0.0
    hard_deadline = start + limit_s * (HARD_CAP_FACTOR if clock == "cpu" else 1)
    while True:
        line = _read_line(fd, buf, min(time.monotonic() + 1.0, hard_deadline))
        if line is not None or b"\n" in buf:
            return line
        if program.proc.poll() is not None:  # gone without a result line (read the pipe's last bytes first)
            return _read_line(fd, buf, time.monotonic())
        now = time.monotonic()
        if now >= hard_deadline:
            return None
        if clock == "cpu":
            delay = run_delay_s(pid) if pid is not None else None
            own = (now - start) - ((delay - delay0) if delay is not None else 0.0)
            if own >= limit_s:
                return None


def _died(returncode: int | None, sandbox: str) -> str:
    if returncode is not None and returncode < 0:
        return signal_name(-returncode)
    if sandbox != "none" and returncode is not None and returncode > 128:
        return signal_name(returncode - 128)  # bwrap / the unshare stage: 128 + the program's signal
    return f"exit status {returncode}"


def _last_line(err: Any) -> str | None:
    err.seek(0)
    lines = [x for x in err.read().decode("utf-8", "replace").splitlines() if x.strip()]
    return lines[-1][:200] if lines else None


def run_tests(
    job: TestJob, launcher: ProgramLauncher, global_limit_s: Any, *, max_attempts: int = 1
) -> TestRun:
    """Run ``job`` in one fresh test process started through ``launcher`` (another only if one never
    comes up, up to ``max_attempts``).  ``global_limit_s(n_tests)`` is the limit on all tests together,
    measured on ``job.clock`` from ``go``."""
    outcome: Outcome = "never_ready"
    n_tests: int | None = None
    denied: list[Denial] = []
    for attempt in range(1, max_attempts + 1):
        r, w = os.pipe()
        try:
            with tempfile.TemporaryFile() as err, launcher.start(
                [sys.executable, "-m", MODULE, str(w)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                stderr=err, pass_fds=(w,),
            ) as program:  # fmt: skip
                os.close(w)
                w = -1
                buf = bytearray()
                stdin = program.proc.stdin
                assert stdin is not None
                try:
                    stdin.write(job.line())
                    stdin.flush()
                except BrokenPipeError:
                    pass
                ready = _read_line(r, buf, time.monotonic() + READY_TIMEOUT_S)
                ready_s = time.monotonic() - program.started
                if not ready or not ready.startswith("ready "):
                    outcome, denied = "never_ready", program.denied(_last_line(err))
                    continue
                n_tests = int(ready.split()[1])
                try:
                    stdin.write(b"go\n")  # the clock starts now, with the interpreter up and the tests loaded
                    stdin.close()
                except BrokenPipeError:
                    pass
                line = _await_result(r, buf, program, float(global_limit_s(n_tests)), job.clock)
                if line:
                    result: dict[str, Any] = json.loads(line)
                    error = (result.get("metadata") or {}).get("error")
                    denied = program.denied(str(error) if error else None)
                    return TestRun(result, "done", attempt, n_tests, launcher.kind, denied, ready_s)
                try:
                    program.proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    return TestRun(None, "global_timeout", attempt, n_tests, launcher.kind,
                                   program.denied(), ready_s)  # fmt: skip
                tail = _last_line(err)
                denied = program.denied(tail)
                died = f"died ({_died(program.proc.returncode, launcher.kind)}){': ' + tail if tail else ''}"
                return TestRun(None, died, attempt, n_tests, launcher.kind, denied, ready_s)
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
    return TestRun(None, outcome, max_attempts, n_tests, launcher.kind, denied)


# ---------------------------------------------------------------- the test process


def _child(fd: int) -> None:
    # import cost: evalscope, only on this path
    from evalscope.benchmarks.live_code_bench import testing_util
    from evalscope.benchmarks.live_code_bench.pass_k_utils import compute_metrics_from_results

    out = os.fdopen(fd, "w", encoding="utf-8")
    job = json.loads(sys.stdin.buffer.readline())
    if "record" in job:  # derive the tests exactly as the adapter does
        # import cost: evalscope, only on this path
        from evalscope.benchmarks.live_code_bench.load_utils import transform

        input_output = transform(dict(job["record"]))["evaluation_sample"]
    else:
        input_output = job["input_output"]
    out.write(f"ready {len(json.loads(input_output)['inputs'])}\n")
    out.flush()
    if sys.stdin.buffer.readline().strip() != b"go":
        os._exit(1)
    limit, factor = float(job["timeout"]), float(job["wall_factor"])

    if job["clock"] == "cpu":
        backstop: dict[str, float] = {"limit": 0.0, "wall0": 0.0, "delay0": 0.0, "cpu_limit": 0.0, "cpu0": 0.0}

        def on_tick(signum: int, frame: Any) -> None:
            # the wall-clock backstop, on the program's own time: wall time minus the time it waited for a CPU
            if backstop["limit"] <= 0:
                return
            own = time.monotonic() - backstop["wall0"] - ((run_delay_s() or 0.0) - backstop["delay0"])
            if own >= backstop["limit"]:
                backstop["limit"] = 0.0
                signal.setitimer(signal.ITIMER_REAL, 0)
                raise testing_util.TimeoutException

        def on_prof(signum: int, frame: Any) -> None:
            # ITIMER_PROF is charged by the scheduler tick, and on a loaded host it runs ahead of the CPU
            # time the process really had (seen: an infinite loop stopped at 1.755 s of process_time() under
            # a 2.0 s limit).  The limit is the program's CPU time, exactly: an early signal re-arms for what
            # is left, and only a signal at or past the limit stops the test (EvalScope's handler).
            if backstop["cpu_limit"] <= 0:
                return
            left = backstop["cpu_limit"] - (time.process_time() - backstop["cpu0"])
            if left > 0.0:
                signal.setitimer(signal.ITIMER_PROF, max(left, 0.001))
                return
            testing_util.timeout_handler(False, signum, frame)

        def cpu_alarm(seconds: float) -> None:
            # EvalScope arms one wall-clock timer per test (SIGALRM, from ``run_test``'s handler); here the
            # limit is the program's CPU time (SIGPROF, checked against process_time() by ``on_prof``) plus
            # the backstop above, checked every TICK_S.  0 disarms both.
            backstop.update(cpu_limit=seconds, cpu0=time.process_time())
            signal.setitimer(signal.ITIMER_PROF, seconds)
            if seconds:
                backstop.update(limit=seconds * factor, wall0=time.monotonic(), delay0=run_delay_s() or 0.0)
                signal.signal(signal.SIGALRM, on_tick)
                signal.setitimer(signal.ITIMER_REAL, TICK_S, TICK_S)
            else:
                backstop["limit"] = 0.0
                signal.setitimer(signal.ITIMER_REAL, 0)

        signal.signal(signal.SIGPROF, on_prof)
        testing_util._set_alarm = cpu_alarm
    wall0, cpu0 = time.monotonic(), time.process_time()
    results, metadata = testing_util.run_test(
        {"input_output": input_output}, test=job["code"], debug=False, timeout=limit
    )
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    plain = [r.item() if hasattr(r, "item") else r for r in results]
    plain = [r if isinstance(r, bool) else int(r) for r in plain]
    passed = bool(compute_metrics_from_results({0: [plain]}, k_list=[1])["pass@1"] > 0) if plain else False
    out.write(json.dumps({"results": plain, "metadata": metadata, "passed": passed, "wall_s": wall,
                          "cpu_s": cpu}, default=str) + "\n")  # fmt: skip
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    _child(int(sys.argv[1]))
