"""Which recorded response answers which replayed request.

Requests are keyed by ``messages_sha256`` (the rendered prompt).  For each prompt the queue holds, in
the order they were originally sent, the failed attempts (HTTP >= 400: replayed so the client retries
exactly as before) and the successful attempt(s) the evaluation actually used (``outcomes.jsonl``
``response_id``).  Successful attempts nobody used (a client that timed out and re-sent) are not replayed:
serving them at once would change which answer is used.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt, ResponseRecord


@dataclass(frozen=True)
class Recorded:
    attempt_id: str
    status: int
    content_type: str | None
    body: bytes


@dataclass
class ReplayQueues:
    queues: dict[str, list[Recorded]]
    skipped_unused: int
    missing_bodies: list[str]


def build_queues(root: Path) -> ReplayQueues:
    # import cost: kept out of the replay engine's import (recording, gzip), loaded on this path only
    from evalpipe.recording.responses import read_response_records

    rd = RunDir(root)
    attempts = sorted(read_jsonl(rd.requests_log, RequestAttempt), key=lambda a: a.seq)
    bodies: dict[str, ResponseRecord] = read_response_records(rd.responses_log)
    used = {o.response_id for o in read_jsonl(rd.outcomes, OutcomeRow) if o.response_id}
    by_prompt: dict[str, list[RequestAttempt]] = {}
    for a in attempts:
        if a.messages_sha256:
            by_prompt.setdefault(a.messages_sha256, []).append(a)
    queues: dict[str, list[Recorded]] = {}
    skipped = 0
    missing: list[str] = []
    for prompt, group in by_prompt.items():
        any_used = any(a.response_id in used for a in group)
        queue: list[Recorded] = []
        for a in group:
            if a.status is None:  # transport error: nothing was answered, nothing to replay
                continue
            failed = a.status >= 400
            if not failed and any_used and a.response_id not in used:
                skipped += 1
                continue
            rec = bodies.get(a.attempt_id)
            if rec is None:
                missing.append(a.attempt_id)
                continue
            body = rec.body.encode() if rec.body is not None else _b64(rec.body_b64)
            queue.append(Recorded(a.attempt_id, a.status, rec.content_type, body))
        if queue:
            queues[prompt] = queue
    return ReplayQueues(queues=queues, skipped_unused=skipped, missing_bodies=missing)


def _b64(value: str | None) -> bytes:

    return base64.b64decode(value or "")
