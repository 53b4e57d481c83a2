"""EvalScope's review of LiveCodeBench with every program run in the run's sandbox.

EvalScope 1.14 runs each program through one function, ``evaluate_utils.codegen_check_correctness(sample,
generation, timeout, debug) -> (results, metadata)``: a spawned multiprocessing manager plus a spawned
interpreter that inherits the EvalScope worker's environment (allow-listed since, but whatever the
worker has), its network and its working directory (the run directory), and ``exec``s the program next to
``reliability_guard`` — "NOT a security sandbox", in its own docstring.  EvalScope's own sandbox needs a
Docker daemon and replaces the harness (other result shapes), so evalpipe leaves it off.

``install(launcher)`` — called by ``LiveCodeBench.prepare_review`` in the EvalScope worker before the
evaluation — replaces that one function for the worker's lifetime with ``check_correctness``: the same
signature and the same test code (``testing_util.run_test`` in ``test_process``), EvalScope's per-test
wall-clock limit and its global limit ``(timeout + 1) × tests``, but the program runs in a test process
started through the run's sandbox, and the global limit starts when that process is ready (its
interpreter, the sandbox and EvalScope's test code up), not at the spawn.  The review's metadata gains
``sandbox``: the sandbox, how the test process ended and what the sandbox denied (``result_codes`` puts
that into the failure detail).  With no result EvalScope's own stand-in is returned (``[-2]``: a
``code_timeout`` the re-check then runs again alone), as its harness records a lost test process.
"""

from __future__ import annotations

import json
from typing import Any

from evalpipe.benchmarks.live_code_bench.result_codes import SANDBOX_KEY
from evalpipe.benchmarks.live_code_bench.test_process import TestJob, TestRun, run_tests
from evalpipe.sandbox.launcher import ProgramLauncher

_launcher: ProgramLauncher | None = None


def evalscope_global_limit(limit_s: float) -> Any:
    """EvalScope's global limit on all tests of a program: ``(timeout + 1) × tests`` seconds."""
    return lambda n_tests: (limit_s + 1) * n_tests


def review_result(run: TestRun) -> tuple[list[bool | int], dict[str, Any]]:
    """``(results, metadata)`` as EvalScope's ``codegen_check_correctness`` returns them, plus ``sandbox``."""
    if run.result is None:
        # EvalScope's harness records a test process that returned nothing as [-2] with empty metadata
        return [-2], {SANDBOX_KEY: run.sandbox_metadata()}
    metadata = dict(run.result.get("metadata") or {})
    metadata[SANDBOX_KEY] = run.sandbox_metadata()
    return list(run.result["results"]), metadata


def check_correctness(
    sample: dict[str, Any], generation: str, timeout: float, debug: bool = True
) -> tuple[list[bool | int], dict[str, Any]]:
    """Drop-in for ``evaluate_utils.codegen_check_correctness``, running the program in the sandbox."""
    if _launcher is None:  # never unsandboxed by accident: install() names the sandbox
        raise RuntimeError("LiveCodeBench review: no sandbox installed for model-written code")
    json.loads(sample["input_output"])  # the same error as EvalScope's for a malformed sample
    job = TestJob(code=generation, tests=sample["input_output"], limit_s=float(timeout), clock="wall")
    return review_result(run_tests(job, _launcher, evalscope_global_limit(float(timeout))))


def install(launcher: ProgramLauncher) -> None:
    """Route every program EvalScope's LiveCodeBench review runs in this process through ``launcher``."""
    global _launcher
    # import cost: evalscope, only on this path
    from evalscope.benchmarks.live_code_bench import evaluate_utils

    _launcher = launcher
    evaluate_utils.codegen_check_correctness = check_correctness
