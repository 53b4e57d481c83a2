"""Load-independent LiveCodeBench verdicts: re-check, in isolation, every sample the review timed out.

EvalScope's review runs each program in a freshly *spawned* Python interpreter (plus a multiprocessing
manager), several reviews at a time, and starts its global limit — ``(review_timeout + 1) × tests``
seconds — when the spawn begins; its per-test limit is wall-clock time.  On a loaded host the
interpreter's start-up alone can use the whole budget, so a wrong or crashing program comes back as "no
result" or "time limit exceeded" — a class that depends on the host's load, not on the program.

So every LiveCodeBench sample whose review ended as ``code_timeout`` is re-checked before it is
classified, one at a time, with EvalScope's own test code (``testing_util.run_test``: same compile step,
same stdin/call-based harness, same output comparison, same result codes), called differently:

* the test process imports everything first and says "ready"; only then does it get the program, and
  the global limit starts then, not at the spawn of its interpreter;
* the per-test limit (EvalScope's ``review_timeout``, 6 s) is the CPU time the program used since the
  test started (``ITIMER_PROF``), which other processes on the host cannot consume; a backstop of
  ``WALL_FACTOR`` × the limit ends a program that blocks instead of computing, counted in wall time
  minus the time the process waited for a CPU (its run delay, ``/proc/PID/schedstat``) — so load does
  not count there either; the global limit over all tests is measured the same way (with a hard cap of
  plain wall time);
* the whole process group is killed at the end (or at the global limit).

The class is the re-check's and the outcome row records how the sample was executed
(``OutcomeRow.code_execution``).  A program that truly loops forever uses its CPU limit and stays
``code_timeout``; a program that needs 60 % of the limit passes however busy the host is.

Run as ``python -m evalpipe.benchmarks.live_code_bench.recheck FD`` this module is the test process: it reads
its job (program, tests or dataset row, limits) as a line on stdin, imports EvalScope's test code, writes
``ready N`` (N tests) to file descriptor ``FD``, waits for ``go`` on stdin — the clock starts there —
and writes one JSON result line to ``FD``.  EvalScope is imported only in this process, which is started
through the run's ``ProgramLauncher`` (the one place a sandbox wraps every process running model code).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.benchmarks.base import ProgramLauncher, ReviewContext
from evalpipe.benchmarks.live_code_bench.result_codes import classify_code, tests_run
from evalpipe.errors import ArtifactError
from evalpipe.process_group import kill_group
from evalpipe.schema.outcomes import CodeExecution, FailureClass, OutcomeRow

#: The test process: ``python -m MODULE FD`` (this module).
MODULE = "evalpipe.benchmarks.live_code_bench.recheck"

#: Wall-clock backstop per test, as a multiple of the per-test CPU limit (a program that sleeps or waits);
#: counted on the program's own time: wall time minus the time it waited for a CPU.
WALL_FACTOR = 5
#: How often the test process checks the backstop.
TICK_S = 0.25
#: How long a test process may take to import EvalScope's test code and say "ready" (the host may be busy).
READY_TIMEOUT_S = 180.0
#: Plain wall-clock cap on a re-check, as a multiple of its global limit (however busy the host is).
HARD_CAP_FACTOR = 10
#: Test processes started for one sample when one never comes up.
MAX_ATTEMPTS = 2
_GLOBAL_SLACK_S = 5.0

POLICY = (
    "LiveCodeBench programs are run by EvalScope's review (per-test limit {limit:g} s of wall-clock time; "
    "global limit from the spawn of the test interpreter, several reviews at once). Every sample the review "
    "left as a timeout or without a result is re-checked alone with EvalScope's own test code: per-test "
    "limit {limit:g} s of the program's CPU time from its own start (a program that blocks is stopped after "
    "{backstop:g} s of wall time not spent waiting for a CPU), clock started once the test process is up; "
    "the re-check's class is the one reported."
)


def policy_text(limit_s: float) -> str:
    return POLICY.format(limit=limit_s, backstop=limit_s * WALL_FACTOR)


def review_execution(score: Mapping[str, Any], tests: int | None = None) -> CodeExecution:
    """How EvalScope's review ran a sample (``score`` = the review's ``sample_score.score``)."""
    limit = float((score.get("metadata") or {}).get("timeout") or 0) or None
    return CodeExecution(
        mode="evalscope_review",
        per_test_limit_s=limit or 0.0,
        limit_clock="wall_from_interpreter_spawn",
        global_limit_s=(limit + 1) * tests if limit and tests else None,
        tests=tests,
    )


# ---------------------------------------------------------------- the problems' tests


class ProblemTests:
    """The materialized LiveCodeBench rows, as EvalScope's adapter reads them.

    The test process derives EvalScope's ``evaluation_sample`` (test inputs/outputs, function name) from
    a row exactly as the adapter does (``live_code_bench.load_utils.transform``), so EvalScope is imported
    there, never in evalpipe's own process.
    """

    def __init__(self, rundir_root: Path, dataset_path: str, eval_split: str) -> None:
        self.root = Path(rundir_root) / dataset_path
        self.eval_split = eval_split
        self._rows: dict[str, list[dict[str, Any]]] = {}

    def record(self, subset: str, index: int, source_id: str) -> dict[str, Any]:
        path = self.root / subset / f"{self.eval_split}.parquet"
        if subset not in self._rows:
            import pyarrow.parquet as pq

            if not path.is_file():
                raise ArtifactError(
                    f"{path}: materialized LiveCodeBench rows missing (needed to re-check code)"
                )
            self._rows[subset] = pq.read_table(path).to_pylist()
        rows = self._rows[subset]
        if not 0 <= index < len(rows) or str(rows[index].get("question_id")) != source_id:
            raise ArtifactError(f"{path}: row {index} is not question_id {source_id}")
        return dict(rows[index])


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


@dataclass
class Recheck:
    failure_class: FailureClass
    failure_detail: str | None
    passed: bool
    execution: CodeExecution


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


def _died(returncode: int | None) -> str:
    if returncode is not None and returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    return f"exit status {returncode}"


def global_limit(n_tests: int, limit_s: float) -> float:
    return n_tests * (limit_s * WALL_FACTOR + 1) + _GLOBAL_SLACK_S


def _await_result(fd: int, buf: bytearray, proc: subprocess.Popen[bytes], limit_s: float) -> str | None:
    """The result line, or None once the test process has *itself* used ``limit_s`` seconds.

    Its own time is wall time minus the time it waited for a CPU (run delay), so a busy host does not
    use up the limit; ``HARD_CAP_FACTOR`` × the limit of plain wall time bounds the wait in any case.
    """
    pid = proc.pid
    start, delay0 = time.monotonic(), run_delay_s(pid) or 0.0
    hard_deadline = start + limit_s * HARD_CAP_FACTOR
    while True:
        line = _read_line(fd, buf, min(time.monotonic() + 1.0, hard_deadline))
        if line is not None or b"\n" in buf:
            return line
        if proc.poll() is not None:  # gone without a result line (read the pipe's last bytes first)
            return _read_line(fd, buf, time.monotonic())
        now = time.monotonic()
        delay = run_delay_s(pid)
        own = (now - start) - ((delay - delay0) if delay is not None else 0.0)
        if own >= limit_s or now >= hard_deadline:
            return None


def run_isolated(
    code: str, tests: str | dict[str, Any], limit_s: float, launcher: ProgramLauncher | None = None
) -> tuple[dict[str, Any] | None, str, int, int | None]:
    """Run ``code`` against its tests in one fresh test process (another only if one never comes up).

    ``tests``: EvalScope's ``evaluation_sample`` JSON, or the materialized dataset row it is derived from.
    ``launcher``: how the test process is started (default: a plain child process).
    Returns ``(result, outcome, attempts, n_tests)``: ``result`` is the test process's JSON line (None
    without one) and ``outcome`` one of ``done``, ``global_timeout``, ``died (…)``, ``never_ready``.
    """
    key = "input_output" if isinstance(tests, str) else "record"
    job = json.dumps({"code": code, key: tests, "timeout": limit_s, "wall_factor": WALL_FACTOR}, default=str)
    argv = (launcher or ProgramLauncher()).argv
    outcome, n_tests = "never_ready", None
    for attempt in range(1, MAX_ATTEMPTS + 1):
        r, w = os.pipe()
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                argv([sys.executable, "-m", MODULE, str(w)]),
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=(w,),
                start_new_session=True,
                cwd=tempfile.gettempdir(),
            )
            os.close(w)
            buf = bytearray()
            try:
                assert proc.stdin is not None
                try:
                    proc.stdin.write(job.encode() + b"\n")
                    proc.stdin.flush()
                except BrokenPipeError:
                    pass
                ready = _read_line(r, buf, time.monotonic() + READY_TIMEOUT_S)
                if not ready or not ready.startswith("ready "):
                    outcome = "never_ready"
                    continue
                n_tests = int(ready.split()[1])
                proc.stdin.write(
                    b"go\n"
                )  # the clock starts now, with the interpreter up and the tests loaded
                proc.stdin.close()
                line = _await_result(r, buf, proc, global_limit(n_tests, limit_s))
                if line:
                    result: dict[str, Any] = json.loads(line)
                    return result, "done", attempt, n_tests
                try:
                    proc.wait(timeout=0.5)
                except subprocess.TimeoutExpired:
                    return None, "global_timeout", attempt, n_tests
                err.seek(0)
                tail = [x for x in err.read().decode("utf-8", "replace").splitlines() if x.strip()][-1:]
                died = f"died ({_died(proc.returncode)}){': ' + tail[0][:200] if tail else ''}"
                return None, died, attempt, n_tests
            finally:
                os.close(r)
                kill_group(proc)
    return None, outcome, MAX_ATTEMPTS, n_tests


def recheck(
    code: str,
    tests: str | dict[str, Any],
    limit_s: float,
    review_class: FailureClass,
    review_detail: str | None,
    launcher: ProgramLauncher | None = None,
) -> Recheck:
    """The load-independent verdict of one program that EvalScope's review timed out.

    ``tests``: EvalScope's ``evaluation_sample`` JSON, or the materialized row it is derived from.
    """
    result, outcome, attempts, n_tests = run_isolated(code, tests, limit_s, launcher)
    execution = CodeExecution(
        mode="isolated_recheck",
        per_test_limit_s=limit_s,
        limit_clock="cpu_from_program_start",
        wall_backstop_s=limit_s * WALL_FACTOR,
        global_limit_s=global_limit(n_tests, limit_s) if n_tests is not None else None,
        tests=n_tests,
        attempts=attempts,
        review_class=review_class,
        review_detail=review_detail,
    )
    if result is None:
        if outcome == "never_ready":
            # the host could not even start a test process: keep the review's verdict, say so
            detail = f"{review_detail or 'timeout'}; re-check not possible: no test process came up"
            return Recheck(review_class, detail, False, execution)
        if outcome == "global_timeout":
            detail = f"no result within the re-check's global limit of {execution.global_limit_s:g} s"
            return Recheck("code_timeout", detail, False, execution)
        return Recheck("code_runtime_error", f"test process {outcome}", False, execution)
    results: list[bool | int] = result["results"]
    execution = execution.model_copy(
        update={"results": results, "wall_s": round(result["wall_s"], 3), "cpu_s": round(result["cpu_s"], 3)}
    )
    if result["passed"]:
        return Recheck("ok", None, True, execution)
    score = {
        "extracted_prediction": code,
        "metadata": {"eval_results": {"0": [results]}, "final_metadata": [[json.dumps(result["metadata"])]]},
    }
    fclass, why = classify_code(score)
    return Recheck(fclass, why, False, execution)


def reviewed_row(row: OutcomeRow, score: Mapping[str, Any], context: ReviewContext) -> OutcomeRow:
    """``LiveCodeBench.post_review``: record how the program ran; re-check a timed-out one in isolation
    and take the re-check's class (and its pass: score 1)."""
    meta = score.get("metadata") or {}
    if row.failure_class != "code_timeout":
        if "eval_results" not in meta:
            return row
        return row.model_copy(update={"code_execution": review_execution(score, tests_run(score))})
    problems = context.once(
        "problem_tests",
        lambda: ProblemTests(context.run_root, context.dataset.path, context.dataset.eval_split),
    )
    record = problems.record(row.subset, row.index, row.source_id)
    limit = float(meta.get("timeout") or 0)
    if limit <= 0:
        raise ArtifactError(f"{row.benchmark}/{row.source_id}: review records no per-test timeout")
    result = recheck(
        str(score.get("extracted_prediction") or ""),
        record,
        limit,
        row.failure_class,
        row.failure_detail,
        context.launcher,
    )
    update: dict[str, Any] = {
        "failure_class": result.failure_class,
        "failure_detail": result.failure_detail,
        "code_execution": result.execution,
    }
    main = score.get("main_score_name")
    if result.passed and row.score is not None and isinstance(main, str) and main:
        update["score"] = 1.0
        update["scores"] = {**row.scores, main: 1.0}
    return row.model_copy(update=update)


