"""LiveCodeBench failure classes from EvalScope's test results (the review's metadata or a re-check's).

EvalScope's ``testing_util`` reports one result code per test: ``True`` pass, ``False``/``-2`` wrong
answer, ``-3`` time limit, ``-4`` runtime error (``error`` holds the exception repr) or, without
``error``, a failure to compile/load the solution (``Error during testing: ...``), ``-1`` global
timeout.  ``[-2]`` with empty metadata is EvalScope's stand-in when the test process returned nothing
(it died or hit the global timeout).

evalpipe runs every program in the run's sandbox and adds ``sandbox`` to the test metadata (``review``):
the sandbox, how the test process ended and what the sandbox denied the program — named at the end of
the failure detail (``FileNotFoundError; denied by the sandbox: filesystem``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from evalpipe.artifacts.schema.outcomes import FailureClass

_EXC_TYPE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)\(")
#: The test metadata's key for what the run's sandbox reports (``review.check_correctness``).
SANDBOX_KEY = "sandbox"
_DENIAL_WORDS = {"address_space": "address space", "file_size": "file size", "cpu_time": "CPU time",
                 "wall_time": "wall time", "sandbox_setup": "sandbox setup"}  # fmt: skip


def first_list(value: Any) -> list[Any]:
    """``eval_results`` is ``{"0": [[r1, r2, ...]]}``: the results of the single generation."""
    if isinstance(value, dict):
        value = next(iter(value.values()), [])
    while isinstance(value, list) and value and isinstance(value[0], list):
        value = value[0]
    return value if isinstance(value, list) else []


def first_meta(value: Any) -> dict[str, Any]:
    """``final_metadata`` is ``[[json_string]]``."""
    while isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def tests_run(score: Mapping[str, Any]) -> int | None:
    """How many tests the review ran (None: it recorded no results)."""
    return len(first_list((score.get("metadata") or {}).get("eval_results"))) or None


def sandbox_report(info: Mapping[str, Any]) -> dict[str, Any]:
    """What the sandbox reported about one program (empty for a review made without it)."""
    value = info.get(SANDBOX_KEY)
    return value if isinstance(value, dict) else {}


def denied_kinds(info: Mapping[str, Any]) -> list[str]:
    return [str(d.get("kind")) for d in sandbox_report(info).get("denied") or [] if isinstance(d, dict)]


def with_denials(detail: str | None, kinds: list[str]) -> str | None:
    """``detail`` followed by what the sandbox denied, if anything."""
    if not kinds:
        return detail
    words = ", ".join(_DENIAL_WORDS.get(k, k) for k in dict.fromkeys(kinds))
    return f"{detail}; denied by the sandbox: {words}" if detail else f"denied by the sandbox: {words}"


def classify_code(score: Mapping[str, Any]) -> tuple[FailureClass, str | None]:
    """Failure class of a LiveCodeBench solution that did not pass (``score`` = the review's
    ``sample_score.score``: ``extracted_prediction`` and ``metadata``); see the module docstring."""
    fclass, detail = _classify(score)
    info = first_meta((score.get("metadata") or {}).get("final_metadata"))
    if fclass.startswith("code_"):
        return fclass, with_denials(detail, denied_kinds(info))
    return fclass, detail


def _classify(score: Mapping[str, Any]) -> tuple[FailureClass, str | None]:
    meta = score.get("metadata") or {}
    extracted = score.get("extracted_prediction")
    if not isinstance(extracted, str) or not extracted.strip():
        return "unparsable_answer", "no fenced code block in the response"
    if "eval_results" not in meta:
        err = meta.get("error") or score.get("explanation")
        return "scoring_error", f"test harness failed: {err}" if err else "no test results in the review"
    results = first_list(meta.get("eval_results"))
    info = first_meta(meta.get("final_metadata"))
    sandbox = sandbox_report(info)
    info = {k: v for k, v in info.items() if k != SANDBOX_KEY}
    failing = next((r for r in results if r is not True), None)
    if failing is None:
        return "code_wrong_answer", "no failing test recorded"
    if failing == -3:
        return "code_timeout", info.get("error_message") or "time limit exceeded"
    if failing == -1:
        return "code_timeout", "global timeout"
    if failing == -4:
        if "error" in info:
            m = _EXC_TYPE.match(str(info["error"]))
            return "code_runtime_error", m.group(1) if m else str(info["error"])[:200]
        try:
            ast.parse(extracted)
        except SyntaxError as exc:
            return "code_compile_error", f"SyntaxError: {exc.msg} (line {exc.lineno})"
        msg = str(info.get("error_message") or "")
        return "code_runtime_error", f"raised while loading the solution (type not reported): {msg[:200]}"
    if (failing is False or failing == -2) and not info:
        outcome = str(sandbox.get("outcome") or "")
        if outcome == "global_timeout":
            return "code_timeout", "no result within the global limit"
        if outcome.startswith("died"):
            return "code_timeout", f"no result: the test process {outcome}"
        return "code_timeout", "no result from the test process (global timeout or crash)"
    return "code_wrong_answer", str(info.get("error_message") or "wrong answer")[:200]
