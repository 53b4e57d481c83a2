"""LiveCodeBench verdicts do not depend on the host's load.

The unit tests run EvalScope's test code through the isolated re-check directly (short limits), on an idle
core.  The load test runs the real EvalScope review on the bundled LiveCodeBench items with the run's CPU
saturated for its whole duration and asserts the class each program has by construction — the one an idle
host gives it: a correct program, a wrong one, a crash, a program that loops forever (stays
``code_timeout``) and one that needs ~60 % of the per-test limit on every test (passes).  It sets the
per-test limit to 1 s (``review_timeout_s``): the verdicts are relative to the limit, and a sixth of
EvalScope's 6 s default keeps the saturated run near 27 s; the other LiveCodeBench tests run the 6 s default
(``test_live_code_bench.py``: every bundled item's reference solution, idle).  The saturation is confined to
one core (``OneBusyCore``):
the loaded run and one busy process share it, so a program gets at most half a core — the 60 % program then
needs more wall time than the limit on every test, and only the re-check's CPU-time clock passes it — while
the suite's other tests keep the other cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.config import config_data, entry
from scripted_server import Rule, ScriptedServer

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.benchmarks.live_code_bench.policy import WALL_FACTOR, policy_text
from evalpipe.benchmarks.live_code_bench.recheck import recheck
from evalpipe.config.code_execution import CodeExecutionConfig
from evalpipe.config.models import RunConfig
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.evalscope_bridge.stage import run_evalscope
from evalpipe.resolve import resolve as resolve_run
from evalpipe.samplers import build_manifest
from evalpipe.samplers.loading import load_benchmark
from evalpipe.sandbox.launcher import ProgramLauncher
from evalpipe.sandbox.probe import resolve

REPO = Path(__file__).resolve().parents[2]
BUNDLED = REPO / "evalpipe" / "selftest" / "data" / "livecodebench"
STDIO = json.dumps({"inputs": ["3\n1 2 3", "2\n5 5"], "outputs": ["6", "10"], "fn_name": None})
#: The run's default sandbox (``code_execution.sandbox: auto``): every program here runs in it.
LAUNCHER = ProgramLauncher.for_sandbox(resolve(CodeExecutionConfig()))
SUM = "n = int(input())\nprint(sum(map(int, input().split())))"


def _burn(seconds: float) -> str:
    """Statements that use ``seconds`` of CPU time (a program that computes for that long)."""
    return f"import time\n_t = time.process_time()\nwhile time.process_time() - _t < {seconds}:\n    pass\n"


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (SUM, ("ok", None)),
        ("n = int(input())\nprint(0)", ("code_wrong_answer", "Wrong answer at output_line_idx=0: 0 != 6")),
        ("a = []\nprint(a[3])", ("code_runtime_error", "IndexError")),
        ("def f(:\n    pass", ("code_compile_error", "SyntaxError: invalid syntax (line 1)")),
        ("while True:\n    pass", ("code_timeout", "Time Limit Exceeded")),
    ],
)
def test_recheck_classes_with_evalscope_test_code(code: str, expected: tuple) -> None:
    r = recheck(
        code,
        STDIO,
        1.0,
        "code_timeout",
        "no result from the test process (global timeout or crash)",
        LAUNCHER,
    )
    assert (r.failure_class, r.failure_detail) == expected
    assert r.passed is (expected[0] == "ok")
    e = r.execution
    assert (e.mode, e.limit_clock, e.per_test_limit_s, e.wall_backstop_s, e.tests, e.attempts) == (
        "isolated_recheck", "cpu_from_program_start", 1.0, 1.0 * WALL_FACTOR, 2, 1,
    )  # fmt: skip
    assert e.review_class == "code_timeout" and e.results
    if expected[0] == "code_timeout":
        assert e.results == [-3] and e.cpu_s >= 0.9  # the CPU limit, not the wall clock, ended it


def test_limit_is_per_test_cpu_time_and_a_blocked_program_hits_the_wall_backstop() -> None:
    # 60 % of the limit on *each* test passes (the limit is per test, from the test's own start)
    r = recheck(_burn(0.6) + SUM, STDIO, 1.0, "code_timeout", None, LAUNCHER)
    assert r.failure_class == "ok" and r.execution.results == [True, True]
    assert r.execution.cpu_s >= 1.15
    # a program that sleeps uses no CPU: the wall-clock backstop ends it, still a timeout
    t0 = time.monotonic()
    r = recheck("import time\ntime.sleep(60)", STDIO, 0.5, "code_timeout", None, LAUNCHER)
    assert (r.failure_class, r.execution.results) == ("code_timeout", [-3])
    assert 0.5 * WALL_FACTOR <= r.execution.wall_s < 0.5 * WALL_FACTOR + 2 and time.monotonic() - t0 < 30


def test_a_program_that_swallows_every_timeout_hits_the_global_limit() -> None:
    """The per-test CPU limit and the wall backstop both raise inside the program, which swallows them and
    spins on: only the global limit over both tests (on the program's own time) ends it.  A short
    per-test limit keeps that spin short: the global limit is mostly its fixed slack (9 s here, 12 s at
    0.5 s per test), and nothing else depends on the per-test limit's size."""
    swallow = "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"
    r = recheck(swallow, STDIO, 0.2, "code_timeout", None, LAUNCHER)
    limit = 2 * (0.2 * WALL_FACTOR + 1) + 5
    assert (r.failure_class, r.failure_detail) == (
        "code_timeout", f"no result within the re-check's global limit of {limit:g} s"
    )  # fmt: skip
    assert r.execution.global_limit_s == limit and r.execution.results is None


def test_a_test_process_that_dies_is_a_runtime_error_naming_the_signal() -> None:
    r = recheck("import os\nos.abort()", STDIO, 1.0, "code_timeout", None, LAUNCHER)
    assert r.failure_class == "code_runtime_error"
    assert r.failure_detail.startswith("test process died (SIGABRT)")
    assert r.execution.results is None


@pytest.mark.parametrize("sandbox", ["bwrap", None])
def test_policy_text_names_both_clocks_and_the_sandbox(sandbox: str | None) -> None:
    text = policy_text(6, sandbox)
    assert "6 s of wall-clock time" in text and "6 s of the program's CPU time" in text
    assert f"after {6 * WALL_FACTOR} s of wall time not spent waiting for a CPU" in text
    assert ("run in the run's sandbox (bwrap)" in text) is (sandbox == "bwrap")
    assert ("on the host without a sandbox" in text) is (sandbox is None)


# ---------------------------------------------------------------- the load test

# bundled item → role; each has 3 tests (stdin items and one call-based item)
ROLES = {
    "akc101_a": "correct",
    "akc101_b": "wrong",
    "akc098_f": "index_error",
    "akc102_c": "loops_forever",
    "akc102_d": "needs_60_percent",
    "90101": "correct_call_based",
}
EXPECTED = {
    "correct": "ok",
    "wrong": "code_wrong_answer",
    "index_error": "code_runtime_error:IndexError",
    "loops_forever": "code_timeout",
    "needs_60_percent": "ok",
    "correct_call_based": "ok",
}


#: the load test's per-test limit (the config's ``review_timeout_s``)
LOAD_LIMIT_S = 1.0


def _config() -> RunConfig:
    lcb = entry(
        "live_code_bench",
        total=len(ROLES),
        subset="release_v6",
        few_shot=0,
        source={"local": str(BUNDLED)},
        review_timeout_s=LOAD_LIMIT_S,
    )
    generation = {"concurrency": 6, "max_tokens": {"live_code_bench": 512}, "request_timeout_s": 60}
    return RunConfig.model_validate(
        config_data(name="code-recheck-load", generation=generation, benchmarks=[lcb])
    )


def _answers(limit_s: float) -> dict[str, str]:
    sol = json.loads((REPO / "evalpipe/selftest/data/solutions.json").read_text(encoding="utf-8"))[
        "live_code_bench"
    ]
    return {
        "akc101_a": sol["akc101_a"],
        "akc101_b": "s = input()\nprint('Maybe')",
        "akc098_f": "a = []\nprint(a[3])",
        "akc102_c": "while True:\n    pass",
        "akc102_d": _burn(0.6 * limit_s) + sol["akc102_d"],
        "90101": sol["90101"],
    }


def _run(root: Path) -> dict[str, object]:
    cfg = _config()
    data = load_benchmark(cfg, "live_code_bench")
    keep = [r for r in data.eval.records if r.source_id in ROLES]
    data = replace(data, eval=replace(data.eval, records=keep))
    manifest, _ = build_manifest(cfg, {"live_code_bench": data})
    rundir = RunDir(root)
    rundir.root.mkdir(parents=True)
    write_model(rundir.manifest, manifest)
    index_map = materialize(rundir, manifest, {"live_code_bench": data}, resolve_run(cfg))
    answers = _answers(LOAD_LIMIT_S)
    rules = [
        Rule(r.raw["question_content"], f"```python\n{answers[r.source_id]}\n```\n", name=r.source_id)
        for r in keep
    ]
    with ScriptedServer(rules, served_name=cfg.model.served_name) as srv:
        run_evalscope(resolve_run(cfg), rundir, index_map, api_url=srv.base_url)
    return {o.source_id: o for o in write_outcomes(rundir, manifest, index_map, resolve_run(cfg).benchmarks)}


class OneBusyCore:
    """For the ``with`` block: this process (so every process it starts: the EvalScope worker, its sandboxes,
    the programs) and ``n`` processes spinning in their own process groups, all on one core."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen] = []
        self.allowed = os.sched_getaffinity(0)
        self.core = {max(self.allowed)}

    def __enter__(self) -> OneBusyCore:
        os.sched_setaffinity(0, self.core)  # inherited by every child started from here on
        for _ in range(self.n):
            self.procs.append(
                subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            )
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        os.sched_setaffinity(0, self.allowed)


def test_classes_under_cpu_saturation_are_each_programs_own(tmp_path: Path) -> None:
    n_busy = 1
    with OneBusyCore(n_busy) as busy:
        t0 = time.monotonic()
        loaded = _run(tmp_path / "loaded")
        t_loaded = time.monotonic() - t0
    classes_loaded = {sid: o.failure_label for sid, o in loaded.items()}
    expected = {sid: EXPECTED[role] for sid, role in ROLES.items()}

    def how(o: OutcomeRow) -> str:
        e = o.code_execution
        return f"{o.failure_label} ({e.mode}{', review: ' + str(e.review_class) if e.review_class else ''})"

    report = {
        "busy_processes": n_busy,
        "core": sorted(busy.core),
        "seconds": round(t_loaded, 1),
        "samples": {sid: how(loaded[sid]) for sid in ROLES},
    }
    print(json.dumps(report, indent=1))  # the measured classes, visible with -s
    assert classes_loaded == expected, report
    assert {sid: o.score for sid, o in loaded.items()} == {
        sid: float(EXPECTED[role] == "ok") for sid, role in ROLES.items()
    }, report
    # the load was real: the program needing 60 % of the limit got too little CPU to finish within the review's
    # wall-clock limit, and passed on the re-check's CPU-time limit
    needs_60 = loaded["akc102_d"].code_execution
    assert (needs_60.mode, needs_60.review_class) == ("isolated_recheck", "code_timeout"), report
    # every sample records how it ran; the infinite loop was re-checked and stayed a timeout on its CPU limit
    loop = loaded["akc102_c"].code_execution
    # the limit is the program's own CPU time, exactly (process_time(), not ITIMER_PROF's tick charge, which
    # ran ahead under load and once stopped this loop at 1.755 s of a 2.0 s limit): never stopped early
    assert loop.mode == "isolated_recheck" and loop.results == [-3] and loop.cpu_s >= LOAD_LIMIT_S, report
    # the config's limit reached EvalScope's review and the re-check (review_timeout_s)
    assert {o.code_execution.per_test_limit_s for o in loaded.values()} == {LOAD_LIMIT_S}, report
    assert all(o.code_execution is not None for o in loaded.values())
    # ... and every program ran in the default sandbox, in the review and in the re-check
    assert {o.code_execution.sandbox for o in loaded.values()} == {LAUNCHER.kind}, report


def test_recheck_derives_the_tests_from_the_materialized_row_as_the_adapter_does(
    tmp_path: Path, shared_datasets: Path
) -> None:
    """A real release_v6 row as materialized: the test process derives EvalScope's ``evaluation_sample``
    with the adapter's ``transform`` (public + private tests) and runs every test."""
    from evalscope_helpers import picked_run, run_config

    from evalpipe.benchmarks.live_code_bench.recheck import ProblemTests

    cfg = run_config({"live_code_bench": 1})
    rundir, manifest, datasets = picked_run(
        tmp_path / "run", cfg, {"live_code_bench": ["abc387_b"]}, datasets_root=shared_datasets
    )
    index_map = materialize(rundir, manifest, datasets, resolve_run(cfg))
    ds, entry = index_map.dataset("live_code_bench"), index_map.entries[0]
    record = ProblemTests(rundir.root, ds.path, ds.eval_split).record(entry.subset, entry.index, "abc387_b")
    correct = "x = int(input())\nprint(sum(i * j for i in range(1, 10) for j in range(1, 10) if i * j != x))"
    r = recheck(correct, record, 6.0, "code_timeout", None, LAUNCHER)
    assert r.failure_class == "ok", r
    n = len(json.loads(record["public_test_cases"])) + len(json.loads(record["private_test_cases"]))
    assert r.execution.tests == len(r.execution.results) == n
    r = recheck("print(0)", record, 6.0, "code_timeout", None, LAUNCHER)
    assert r.failure_class == "code_wrong_answer"
    with pytest.raises(Exception, match="is not question_id"):
        ProblemTests(rundir.root, ds.path, ds.eval_split).record(entry.subset, entry.index, "abc999_z")
