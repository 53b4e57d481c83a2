"""Load-independent LiveCodeBench verdicts: re-check, in isolation, every sample the review timed out.

EvalScope's review runs the programs several at a time with a wall-clock per-test limit, so on a loaded
host a wrong or crashing program can come back as "time limit exceeded" or without a result — a class
that depends on the host's load, not on the program.  (Its global limit, ``(review_timeout + 1) ×
tests`` seconds, starts once the test process is up: ``review``.)

So every LiveCodeBench sample whose review ended as ``code_timeout`` is re-checked before it is
classified, one at a time, in the same test process (``test_process``: EvalScope's own test code,
``testing_util.run_test`` — same compile step, same stdin/call-based harness, same output comparison,
same result codes) and the same sandbox as the review, on another clock:

* the per-test limit (EvalScope's ``review_timeout``: 6 s, or the config's ``review_timeout_s``, read back
  from the review's metadata) is the CPU time the program used since the
  test started (``ITIMER_PROF`` wakes the check, ``process_time()`` decides: the timer's tick charge runs
  ahead of the real CPU time under load), which other processes on the host cannot consume; a backstop of
  ``WALL_FACTOR`` × the limit ends a program that blocks instead of computing, counted in wall time
  minus the time the process waited for a CPU (its run delay, ``/proc/PID/schedstat``) — so load does
  not count there either; the global limit over all tests is measured the same way (with a hard cap of
  plain wall time);
* the whole process tree is killed at the end (or at the global limit).

The class is the re-check's and the outcome row records how the sample was executed
(``OutcomeRow.code_execution``).  A program that truly loops forever uses its CPU limit and stays
``code_timeout``; a program that needs 60 % of the limit passes however busy the host is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.outcomes import CodeExecution, FailureClass, OutcomeRow
from evalpipe.artifacts.schema.sandbox import Denial
from evalpipe.benchmarks.base import ReviewContext
from evalpipe.benchmarks.live_code_bench.policy import WALL_FACTOR
from evalpipe.benchmarks.live_code_bench.result_codes import (
    SANDBOX_KEY,
    classify_code,
    first_meta,
    sandbox_report,
    tests_run,
    with_denials,
)
from evalpipe.benchmarks.live_code_bench.test_process import TestJob, TestRun, run_tests
from evalpipe.errors import ArtifactError
from evalpipe.sandbox.launcher import ProgramLauncher

#: Test processes started for one sample when one never comes up.
MAX_ATTEMPTS = 2
_GLOBAL_SLACK_S = 5.0


def _denials(info: Mapping[str, Any]) -> list[Denial]:
    out = []
    for d in sandbox_report(info).get("denied") or []:
        if isinstance(d, dict):
            out.append(Denial.model_validate(d))
    return out


def review_execution(score: Mapping[str, Any], tests: int | None = None) -> CodeExecution:
    """How EvalScope's review ran a sample (``score`` = the review's ``sample_score.score``)."""
    meta = score.get("metadata") or {}
    limit = float(meta.get("timeout") or 0) or None
    info = first_meta(meta.get("final_metadata"))
    sandbox = sandbox_report(info)
    return CodeExecution(
        mode="evalscope_review",
        per_test_limit_s=limit or 0.0,
        # a review made without evalpipe's test process (an older run) started its clock at the spawn
        limit_clock="wall_from_program_start" if sandbox else "wall_from_interpreter_spawn",
        global_limit_s=(limit + 1) * tests if limit and tests else None,
        tests=tests,
        sandbox=sandbox.get("kind"),
        denied=_denials(info),
        ready_s=sandbox.get("ready_s"),
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
            # import cost: pyarrow, only on this path
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


# ---------------------------------------------------------------- the re-check


@dataclass
class Recheck:
    failure_class: FailureClass
    failure_detail: str | None
    passed: bool
    execution: CodeExecution


def global_limit(n_tests: int, limit_s: float) -> float:
    return n_tests * (limit_s * WALL_FACTOR + 1) + _GLOBAL_SLACK_S


def recheck(
    code: str,
    tests: str | dict[str, Any],
    limit_s: float,
    review_class: FailureClass,
    review_detail: str | None,
    launcher: ProgramLauncher,
) -> Recheck:
    """The load-independent verdict of one program that EvalScope's review timed out, run in the
    sandbox of ``launcher``.

    ``tests``: EvalScope's ``evaluation_sample`` JSON, or the materialized row it is derived from.
    """
    job = TestJob(code=code, tests=tests, limit_s=limit_s, clock="cpu", wall_factor=WALL_FACTOR)
    run = run_tests(job, launcher, lambda n: global_limit(n, limit_s), max_attempts=MAX_ATTEMPTS)
    denied: list[str] = [d.kind for d in run.denied]
    execution = CodeExecution(
        mode="isolated_recheck",
        per_test_limit_s=limit_s,
        limit_clock="cpu_from_program_start",
        wall_backstop_s=limit_s * WALL_FACTOR,
        global_limit_s=global_limit(run.tests, limit_s) if run.tests is not None else None,
        tests=run.tests,
        attempts=run.attempts,
        review_class=review_class,
        review_detail=review_detail,
        sandbox=run.sandbox,
        denied=run.denied,
        ready_s=None if run.ready_s is None else round(run.ready_s, 3),
    )
    return _verdict(code, run, execution, review_class, denied)


def _verdict(
    code: str, run: TestRun, execution: CodeExecution, review_class: FailureClass, denied: list[str]
) -> Recheck:
    result = run.result
    if result is None:
        if run.outcome == "never_ready":
            # the host could not even start a test process: keep the review's verdict, say so
            detail = f"{execution.review_detail or 'timeout'}; re-check not possible: no test process came up"
            return Recheck(review_class, with_denials(detail, denied), False, execution)
        if run.outcome == "global_timeout":
            detail = f"no result within the re-check's global limit of {execution.global_limit_s:g} s"
            return Recheck("code_timeout", with_denials(detail, denied), False, execution)
        return Recheck(
            "code_runtime_error", with_denials(f"test process {run.outcome}", denied), False, execution
        )
    results: list[bool | int] = result["results"]
    execution = execution.model_copy(
        update={"results": results, "wall_s": round(result["wall_s"], 3), "cpu_s": round(result["cpu_s"], 3)}
    )
    if result["passed"]:
        return Recheck("ok", None, True, execution)
    metadata = {**(result.get("metadata") or {}), SANDBOX_KEY: run.sandbox_metadata()}
    score = {
        "extracted_prediction": code,
        "metadata": {"eval_results": {"0": [results]}, "final_metadata": [[json.dumps(metadata)]]},
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
    if context.launcher is None:  # model-written code never runs outside the run's sandbox
        raise ArtifactError(
            f"{row.benchmark}/{row.source_id}: no code sandbox recorded for this run (code_sandbox.json); "
            "cannot re-check the program"
        )
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
