"""``outcomes.jsonl``: one row per manifest entry, read from EvalScope's prediction and review caches.

Every manifest entry gets a row — a missing prediction or review is a row with that failure class,
never a gap in the denominator.  The failure class says what happened to the sample:

* ``api_error``: the request failed (recorded by the worker) or the server rejected it;
* ``missing_prediction`` / ``missing_review``: EvalScope left no record and no error;
* ``scoring_error``: a review exists but produced no score (e.g. IFEval without NLTK ``punkt_tab``);
* ``budget_exhausted_in_reasoning``: stopped by the output budget while still thinking — reasoning and no
  final answer (``evalpipe.recording.reasoning`` recognises parsed and inline ``<think>`` reasoning alike), counted
  incorrect;
* ``budget_exhausted``: stop reason ``max_tokens`` (OpenAI ``length``) with the answer itself truncated,
  counted incorrect;
* ``ok``, or the benchmark's class for a scored answer that is not correct (``Benchmark.classify_wrong``:
  ``wrong`` / ``unparsable_answer`` when no answer could be extracted, or its own, e.g. the ``code_*``
  classes of a benchmark whose answers are programs, read from the review's test metadata).

Every reviewed row then passes through its benchmark's ``post_review`` hook, which may record how the
sample was checked and re-judge it (e.g. re-run a program whose review verdict depends on the host's
load); the hook gets a ``ReviewContext`` per benchmark (run directory, index map, and the launcher of
the run's code sandbox, ``code_sandbox.json``, for a process that runs model code).  This module names no benchmark.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from evalpipe.artifacts import RunDir, read_jsonl, read_model, write_jsonl_atomic
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.artifacts.schema.evalscope import EvalscopeErrorRecord, EvalscopeTasks, IndexMap, IndexMapEntry
from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry
from evalpipe.artifacts.schema.outcomes import (
    AttemptOutcome,
    FailureClass,
    OutcomeRow,
    attempt_scores,
    is_correct,
)
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.sandbox import SandboxRecord
from evalpipe.benchmarks.base import ReviewContext
from evalpipe.benchmarks.parts import ScoringPart
from evalpipe.errors import ArtifactError
from evalpipe.evalscope_bridge.facts import BUDGET_STOP_REASONS
from evalpipe.evalscope_bridge.identity import (
    contains_question,
    conversation_sha256,
    row_prompt_sha256,
    user_text,
)
from evalpipe.evalscope_bridge.layout import (
    first_choice,
    model_output,
    predictions_file,
    read_lines,
    reviews_file,
    sample_score,
)
from evalpipe.evalscope_bridge.task import evalscope_index, task_repeats
from evalpipe.hashing import message_text, sha256_hex
from evalpipe.recording.reasoning import answer_text, split_message
from evalpipe.sandbox.preflight import launcher_for

Rows = dict[int, dict[str, Any]]  # the last cache line per sample index
Counts = dict[int, int]  # cache lines per sample index


def main_value(values: dict[str, float], main: str | None) -> float | None:
    """A review's main score as EvalScope's ``Score.main_value`` reads it: the value named
    ``main_score_name``, or without a name the first value (AIME's reviews name none)."""
    if main:
        return values.get(main)
    return next(iter(values.values()), None)


def _float_scores(value: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(v, bool | int | float):
                out[str(k)] = float(v)
    return out


def _gold(review: dict[str, Any] | None) -> str | None:
    if not review:
        return None
    target = review.get("target")
    if isinstance(target, list):
        target = [t for t in target if isinstance(t, str) and t]
        if not target:
            return None
        return target[0] if len(target) == 1 else json.dumps(target, ensure_ascii=False)
    return target if isinstance(target, str) and target else None


# ---------------------------------------------------------------- classification


def classify(
    spec: ScoringPart,
    entry: IndexMapEntry,
    pred: dict[str, Any] | None,
    review: dict[str, Any] | None,
    errors: dict[str, EvalscopeErrorRecord],
    *,
    punkt_tab: bool,
) -> tuple[FailureClass, str | None]:
    """``(failure_class, failure_detail)`` of one manifest entry; ``spec``: its benchmark's scoring part."""
    if pred is None:
        err = errors.get("predict")
        if err is not None:
            return "api_error", f"{err.error_type}: {err.message}"
        return "missing_prediction", None
    out = model_output(pred)
    choice = first_choice(out)
    if out is None or choice is None:
        return "api_error", "prediction has no model output"
    if out.get("error"):
        return "api_error", str(out["error"])
    stop = choice.get("stop_reason")
    if out.get("id") is None and out.get("usage") is None and stop in ("model_length", "content_filter"):
        text = message_text((choice.get("message") or {}).get("content"))
        return "api_error", f"request rejected by the server ({stop}): {text[:300]}"
    if review is None:
        err = errors.get("review")
        if err is not None:
            return "scoring_error", f"review raised {err.error_type}: {err.message}"
        return "missing_review", None
    score = sample_score(review) or {}
    values = _float_scores(score.get("value"))
    main = score.get("main_score_name")
    if not values or (main and main not in values) or score.get("status") == "excluded":
        return "scoring_error", _scoring_error_detail(spec, entry, score, punkt_tab)
    primary = main_value(values, main)
    if stop in BUDGET_STOP_REASONS:
        split = split_message((choice.get("message") or {}).get("content"))
        if split.reasoning and not split.final_answer_present:
            return (
                "budget_exhausted_in_reasoning",
                f"stop reason {stop} while still thinking: {len(split.reasoning)} reasoning characters, "
                "no final answer",
            )
        detail = f"stop reason {stop}"
        if primary and primary > 0:
            detail += f"; EvalScope scored the truncated answer {primary:g}"
        return "budget_exhausted", detail
    if primary is not None and primary >= 1.0:
        return "ok", None
    return spec.classify_wrong(score)


def _scoring_error_detail(spec: ScoringPart, entry: IndexMapEntry, score: dict[str, Any], punkt_tab: bool) -> str:
    hint = spec.scoring_error_hint(entry, score, punkt_tab)
    if hint:
        return hint
    meta = score.get("metadata") or {}
    why = score.get("explanation") or (meta.get("error") if isinstance(meta, dict) else None)
    return f"review produced no score: {why}" if why else "review produced no score (see logs/evalscope.log)"


# ---------------------------------------------------------------- table


def _rows_by_index(lines: list[Any]) -> tuple[Rows, Counts]:
    last: Rows = {}
    count: Counts = defaultdict(int)
    for line in lines:
        if line.data is None or not isinstance(line.data.get("index"), int):
            continue
        idx = line.data["index"]
        count[idx] += 1
        last[idx] = line.data
    return last, count


def _dropped(rundir: RunDir) -> dict[tuple[str, str], str]:
    """Entries the context-fit preflight dropped (with consent), and why."""
    if not rundir.context_fit.is_file():
        return {}
    fit = read_model(rundir.context_fit, ContextFit)
    return {
        (p.benchmark, p.source_id): (
            f"{p.reason}: dropped, not sent"
            if p.reason is not None  # a length beyond the context the server resolved
            else f"prompt ~{p.prompt_tokens} tokens ({fit.estimator}) + max_tokens {p.max_tokens} > context "
            f"length {fit.context_length}: dropped, not sent"
        )
        for p in fit.overlong
    }


def _dropped_row(m: ManifestEntry, detail: str) -> OutcomeRow:
    return OutcomeRow(
        benchmark=m.benchmark,
        subset=m.subset,
        index=-1,
        source_id=m.source_id,
        stratum=m.stratum,
        prediction_present=False,
        review_present=False,
        n_predictions=0,
        n_reviews=0,
        failure_class="context_overflow",
        failure_detail=detail,
    )


def build_outcomes(
    rundir: RunDir, manifest: Manifest, index_map: IndexMap, benchmarks: Mapping[str, ScoringPart],
    asked: Callable[[str, str], int] | None = None,
) -> list[OutcomeRow]:  # fmt: skip
    """One ``OutcomeRow`` per manifest entry, in manifest order, scored by the run's ``benchmarks``; ``asked``:
    the attempts an entry was asked when not all its task's ``repeats`` (an internal pilot's decision,
    ``evalpipe.run.pilot``) — the row holds those, the others were never meant to be sent."""
    tasks = read_model(rundir.evalscope_tasks, EvalscopeTasks) if rundir.evalscope_tasks.is_file() else None
    punkt = tasks.nltk_punkt_tab if tasks is not None else True
    hashes: dict[tuple[str, str], str] = {}
    for rec in read_jsonl(rundir.prompt_hashes):
        hashes.setdefault((rec["benchmark"], rec["source_id"]), rec["prompt_sha256"])
    errors: dict[tuple[str, str, int], dict[str, EvalscopeErrorRecord]] = defaultdict(dict)
    for err in read_jsonl(rundir.evalscope_errors, EvalscopeErrorRecord):
        errors[(err.benchmark, err.subset, err.index)][err.phase] = err  # the latest attempt wins

    cache: dict[tuple[str, str], tuple[Rows, Counts, Rows, Counts]] = {}

    def subset_rows(benchmark: str, subset: str) -> tuple[Rows, Counts, Rows, Counts]:
        key = (benchmark, subset)
        if key not in cache:
            task = tasks.task_for(benchmark) if tasks is not None else None
            if task is None:
                cache[key] = ({}, {}, {}, {})
            else:
                work = rundir.root / task.work_dir
                preds, n_p = _rows_by_index(
                    read_lines(predictions_file(work, task.model_id, benchmark, subset))
                )
                revs, n_r = _rows_by_index(read_lines(reviews_file(work, task.model_id, benchmark, subset)))
                cache[key] = (preds, n_p, revs, n_r)
        return cache[key]

    # reasoning tokens as the server reported them, and the seed the request carried, from the proxy's record
    # of the response EvalScope used
    reasoning_tokens: dict[str, int] = {}
    seeds: dict[str, int] = {}
    for attempt in read_jsonl(rundir.requests_log, RequestAttempt):
        if attempt.response_id and attempt.usage is not None and attempt.usage.reasoning_tokens is not None:
            reasoning_tokens[attempt.response_id] = attempt.usage.reasoning_tokens
        if attempt.response_id and attempt.seed is not None:
            seeds[attempt.response_id] = attempt.seed
    by_source = {(e.benchmark, e.source_id): e for e in index_map.entries}
    dropped = _dropped(rundir)
    # one per benchmark: what its post_review hook loads, it loads once per run; programs it runs again
    # start in the run's code sandbox (recorded at preflight)
    contexts: dict[str, ReviewContext] = {}
    sandbox = read_model(rundir.code_sandbox, SandboxRecord) if rundir.code_sandbox.is_file() else None
    launcher = launcher_for(sandbox) if sandbox is not None else None
    rows: list[OutcomeRow] = []
    for m in manifest.entries:
        entry = by_source.get((m.benchmark, m.source_id))
        if entry is None and (m.benchmark, m.source_id) in dropped:
            rows.append(_dropped_row(m, dropped[(m.benchmark, m.source_id)]))
            continue
        if entry is None:
            raise ArtifactError(
                f"{rundir.index_map}: no entry for {m.benchmark}/{m.source_id} (materialize first)"
            )
        preds, n_p, revs, n_r = subset_rows(entry.benchmark, entry.subset)
        task = tasks.task_for(entry.benchmark) if tasks is not None else None
        repeats = task_repeats(task.task) if task is not None else 1
        spec = benchmarks[entry.benchmark]
        tried: list[OutcomeRow] = []
        for attempt_no in _asked_numbers(asked, m.benchmark, m.source_id, repeats):
            idx = evalscope_index(entry.index, attempt_no, repeats)
            pred, review = preds.get(idx), revs.get(idx)
            errs = errors.get((entry.benchmark, entry.subset, idx), {})
            fclass, detail = classify(spec, entry, pred, review, errs, punkt_tab=punkt)
            recorded = _Attempt(pred, review, n_p.get(idx, 0), n_r.get(idx, 0), errs, fclass, detail)
            row = _row(entry, recorded, hashes.get((entry.benchmark, entry.source_id)), reasoning_tokens, seeds)
            if review is not None:
                context = contexts.get(entry.benchmark)
                if context is None:
                    context = ReviewContext(entry.benchmark, rundir.root, index_map, launcher)
                    contexts[entry.benchmark] = context
                row = spec.post_review(row, sample_score(review) or {}, context)
            tried.append(row)
        rows.append(_with_attempts(tried, entry.index, repeats))
    return rows


def _asked_numbers(asked: Callable[[str, str], int] | None, benchmark: str, source_id: str, repeats: int) -> range:
    """The attempt numbers an entry was asked: a prefix of its task's ``repeats`` (all without ``asked``), so
    never an index past them (the next sample's rows)."""
    numbers = range(repeats)
    return numbers if asked is None else numbers[: max(1, asked(benchmark, source_id))]


def _with_attempts(tried: list[OutcomeRow], position: int, repeats: int) -> OutcomeRow:
    """Attempt 0's row carrying every attempt (more than one asked), or the one row as it is; ``repeats``: the
    task's, which numbers the attempts' indices."""
    if len(tried) == 1:
        return tried[0]
    attempts = [
        AttemptOutcome(
            attempt=i,
            index=evalscope_index(position, i, repeats),
            response_id=r.response_id,
            response_sha256=r.response_sha256,
            request_seed=r.request_seed,
            score=r.score,
            failure_class=r.failure_class,
            correct=is_correct(r),
        )
        for i, r in enumerate(tried)
    ]
    first = tried[0].model_copy(update={"attempts": attempts})
    scores = attempt_scores(first)
    return first.model_copy(update={"mean_score": sum(scores) / len(scores)})


@dataclass(frozen=True)
class _Attempt:
    """One attempt of a sample as EvalScope left it: its prediction and review rows (None: missing), how many
    of each the index had, its error records by stage, and the failure class ``classify`` gave it."""

    pred: dict[str, Any] | None
    review: dict[str, Any] | None
    n_predictions: int
    n_reviews: int
    errors: dict[str, EvalscopeErrorRecord]
    failure_class: FailureClass
    failure_detail: str | None


def _row(
    entry: IndexMapEntry,
    attempt: _Attempt,
    expected_prompt: str | None,
    reasoning_tokens: dict[str, int] | None = None,
    seeds: dict[str, int] | None = None,
) -> OutcomeRow:
    """The outcome row of one attempt; ``reasoning_tokens`` and ``seeds`` (by response id) are what the
    recording proxy saw."""
    pred, review, errors = attempt.pred, attempt.review, attempt.errors
    failure_class, failure_detail = attempt.failure_class, attempt.failure_detail
    out = model_output(pred) if pred else None
    choice = first_choice(out)
    usage = (out or {}).get("usage") or {}
    content = (choice.get("message") or {}).get("content") if choice else None
    text = message_text(content) if choice else None
    split = split_message(content) if choice else None
    response_id = (out or {}).get("id")
    r_tokens = (reasoning_tokens or {}).get(response_id) if isinstance(response_id, str) else None
    if r_tokens is None and isinstance(usage.get("reasoning_tokens"), int):
        r_tokens = usage["reasoning_tokens"]  # EvalScope's copy of completion_tokens_details
    score = sample_score(review) if review else None
    values = _float_scores((score or {}).get("value"))
    main = (score or {}).get("main_score_name")
    api_error = None
    if out and out.get("error"):
        api_error = str(out["error"])
    elif pred is None and "predict" in errors:
        api_error = f"{errors['predict'].error_type}: {errors['predict'].message}"
    elif failure_class == "api_error":
        api_error = failure_detail
    n_inst = len(entry.instruction_ids) if entry.instruction_ids is not None else None
    strict = loose = None
    if n_inst is not None and "inst_level_strict" in values:
        strict = round(values["inst_level_strict"] * n_inst)
    if n_inst is not None and "inst_level_loose" in values:
        loose = round(values["inst_level_loose"] * n_inst)
    extracted = (score or {}).get("extracted_prediction")
    return OutcomeRow(
        benchmark=entry.benchmark,
        subset=entry.subset,
        index=entry.index,
        source_id=entry.source_id,
        stratum=entry.stratum,
        prediction_present=pred is not None,
        review_present=review is not None,
        n_predictions=attempt.n_predictions,
        n_reviews=attempt.n_reviews,
        response_id=(out or {}).get("id"),
        request_seed=(seeds or {}).get(response_id) if isinstance(response_id, str) else None,
        stop_reason=choice.get("stop_reason") if choice else None,
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        latency_s=(out or {}).get("time"),
        reasoning_chars=len(split.reasoning) if split else None,
        reasoning_tokens=r_tokens,
        answer_chars=len(split.answer) if split else None,
        final_answer_present=split.final_answer_present if split else None,
        api_error=api_error,
        prompt_sha256=row_prompt_sha256(pred) if pred else None,
        expected_prompt_sha256=expected_prompt,
        prompt_contains_question=contains_question(user_text(pred), entry.question) if pred else None,
        review_matches_prediction=(conversation_sha256(review) == conversation_sha256(pred))
        if pred and review
        else None,
        response_sha256=sha256_hex(answer_text(text)) if text is not None else None,
        score=main_value(values, main),
        scores=values,
        instructions_total=n_inst,
        instructions_followed_strict=strict,
        instructions_followed_loose=loose,
        extracted_answer=extracted if isinstance(extracted, str) else None,
        gold_answer=_gold(review),
        failure_class=failure_class,
        failure_detail=failure_detail,
    )


def write_outcomes(
    rundir: RunDir,
    manifest: Manifest,
    index_map: IndexMap,
    benchmarks: Mapping[str, ScoringPart],
    asked: Callable[[str, str], int] | None = None,
) -> list[OutcomeRow]:
    rows = build_outcomes(rundir, manifest, index_map, benchmarks, asked)
    write_jsonl_atomic(rundir.outcomes, rows)
    return rows
