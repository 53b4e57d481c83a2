"""``responses.jsonl.gz``: response bodies of every proxied attempt, one gzip member per attempt.

One member per attempt keeps the file append-only (a member is complete or it is the torn tail) and lets
a crash lose at most the attempt being written.  ``gzip``/``zcat`` read the whole file as one stream; the
reader here walks members itself so that a torn last member is skipped and reported instead of raising.
"""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.requests import ResponseRecord
from evalpipe.errors import ArtifactError


def encode_member(record: ResponseRecord) -> bytes:
    """A complete gzip member holding one JSON line."""
    return gzip.compress((record.model_dump_json(exclude_none=True) + "\n").encode("utf-8"), compresslevel=6)


def make_record(attempt_id: str, status: int | None, content_type: str | None, body: bytes) -> ResponseRecord:
    try:
        return ResponseRecord(
            attempt_id=attempt_id, status=status, content_type=content_type, body=body.decode()
        )
    except UnicodeDecodeError:
        b64 = base64.b64encode(body).decode("ascii")
        return ResponseRecord(attempt_id=attempt_id, status=status, content_type=content_type, body_b64=b64)


#: bytes of a responses file fed to the decompressor at a time
_CHUNK = 1 << 16


class ResponsesReadResult(dict[str, ResponseRecord]):
    """``attempt_id → ResponseRecord`` plus whether the last member was torn (crash mid-write)."""

    torn_last_member: bool = False


def _members(path: Path, data: bytes) -> Iterator[tuple[int, int, bytes | None]]:
    """Each gzip member of ``data`` in order: ``(start, end, payload)``; a torn final member (a crash
    mid-write) ends the walk as ``(start, start, None)``; a corrupt member before the last raises
    ``ArtifactError`` naming ``path`` (never cut: refused)."""
    view = memoryview(data)
    pos = 0
    while pos < len(data):
        # the member is fed in chunks of a view: slicing the rest of the file for every member (and getting
        # it back as unused_data) copied the file once per response, quadratic in the run's size
        d = zlib.decompressobj(wbits=31)
        parts: list[bytes] = []
        fed = pos
        try:
            while not d.eof and fed < len(data):
                chunk = view[fed : fed + _CHUNK]
                parts.append(d.decompress(chunk))
                fed += len(chunk)
            parts.append(d.flush())
        except zlib.error as exc:
            if _is_tail(d, data, pos):
                yield pos, pos, None
                return
            raise ArtifactError(f"{path}: corrupt gzip member at byte {pos} ({exc})") from None
        if not d.eof:
            yield pos, pos, None
            return
        end = fed - len(d.unused_data)
        yield pos, end, b"".join(parts)
        pos = end


def read_response_records(path: Path) -> ResponsesReadResult:
    """All complete members of a responses file; a torn final member is skipped and flagged."""
    result = ResponsesReadResult()
    path = Path(path)
    if not path.is_file():
        return result
    for start, _, payload in _members(path, path.read_bytes()):
        if payload is None:
            result.torn_last_member = True
            break
        for line in payload.decode("utf-8").splitlines():
            if not line.strip():
                continue
            try:
                rec = ResponseRecord.model_validate_json(line)
            except ValidationError:
                raise ArtifactError(f"{path}: member at byte {start} is not a ResponseRecord") from None
            result[rec.attempt_id] = rec
    return result


def complete_members_end(path: Path) -> int:
    """Byte offset just after the last complete gzip member of ``path`` (its size when none is torn);
    ``ArtifactError`` when a member before the last is corrupt (never cut: refused)."""
    end = 0
    for start, member_end, payload in _members(Path(path), Path(path).read_bytes()):
        if payload is None:
            return start
        end = member_end
    return end


def _is_tail(d: zlib._Decompress, data: bytes, pos: int) -> bool:
    """A zlib error with no further member start after ``pos`` is a torn tail, not mid-file corruption."""
    return data.find(b"\x1f\x8b\x08", pos + 1) == -1


def read_responses(rundir: RunDir) -> dict[str, str]:
    """``attempt_id → response body text`` (base64-decoded bytes as latin-1 for non-UTF-8 bodies)."""
    out = {}
    for attempt_id, rec in read_response_records(rundir.responses_log).items():
        if rec.body is not None:
            out[attempt_id] = rec.body
        elif rec.body_b64 is not None:
            out[attempt_id] = base64.b64decode(rec.body_b64).decode("latin-1")
    return out


def response_message(body: str) -> tuple[str | None, str | None]:
    """``(content, reasoning_content)`` of the first choice of a recorded body — a JSON document or an SSE
    stream (the deltas joined); ``(None, None)`` when the body holds no choice (an error body)."""

    if body.lstrip().startswith("data:"):
        content: list[str] = []
        reasoning: list[str] = []
        seen = False
        for raw in body.split("\n"):
            line = raw.strip()
            if not line.startswith("data:") or line[5:].strip() in ("", "[DONE]"):
                continue
            try:
                obj = json.loads(line[5:])
            except json.JSONDecodeError:
                continue
            for c in obj.get("choices") or [] if isinstance(obj, dict) else []:
                if not isinstance(c, dict) or c.get("index", 0) != 0:
                    continue
                delta = c.get("delta")
                if not isinstance(delta, dict):
                    continue
                piece, think = delta.get("content"), delta.get("reasoning_content")
                if isinstance(piece, str):
                    content.append(piece)
                    seen = True
                if isinstance(think, str):
                    reasoning.append(think)
                    seen = True
        return ("".join(content), "".join(reasoning) or None) if seen else (None, None)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError:
        return None, None
    choices = obj.get("choices") if isinstance(obj, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, None
    msg = choices[0].get("message")
    if isinstance(msg, dict):
        text = msg.get("content")
        think = msg.get("reasoning_content")
        return (text if isinstance(text, str) else ""), (think if isinstance(think, str) else None)
    text = choices[0].get("text")
    return (text if isinstance(text, str) else None), None
