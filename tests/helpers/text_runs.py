"""Run directories with texts: what the explorer reads, written from files alone (no server, no EvalScope).

``write_text_run`` lays out one arm as the pipeline would: the manifest, one outcome row per entry, the
proxy's ``requests.jsonl`` and ``responses.jsonl.gz`` (a JSON body per attempt holding the answer and its
reasoning), and EvalScope's prediction rows with the prompt (``evalscope_tasks.json``, ``index_map.json``).
The XSS test plants hostile answers with it; ``perf/bench_explorer.py`` builds its 2,000-sample pair.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_bytes, write_jsonl_atomic, write_model
from evalpipe.artifacts.schema.evalscope import EvalscopeTask, EvalscopeTasks, IndexMap, IndexMapEntry
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt, ResponseRecord, Usage
from evalpipe.hashing import prompt_sha256, sha256_hex
from evalpipe.recording.responses import encode_member

WORK_DIR = "evalscope/run"
MODEL_ID = "model"


@dataclass(frozen=True)
class Answer:
    """One arm's answer to one sample."""

    text: str
    correct: bool
    reasoning: str = ""
    finish_reason: str = "stop"
    extracted: str | None = None


def prompt_of(benchmark: str, source_id: str) -> str:
    return f"Question {source_id} of {benchmark}: what is the answer? Reply with \\boxed{{}}."


def write_text_run(
    root: Path, manifest: Manifest, answers: dict[tuple[str, str], Answer], *, tag: str
) -> Path:
    """``root`` as one arm's run directory; ``tag`` keeps attempt ids distinct between arms."""
    rd = RunDir(root)
    root.mkdir(parents=True)
    write_model(rd.manifest, manifest)
    rows, attempts, members, preds, entries = [], [], [], [], []
    for i, e in enumerate(manifest.entries):
        a = answers[(e.benchmark, e.source_id)]
        messages = [{"role": "user", "content": prompt_of(e.benchmark, e.source_id)}]
        h = prompt_sha256(messages)
        attempt_id = f"{tag}-{i:06d}"
        cut = a.finish_reason == "length"
        rows.append(
            OutcomeRow(
                benchmark=e.benchmark, subset=e.subset, index=i, source_id=e.source_id, stratum=e.stratum,
                prediction_present=True, review_present=True, n_predictions=1, n_reviews=1,
                response_id=attempt_id, stop_reason="max_tokens" if cut else "stop", input_tokens=40,
                output_tokens=len(a.text + a.reasoning) // 4, reasoning_chars=len(a.reasoning),
                answer_chars=len(a.text), final_answer_present=bool(a.text.strip()), prompt_sha256=h,
                expected_prompt_sha256=h, response_sha256=sha256_hex(a.text),
                score=1.0 if a.correct and not cut else 0.0, extracted_answer=a.extracted, gold_answer="42",
                failure_class="budget_exhausted" if cut else ("ok" if a.correct else "wrong"),
            )
        )  # fmt: skip
        attempts.append(
            RequestAttempt(
                attempt_id=attempt_id, seq=i, started_at="2026-12-05T00:00:00+00:00",
                ended_at="2026-12-05T00:00:01+00:00", method="POST", path="/v1/chat/completions",
                body_sha256=sha256_hex(attempt_id), messages_sha256=h, status=200, response_id=attempt_id,
                finish_reason=a.finish_reason, usage=Usage(completion_tokens=len(a.text) // 4),
                latency_s=1.0, x_request_id=f"evalpipe-{attempt_id}", response_sha256=sha256_hex(a.text),
            )
        )  # fmt: skip
        message = {"role": "assistant", "content": a.text}
        if a.reasoning:
            message["reasoning_content"] = a.reasoning
        body = {
            "id": attempt_id,
            "choices": [{"index": 0, "message": message, "finish_reason": a.finish_reason}],
        }
        members.append(encode_member(ResponseRecord(attempt_id=attempt_id, status=200,
                                                    content_type="application/json", body=json.dumps(body))))  # fmt: skip
        preds.append(json.dumps({"index": i, "messages": messages}))
        entries.append(IndexMapEntry(benchmark=e.benchmark, subset=e.subset, index=i, source_id=e.source_id,
                                     record_sha256=e.record_sha256, stratum=e.stratum, question=e.source_id))  # fmt: skip
    write_jsonl_atomic(rd.outcomes, rows)
    write_jsonl_atomic(rd.requests_log, attempts)
    atomic_write_bytes(rd.responses_log, b"".join(members))
    write_model(rd.index_map, IndexMap(datasets=[], entries=entries))
    benchmarks = sorted({e.benchmark for e in manifest.entries})
    tasks = [
        EvalscopeTask(benchmark=b, work_dir=WORK_DIR, model_id=MODEL_ID, task={}, started_at="")
        for b in benchmarks
    ]
    write_model(
        rd.evalscope_tasks, EvalscopeTasks(evalscope_version="test", nltk_punkt_tab=True, tasks=tasks)
    )
    for b in benchmarks:
        lines = [p for p, e in zip(preds, manifest.entries, strict=True) if e.benchmark == b]
        path = rd.root / WORK_DIR / "predictions" / MODEL_ID / f"{b}_default.jsonl"
        atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())
    return root