# ---------------------------------------------------------------- the test process


def _child(fd: int) -> None:
    import functools

    from evalscope.benchmarks.live_code_bench import testing_util
    from evalscope.benchmarks.live_code_bench.pass_k_utils import compute_metrics_from_results

    out = os.fdopen(fd, "w", encoding="utf-8")
    job = json.loads(sys.stdin.buffer.readline())
    if "record" in job:  # derive the tests exactly as the adapter does
        from evalscope.benchmarks.live_code_bench.load_utils import transform

        input_output = transform(dict(job["record"]))["evaluation_sample"]
    else:
        input_output = job["input_output"]
    out.write(f"ready {len(json.loads(input_output)['inputs'])}\n")
    out.flush()
    if sys.stdin.buffer.readline().strip() != b"go":
        os._exit(1)
    limit, factor = float(job["timeout"]), float(job["wall_factor"])

    backstop: dict[str, float] = {"limit": 0.0, "wall0": 0.0, "delay0": 0.0}

    def on_tick(signum: int, frame: Any) -> None:
        # the wall-clock backstop, on the program's own time: wall time minus the time it waited for a CPU
        if backstop["limit"] <= 0:
            return
        own = time.monotonic() - backstop["wall0"] - ((run_delay_s() or 0.0) - backstop["delay0"])
        if own >= backstop["limit"]:
            backstop["limit"] = 0.0
            signal.setitimer(signal.ITIMER_REAL, 0)
            raise testing_util.TimeoutException

    def cpu_alarm(seconds: float) -> None:
        # EvalScope arms one wall-clock timer per test (SIGALRM, from ``run_test``'s handler); here the
        # limit is the program's CPU time (SIGPROF, EvalScope's handler) plus the backstop above, checked
        # every TICK_S.  0 disarms both.
        signal.setitimer(signal.ITIMER_PROF, seconds)
        if seconds:
            backstop.update(limit=seconds * factor, wall0=time.monotonic(), delay0=run_delay_s() or 0.0)
            signal.signal(signal.SIGALRM, on_tick)
            signal.setitimer(signal.ITIMER_REAL, TICK_S, TICK_S)
        else:
            backstop["limit"] = 0.0
            signal.setitimer(signal.ITIMER_REAL, 0)

    signal.signal(signal.SIGPROF, functools.partial(testing_util.timeout_handler, False))
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
