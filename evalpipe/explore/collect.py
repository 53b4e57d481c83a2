"""One arm of the explorer: a run directory read through ``evalpipe.artifacts`` into per-sample cards.

Texts come from what was recorded: the final answer and the reasoning from the response body in
``responses.jsonl.gz`` (the used attempt, linked by its response id), the prompt from EvalScope's
prediction (``evalscope_bridge.prompts``), the rest from ``outcomes.jsonl`` and ``requests.jsonl``.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.explorer import ArmCard, AttemptInfo, RepeatInfo, TextSpan, Truncation
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import BUDGET_CLASSES, OutcomeRow, attempt_scores, is_correct
from evalpipe.artifacts.schema.requests import RequestAttempt, ResponseRecord
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.audit.linkage import Linkage, attempt_failure, attempt_ok, link
from evalpipe.errors import ArtifactError, EvalpipeError
from evalpipe.evalscope_bridge.prompts import SentPrompts, sent_prompts
from evalpipe.recording.reasoning import split_message
from evalpipe.recording.responses import read_response_records, response_message

Key = tuple[str, str]


@dataclass(frozen=True)
class Body:
    line: int  # 1-based line of ``zcat responses.jsonl.gz``
    text: str
    sha256: str


@dataclass
class Arm:
    label: str
    rundir: RunDir
    run_id: str | None
    manifest: Manifest
    outcomes: dict[Key, OutcomeRow]
    linkage: Linkage | None
    bodies: dict[str, Body]
    prompts: SentPrompts

    def mean(self, key: Key) -> float:
        """The sample's score by the summary's rule (the mean over answered attempts with repeats)."""
        scores = attempt_scores(self.outcomes.get(key))
        return sum(scores) / len(scores)


def load_arm(run_dir: Path, label: str | None = None) -> Arm:
    """Read one run directory; a missing manifest or outcomes table is an ``ArtifactError``."""
    rd = RunDir(Path(run_dir))
    manifest = read_model(rd.manifest, Manifest)
    if not rd.outcomes.is_file():
        raise ArtifactError(f"{rd.outcomes}: missing (run the evaluation first)")
    rows = read_jsonl(rd.outcomes, OutcomeRow)
    run = None
    if rd.run_record.is_file():
        try:
            run = read_model(rd.run_record, RunRecord)
        except EvalpipeError:
            run = None
    attempts = read_jsonl(rd.requests_log, RequestAttempt) if rd.requests_log.is_file() else None
    linkage = link(rows, attempts) if attempts is not None else None
    bodies: dict[str, Body] = {}
    for line, (attempt_id, rec) in enumerate(read_response_records(rd.responses_log).items(), start=1):
        text = _body_text(rec)
        if text is not None:
            bodies[attempt_id] = Body(line, text, hashlib.sha256(text.encode("utf-8", "replace")).hexdigest())
    name = label or (run.variant_label or run.variant if run else None) or rd.root.name
    return Arm(
        label=name,
        rundir=rd,
        run_id=run.run_id if run else None,
        manifest=manifest,
        outcomes={(r.benchmark, r.source_id): r for r in rows},
        linkage=linkage,
        bodies=bodies,
        prompts=sent_prompts(rd),
    )


def _body_text(rec: ResponseRecord) -> str | None:
    if rec.body is not None:
        return rec.body
    if rec.body_b64 is not None:

        return base64.b64decode(rec.body_b64).decode("latin-1")
    return None


def cut(text: str, keep: int | None, body: Body | None) -> tuple[str, Truncation | None]:
    """``text`` whole, or its first and last ``keep`` characters with a pointer to the recorded body."""
    if keep is None or len(text) <= 2 * keep + 200:
        return text, None
    head, tail = text[:keep], text[-keep:]
    marker = f"\n\n[… {len(text) - 2 * keep:,} characters not kept in this page …]\n\n"
    return head + marker + tail, Truncation(
        chars=len(text),
        kept_head=keep,
        kept_tail=keep,
        responses_line=body.line if body else None,
        body_sha256=body.sha256 if body else None,
    )


#: characters kept on each side of an evidence sentence when a long prompt is cut
EVIDENCE_WINDOW = 240


def evidence_cut(
    text: str, keep: int | None, needles: Sequence[str]
) -> tuple[str, Truncation | None, list[TextSpan]]:
    """``text`` with the evidence ``needles`` located (every occurrence, as spans of the shown text): whole,
    or — when ``keep`` cuts it — its head and tail plus a window of ``EVIDENCE_WINDOW`` characters around each
    evidence sentence, so a long-context card shows where the evidence sat and what surrounded it."""
    found = sorted(
        (m.start(), m.start() + len(n))
        for n in dict.fromkeys(needles)
        if n
        for m in re.finditer(re.escape(n), text)
    )
    shown, truncation = cut(text, keep, None)
    if truncation is None:
        return text, None, [TextSpan(start=a, end=b) for a, b in found]
    if not found:
        return shown, truncation, []
    assert keep is not None
    kept = [(0, keep)] + [
        (max(0, a - EVIDENCE_WINDOW), min(len(text), b + EVIDENCE_WINDOW)) for a, b in found
    ]
    kept.append((len(text) - keep, len(text)))
    merged: list[list[int]] = []
    for a, b in sorted(kept):
        if merged and a <= merged[-1][1] + 200:  # a gap shorter than its marker is shown whole
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    if len(merged) == 1:  # the windows joined head and tail: nothing is cut after all
        return text, None, [TextSpan(start=a, end=b) for a, b in found]
    out, spans, at = [], [], 0
    for i, (a, b) in enumerate(merged):
        if i:
            gap = a - merged[i - 1][1]
            out.append(f"\n\n[… {gap:,} characters not kept in this page …]\n\n")
            at += len(out[-1])
        out.append(text[a:b])
        spans += [TextSpan(start=at + s - a, end=at + e - a) for s, e in found if a <= s and e <= b]
        at += b - a
    windows = sum(1 for a, b in merged if a != 0 and b != len(text))
    return "".join(out), truncation.model_copy(update={"evidence_windows": windows}), spans


def arm_card(arm: Arm, key: Key, keep: int | None) -> ArmCard:
    """The arm's card for one sample; ``keep``: characters of head and tail a long text keeps (None: all)."""
    row = arm.outcomes.get(key)
    if row is None:
        return ArmCard(
            label=arm.label, answer=None, budget_cut=False, extracted=None, score=None, correct=False,
            failure_class="missing_outcome", failure_detail="no row in outcomes.jsonl", finish_reason=None,
            input_tokens=None, output_tokens=None, reasoning_tokens=None, latency_s=None,
            response_sha256=None, attempts=[], repeats=[],
        )  # fmt: skip
    group = arm.linkage.group_of.get(key) if arm.linkage is not None else None
    used_ids = {rid for rid in [row.response_id, *(a.response_id for a in row.attempts)] if rid}
    attempts = sorted(group.attempts, key=lambda a: a.seq) if group is not None else []
    used = next((a for a in attempts if a.response_id and a.response_id == row.response_id), None)
    body = arm.bodies.get(used.attempt_id) if used is not None else None
    answer: str | None = None
    reasoning = ""
    if body is not None:
        content, think = response_message(body.text)
        if content is not None or think is not None:
            split = split_message(content or "", think)
            answer, reasoning = split.answer, split.reasoning
    finish = (used.finish_reason if used is not None else None) or row.stop_reason
    answer_text, answer_cut = cut(answer, keep, body) if answer is not None else (None, None)
    reasoning_text, reasoning_cut = cut(reasoning, keep, body)
    return ArmCard(
        label=arm.label,
        answer=answer_text,
        answer_cut=answer_cut,
        reasoning=reasoning_text,
        reasoning_cut=reasoning_cut,
        budget_cut=row.failure_class in BUDGET_CLASSES or finish in ("length", "max_tokens"),
        extracted=row.extracted_answer,
        score=row.score,
        correct=is_correct(row),
        failure_class=row.failure_class,
        failure_detail=row.failure_detail or row.api_error,
        finish_reason=finish,
        input_tokens=row.input_tokens,
        output_tokens=row.output_tokens,
        reasoning_tokens=row.reasoning_tokens,
        latency_s=row.latency_s,
        response_sha256=row.response_sha256,
        attempts=[_attempt(a, used_ids) for a in attempts],
        repeats=[
            RepeatInfo(
                attempt=a.attempt,
                score=a.score,
                failure_class=a.failure_class,
                correct=a.correct,
                response_sha256=a.response_sha256,
                request_seed=a.request_seed,
            )
            for a in row.attempts
        ],
    )


def _attempt(a: RequestAttempt, used_ids: set[str]) -> AttemptInfo:
    return AttemptInfo(
        attempt_id=a.attempt_id,
        x_request_id=a.x_request_id,
        response_id=a.response_id,
        status=a.status,
        seed=a.seed,
        finish_reason=a.finish_reason,
        latency_s=a.latency_s,
        failure=None if attempt_ok(a) else attempt_failure(a),
        used=bool(a.response_id and a.response_id in used_ids),
    )
