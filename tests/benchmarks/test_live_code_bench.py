"""LiveCodeBench as a plugin: EvalScope's test result codes → failure classes, the rows written for the
adapter, and the benchmark's own hooks as the outcome table calls them (no other module names it)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from evalpipe.benchmarks import benchmark
from evalpipe.benchmarks.live_code_bench import adapter_row
from evalpipe.benchmarks.live_code_bench.result_codes import classify_code
from evalpipe.errors import DataError

# ---------------------------------------------------------------- result codes (moved from test_evalscope_outcomes)


def review_score(results: list, meta: dict, extracted: str = "print(1)") -> dict:
    return {
        "value": {"acc": 0.0},
        "extracted_prediction": extracted,
        "main_score_name": "acc",
        "metadata": {"eval_results": {"0": [results]}, "final_metadata": [[json.dumps(meta)]]},
    }


@pytest.mark.parametrize(
    ("results", "meta", "extracted", "expected"),
    [
        ([-4], {"error": "IndexError('list index out of range')", "error_code": -4}, "x", ("code_runtime_error", "IndexError")),
        ([True, -4], {"error": "ZeroDivisionError('division by zero')"}, "x", ("code_runtime_error", "ZeroDivisionError")),
        ([-3], {"error": "TimeoutException", "error_code": -3, "error_message": "Time Limit Exceeded"}, "x",
         ("code_timeout", "Time Limit Exceeded")),
        ([-2], {}, "x", ("code_timeout", "no result from the test process (global timeout or crash)")),
        ([True, -2], {"error_code": -2, "error_message": "Wrong answer at output_line_idx=0: 1 != 2"}, "x",
         ("code_wrong_answer", "Wrong answer at output_line_idx=0: 1 != 2")),
        ([False], {"error_code": -2, "error_message": "Wrong Answer"}, "x", ("code_wrong_answer", "Wrong Answer")),
        ([-4], {"error_code": -4, "error_message": "Error during testing: invalid syntax"}, "def f(:\n  pass",
         ("code_compile_error", "SyntaxError: invalid syntax (line 1)")),
    ],
)  # fmt: skip
def test_failure_classes_from_result_codes(
    results: list, meta: dict, extracted: str, expected: tuple
) -> None:
    fclass, detail = classify_code(review_score(results, meta, extracted))
    assert fclass == expected[0]
    assert detail == expected[1] or (expected[0] == "code_compile_error" and detail.startswith("SyntaxError"))


def test_unparsable_harness_error_and_load_error() -> None:
    assert classify_code(review_score([-4], {}, extracted=""))[0] == "unparsable_answer"
    harness = {"value": {"acc": 0.0}, "extracted_prediction": "x", "metadata": {"error": "spawn failed"}}
    assert classify_code(harness) == ("scoring_error", "test harness failed: spawn failed")
    fclass, detail = classify_code(
        review_score(
            [-4], {"error_code": -4, "error_message": "Error during testing: name 'q' is not defined"}, "q()"
        )
    )
    assert fclass == "code_runtime_error" and "type not reported" in detail


# ---------------------------------------------------------------- rows for the adapter (moved from test_evalscope_materialize)


def test_private_test_cases_rules() -> None:
    base = {"question_id": "q", "contest_date": datetime(2025, 1, 4), "public_test_cases": "[]"}
    assert adapter_row(base, pinned=False, where="f:1")["private_test_cases"] == "[]"
    assert (
        adapter_row({**base, "private_test_cases": ""}, pinned=False, where="f:1")["private_test_cases"]
        == "[]"
    )
    assert adapter_row(base, pinned=False, where="f:1")["contest_date"] == "2025-01-04T00:00:00"
    ok = adapter_row(
        {**base, "private_test_cases": '[{"input": "1", "output": "2"}]'}, pinned=False, where="f:1"
    )
    assert ok["private_test_cases"] == '[{"input": "1", "output": "2"}]'
    pickled = {
        **base,
        "private_test_cases": "eJxrYJmqxgABPAEYAQQ=",
    }  # base64/zlib/pickle, as upstream LiveCodeBench
    with pytest.raises(DataError, match=r"not JSON.*not pinned"):
        adapter_row(pickled, pinned=False, where="f:7")
    assert (
        adapter_row(pickled, pinned=True, where="f:7")["private_test_cases"] == pickled["private_test_cases"]
    )
    with pytest.raises(DataError, match="JSON list"):
        adapter_row({**base, "private_test_cases": '{"a": 1}'}, pinned=True, where="f:1")


# ---------------------------------------------------------------- the hooks the outcome table calls


def test_outcome_classification_asks_the_plugin() -> None:
    """``outcomes.classify`` names no benchmark: a wrong program's class comes from this plugin's hook."""
    from evalpipe.artifacts.schema.evalscope import IndexMapEntry
    from evalpipe.evalscope_bridge.outcomes import classify

    entry = IndexMapEntry(
        benchmark="live_code_bench", subset="release_v6", index=0, source_id="q", record_sha256="r",
        stratum="easy", question="Q?",
    )  # fmt: skip
    pred = {
        "index": 0,
        "model_output": {"id": "r1", "choices": [{"message": {"content": "x"}, "stop_reason": "stop"}]},
    }
    score = review_score([-4], {"error": "IndexError('list index out of range')", "error_code": -4}, "x")
    rev = {"index": 0, "sample_score": {"score": score}}
    assert classify(benchmark("live_code_bench"), entry, pred, rev, {}, punkt_tab=True) == (
        "code_runtime_error",
        "IndexError",
    )
    assert benchmark("live_code_bench").classify_wrong(score) == classify_code(score)


def test_post_review_records_how_the_review_ran(tmp_path: Path) -> None:
    """A reviewed program that did not time out keeps its class and records EvalScope's review limits;
    a review without test results is left as it is (nothing ran)."""
    from evalpipe.artifacts.schema.evalscope import IndexMap
    from evalpipe.artifacts.schema.outcomes import OutcomeRow
    from evalpipe.benchmarks.base import ReviewContext

    row = OutcomeRow(
        benchmark="live_code_bench", subset="release_v6", index=0, source_id="q", stratum="easy",
        prediction_present=True, review_present=True, n_predictions=1, n_reviews=1, score=0.0,
        failure_class="code_wrong_answer", failure_detail="Wrong Answer",
    )  # fmt: skip
    context = ReviewContext("live_code_bench", tmp_path, IndexMap(datasets=[], entries=[]))
    score = review_score([True, False, True], {"error_code": -2, "error_message": "Wrong Answer"})
    score["metadata"]["timeout"] = 6
    out = benchmark("live_code_bench").post_review(row, score, context)
    assert (out.failure_class, out.failure_detail, out.score) == ("code_wrong_answer", "Wrong Answer", 0.0)
    e = out.code_execution
    assert e is not None and (e.mode, e.limit_clock, e.per_test_limit_s, e.tests, e.global_limit_s) == (
        "evalscope_review", "wall_from_interpreter_spawn", 6.0, 3, 21.0,
    )  # fmt: skip
    harness = {"value": {"acc": 0.0}, "extracted_prediction": "x", "metadata": {"error": "spawn failed"}}
    assert benchmark("live_code_bench").post_review(row, harness, context) is row


def test_test_processes_start_in_the_runs_sandbox(tmp_path: Path) -> None:
    """The re-check's test process starts through the run's ``ProgramLauncher``: in bwrap a program cannot
    see a file outside its view (a runtime error naming the denial), unsandboxed it reads it — the same
    program, the same launcher seam; a correct program passes in both."""
    from evalpipe.benchmarks.live_code_bench.recheck import recheck
    from evalpipe.sandbox.launcher import ProgramLauncher

    planted = tmp_path / "planted.txt"
    planted.write_text("6\n")
    tests = json.dumps({"inputs": ["3\n1 2 3"], "outputs": ["6"], "fn_name": None})
    reads = f"print(open({str(planted)!r}).read())"
    correct = "n = int(input())\nprint(sum(map(int, input().split())))"
    for kind in ("bwrap", "none"):
        launcher = ProgramLauncher.for_sandbox(kind)
        r = recheck(correct, tests, 2.0, "code_timeout", None, launcher)
        assert (r.failure_class, r.passed, r.execution.tests, r.execution.sandbox) == ("ok", True, 1, kind)
    boxed = recheck(reads, tests, 2.0, "code_timeout", None, ProgramLauncher.for_sandbox("bwrap"))
    assert (boxed.failure_class, boxed.failure_detail) == (
        "code_runtime_error", "FileNotFoundError; denied by the sandbox: filesystem",
    )  # fmt: skip
    assert [d.kind for d in boxed.execution.denied] == ["filesystem"]
    host = recheck(reads, tests, 2.0, "code_timeout", None, ProgramLauncher.for_sandbox("none"))
    assert (host.failure_class, host.passed, host.execution.denied) == ("ok", True, [])


# ---------------------------------------------------------------- the review's programs, in the sandbox

BUNDLED = Path(__file__).resolve().parents[2] / "evalpipe" / "selftest" / "data"
PROGRAMS = {"correct": None, "wrong": "print(0)", "runtime_error": "a = []\nprint(a[3])"}


def bundled_review_jobs() -> list[tuple[str, dict, str]]:
    """(id, EvalScope's review sample, program): every bundled item with its solution, and the first item of
    each test type (stdin, call-based) also with a wrong and a crashing program — the review's input exactly
    as the adapter builds it (``load_utils.transform``).  Each job is a sandboxed interpreter start (~0.6 s
    idle); the failing programs' results depend on the test type, not on the item."""
    from evalscope.benchmarks.live_code_bench.load_utils import transform

    rows = [json.loads(x) for x in (BUNDLED / "livecodebench" / "code_generation_lite_selftest.jsonl").open()]
    solutions = json.loads((BUNDLED / "solutions.json").read_text(encoding="utf-8"))["live_code_bench"]
    jobs = []
    seen_types: set[bool] = set()
    for row in rows:
        row.setdefault("private_test_cases", "[]")  # as evalpipe materializes a row without private tests
        sample = {"input_output": transform(dict(row))["evaluation_sample"]}
        test_type = bool(json.loads(sample["input_output"]).get("fn_name"))
        programs = PROGRAMS if test_type not in seen_types else {"correct": None}
        seen_types.add(test_type)
        for name, code in programs.items():
            jobs.append((f"{row['question_id']}/{name}", sample, code or solutions[row["question_id"]]))
    return jobs


def _comparable(results: list, metadata: dict) -> tuple[list, dict]:
    plain = [r.item() if hasattr(r, "item") else r for r in results]
    # wall-clock seconds (differ run to run) and evalpipe's own report of the sandbox
    return plain, {k: v for k, v in metadata.items() if k not in ("execution time", "sandbox")}


@contextmanager
def forkserver_for_evalscopes_check() -> Iterator[None]:
    """EvalScope's ``codegen_check_correctness`` unchanged, its two processes (a multiprocessing manager
    and the process that runs ``_temp_run`` → ``testing_util.run_test``) forked from a server that has
    EvalScope's test code imported, instead of ``spawn``-ed interpreters that import it again (~2 s each
    idle, over 5 s on a loaded host: most of the test's time).  Each program still runs in a fresh process
    of its own (``run_test``'s reliability guard disables the process it runs in) with the same arguments,
    so results and metadata are EvalScope's; only the start-up is shared, and it has no part in the
    results (none of these programs comes near the 30 s limit).  The server is stopped on leaving and
    its preload list restored."""
    import multiprocessing
    import multiprocessing.forkserver
    from types import SimpleNamespace

    from evalscope.benchmarks.live_code_bench import evaluate_utils

    ctx = multiprocessing.get_context("forkserver")
    server = multiprocessing.forkserver._forkserver
    preload = list(server._preload_modules)
    ctx.set_forkserver_preload(
        [
            "evalscope.benchmarks.live_code_bench.evaluate_utils",
            "evalscope.benchmarks.live_code_bench.testing_util",
        ]
    )
    methods: list[str] = []

    def get_context(method: str) -> Any:
        methods.append(method)
        return ctx

    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(evaluate_utils, "multiprocessing", SimpleNamespace(get_context=get_context))
            yield
    finally:
        server._stop()
        server._preload_modules = preload  # as it was for the rest of the session
    assert set(methods) == {"spawn"}  # EvalScope asked for spawn, and only spawn, which the server replaced


# 16 sandboxed interpreter starts (EvalScope's side forks): ~12 s idle, a minute on a loaded 2-core host
@pytest.mark.timeout(900)
def test_the_sandboxed_review_gives_evalscopes_own_results_on_every_bundled_item(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Same results on the real path: what the review now calls for each program (``review.check_correctness``
    in the default sandbox) returns exactly what EvalScope's own ``codegen_check_correctness`` returns
    unsandboxed — results and metadata, apart from the wall-clock ``execution time`` — for every bundled
    LiveCodeBench item with its solution, a wrong answer and a runtime error; and it records its sandbox.
    (``test_sandbox``'s same-results test covers EvalScope's test code in bwrap, unshare and none.)
    EvalScope's side starts its processes from a fork server (``forkserver_for_evalscopes_check``)."""
    from concurrent.futures import ThreadPoolExecutor

    from evalscope.benchmarks.live_code_bench import evaluate_utils

    from evalpipe.benchmarks.live_code_bench import review
    from evalpipe.config.code_execution import CodeExecutionConfig
    from evalpipe.sandbox.launcher import ProgramLauncher
    from evalpipe.sandbox.probe import resolve

    original = evaluate_utils.codegen_check_correctness
    assert original is not review.check_correctness  # nothing installed the replacement in this process
    kind = resolve(CodeExecutionConfig())
    monkeypatch.setattr(review, "_launcher", ProgramLauncher.for_sandbox(kind))
    jobs = bundled_review_jobs()
    with ThreadPoolExecutor(2) as pool:  # two at a time, as a review runs them concurrently
        # EvalScope's own path with a 30 s limit: its global limit starts before its two processes are up,
        # which a loaded host can use up (issue 13); none of these programs comes near any limit
        with forkserver_for_evalscopes_check():
            expected = list(pool.map(lambda j: original(j[1], j[2], 30, debug=False), jobs))
        boxed = list(pool.map(lambda j: review.check_correctness(j[1], j[2], 6, debug=False), jobs))
    passed = {j[0] for j, (results, _) in zip(jobs, expected, strict=True) if all(r is True for r in results)}
    assert passed == {j[0] for j in jobs if j[0].endswith("/correct")}
    for job, want, got in zip(jobs, expected, boxed, strict=True):
        assert _comparable(*got) == _comparable(*want), job[0]
        assert got[1]["sandbox"]["kind"] == kind and got[1]["sandbox"]["outcome"] == "done"


def test_hostile_programs_in_the_review_are_denied_and_classified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The review's path (``review.check_correctness``, default sandbox) with programs that go for the host:
    a planted secret file, an API key in the worker's environment, the recording proxy's port, the run
    directory.  Each fails inside, its class names what the sandbox denied, and the host is untouched."""
    import hashlib
    import socket

    from evalpipe.benchmarks.live_code_bench import review
    from evalpipe.config.code_execution import CodeExecutionConfig
    from evalpipe.sandbox.launcher import ProgramLauncher
    from evalpipe.sandbox.probe import resolve

    secret_text = "evalpipe-review-planted-secret-41c2"
    secret = tmp_path / "secret.txt"
    secret.write_text(secret_text)
    rundir = tmp_path / "run"
    rundir.mkdir()
    monkeypatch.setenv("EVALPIPE_PLANTED_API_KEY", secret_text)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    kind = resolve(CodeExecutionConfig())
    monkeypatch.setattr(review, "_launcher", ProgramLauncher.for_sandbox(kind))
    # a stdin item: the program runs at the top level, as the hostile ones are written
    sample = next(s for _, s, _ in bundled_review_jobs() if not json.loads(s["input_output"]).get("fn_name"))
    hostile = {
        "filesystem": f"print(open({str(secret)!r}).read())",
        "environment": "import os\nprint(os.environ['EVALPIPE_PLANTED_API_KEY'])",
        "network": f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=3)",
        "run directory": f"open({str(rundir / 'forged.jsonl')!r}, 'w').write('x')",
    }
    before = hashlib.sha256(secret.read_bytes()).hexdigest()
    try:
        for target, code in hostile.items():
            results, metadata = review.check_correctness(sample, code, 6, debug=False)
            score = {"extracted_prediction": code,
                     "metadata": {"eval_results": {"0": [results]}, "final_metadata": [[json.dumps(metadata)]]}}  # fmt: skip
            fclass, detail = classify_code(score)
            denial = "filesystem" if target == "run directory" else target
            assert fclass == "code_runtime_error", (target, detail)
            assert detail is not None and detail.endswith(f"denied by the sandbox: {denial}"), (
                target,
                detail,
            )
            assert [d["kind"] for d in metadata["sandbox"]["denied"]] == [denial]
            assert secret_text not in json.dumps(metadata)
        with pytest.raises(BlockingIOError):
            listener.accept()  # no connection reached the 'proxy'
    finally:
        listener.close()
    assert hashlib.sha256(secret.read_bytes()).hexdigest() == before
    assert list(rundir.iterdir()) == []
