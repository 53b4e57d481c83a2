"""The proxy's recorder: turns raw attempts into ``requests.jsonl`` lines and ``responses.jsonl.gz`` members.

It runs as its own process (``python -m evalpipe.recording.recorder RUN_DIR``) fed through a pipe by the
proxy, for two reasons: JSON parsing, hashing and compression of every attempt then never compete with the
proxy's event loop (or EvalScope's client threads) for the GIL, and records already handed over survive a
crash of evalpipe — the recorder writes everything it received and exits at end-of-file.  It ignores
SIGINT/SIGTERM for the same reason: its lifetime is the pipe's.

Frame on the pipe: ``struct "!III"`` (meta, request, response lengths) + meta JSON + request + response.
A meta of ``["flush", token]`` asks for ``token`` to be echoed on stdout once everything before it is on disk.

A write the file system refuses (full, over quota, read-only) cuts both files back to where they were before
that attempt (no partial line, no partial gzip member), says ``diskfull<TAB>errno<TAB>path`` on stdout (a
pipe: it needs no disk) and ends the recorder with ``DISK_FULL_EXIT``: nothing more can be recorded, so the
proxy answers nothing more (``recording.proxy``) and the run stops naming the file (exit 5).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import struct
import sys
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.disk import append_whole, is_disk_error
from evalpipe.artifacts.schema.requests import RequestAttempt, Usage
from evalpipe.hashing import prompt_sha256, sha256_hex
from evalpipe.recording.reasoning import answer_text
from evalpipe.recording.responses import encode_member, make_record

HEADER = struct.Struct("!III")
FLUSH = "flush"
#: The recorder's exit code after a write the file system refused (its stdout said which).
DISK_FULL_EXIT = 75
DISK_FULL = "diskfull"

# meta list layout (kept positional: it is built on the proxy's hot path)
(
    M_ATTEMPT_ID,
    M_SEQ,
    M_STARTED,
    M_ENDED,
    M_LATENCY,
    M_METHOD,
    M_PATH,
    M_STATUS,
    M_CTYPE,
    M_CENC,
    M_STREAM,
    M_ERROR,
    M_CLIENT_GONE,
    M_X_REQUEST_ID,
    M_QUEUE_WAIT,
    M_ADMITTED,
    M_RESENT,
) = range(17)


def encode_frame(meta: list[Any], request: bytes, response: bytes) -> bytes:
    m = json.dumps(meta, separators=(",", ":")).encode()
    return HEADER.pack(len(m), len(request), len(response)) + m + request + response


def decode_body(body: bytes, encoding: str | None) -> bytes:
    """Undo a Content-Encoding for parsing/storage (the client received the bytes as sent)."""
    if not encoding or not body:
        return body
    enc = encoding.lower()
    try:
        if enc == "gzip":
            return zlib.decompress(body, wbits=31)
        if enc == "deflate":
            return zlib.decompress(body)
    except zlib.error:
        return body
    return body


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def build_attempt(meta: list[Any], request_body: bytes, response_body: bytes) -> RequestAttempt:
    """One ``requests.jsonl`` line from an attempt's metadata and (decoded) bodies."""
    req: dict[str, Any] = {}
    with contextlib.suppress(json.JSONDecodeError, UnicodeDecodeError):
        parsed = json.loads(request_body) if request_body else None
        req = parsed if isinstance(parsed, dict) else {}
    messages = req.get("messages")
    msg_hash = None
    if isinstance(messages, list):
        with contextlib.suppress(Exception):
            msg_hash = prompt_sha256(messages)
    max_tokens = req.get("max_tokens", req.get("max_completion_tokens"))
    template_kwargs = req.get("chat_template_kwargs")
    seed = req.get("seed")
    resp = parse_response(response_body, meta[M_CTYPE])
    text = resp.get("text")
    model = req.get("model")
    # model_construct: every value is built with its declared type just above, and validating again for
    # each attempt was a third of the recorder's CPU (tests read the lines back through the model).
    return RequestAttempt.model_construct(
        attempt_id=meta[M_ATTEMPT_ID],
        seq=meta[M_SEQ],
        started_at=_iso(meta[M_STARTED]),
        ended_at=_iso(meta[M_ENDED]),
        method=meta[M_METHOD],
        path=meta[M_PATH],
        body_sha256=hashlib.sha256(request_body).hexdigest(),
        messages_sha256=msg_hash,
        model=model if isinstance(model, str) else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) else None,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        stream=bool(req.get("stream")) or bool(meta[M_STREAM]),
        chat_template_kwargs=template_kwargs if isinstance(template_kwargs, dict) else None,
        status=meta[M_STATUS],
        response_id=resp.get("id"),
        finish_reason=resp.get("finish_reason"),
        usage=resp.get("usage"),
        latency_s=round(meta[M_LATENCY], 6),
        transport_error=meta[M_ERROR],
        client_disconnected=bool(meta[M_CLIENT_GONE]),
        x_request_id=meta[M_X_REQUEST_ID] if len(meta) > M_X_REQUEST_ID else None,
        queue_wait_s=round(meta[M_QUEUE_WAIT], 6) if len(meta) > M_QUEUE_WAIT else None,
        admitted_at=_iso(meta[M_ADMITTED]) if len(meta) > M_ADMITTED else None,
        resent_after=meta[M_RESENT] if len(meta) > M_RESENT else None,
        response_sha256=sha256_hex(answer_text(text)) if isinstance(text, str) else None,
    )


def parse_response(body: bytes, content_type: str | None) -> dict[str, Any]:
    """id, finish_reason and completion text of the first choice, and usage — from JSON or an SSE stream."""
    if not body:
        return {}
    if (content_type and "text/event-stream" in content_type) or body.lstrip().startswith(b"data:"):
        return _parse_sse(body)
    try:
        obj = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    if not isinstance(obj, dict):
        return {}
    out: dict[str, Any] = {"id": obj.get("id") if isinstance(obj.get("id"), str) else None}
    choices = obj.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        c0 = choices[0]
        fr = c0.get("finish_reason")
        out["finish_reason"] = fr if isinstance(fr, str) else None
        msg = c0.get("message")
        if isinstance(msg, dict) and isinstance(msg.get("content"), str):
            out["text"] = msg["content"]
        elif isinstance(c0.get("text"), str):
            out["text"] = c0["text"]
    out["usage"] = _usage(obj.get("usage"))
    return out


def _parse_sse(body: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    parts: list[str] = []
    seen_text = False
    for raw in body.split(b"\n"):
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == b"[DONE]":
            continue
        try:
            obj = json.loads(payload)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if not isinstance(obj, dict):
            continue
        if out.get("id") is None and isinstance(obj.get("id"), str):
            out["id"] = obj["id"]
        usage = _usage(obj.get("usage"))
        if usage is not None:
            out["usage"] = usage
        for c in obj.get("choices") or []:
            if not isinstance(c, dict) or c.get("index", 0) != 0:
                continue
            if isinstance(c.get("finish_reason"), str):
                out["finish_reason"] = c["finish_reason"]
            delta = c.get("delta")
            piece = delta.get("content") if isinstance(delta, dict) else c.get("text")
            if isinstance(piece, str):
                parts.append(piece)
                seen_text = True
    if seen_text:
        out["text"] = "".join(parts)
    return out


def _usage(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    counts = {
        k: v if isinstance(v, int) and not isinstance(v, bool) else None
        for k in Usage.model_fields
        for v in [u.get(k)]
    }
    if counts["reasoning_tokens"] is None:  # OpenAI's place; SGLang reports it at the top level
        details = u.get("completion_tokens_details")
        v = details.get("reasoning_tokens") if isinstance(details, dict) else None
        counts["reasoning_tokens"] = v if isinstance(v, int) and not isinstance(v, bool) else None
    return Usage(**counts)


class RefusedWrite(Exception):
    """The file system refused a record's write; both files are as they were before it."""

    def __init__(self, path: Path, err: OSError) -> None:
        super().__init__(f"{path}: {err}")
        self.path = path
        self.errno = err.errno or 0


class Recorder:
    """Appends records for decoded frames (also used in-process by tests)."""

    def __init__(self, rundir: RunDir) -> None:
        rundir.root.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT
        self._paths = (rundir.responses_log, rundir.requests_log)
        self._fds = [os.open(p, flags, 0o644) for p in self._paths]
        self.written = 0

    def record(self, meta: list[Any], request_body: bytes, response_body: bytes) -> None:
        """Both lines of one attempt, or neither (``RefusedWrite``)."""
        body = decode_body(response_body, meta[M_CENC])
        # response member first: a requests.jsonl line always has its body on disk
        member = encode_member(make_record(meta[M_ATTEMPT_ID], meta[M_STATUS], meta[M_CTYPE], body))
        line = (build_attempt(meta, request_body, body).model_dump_json() + "\n").encode("utf-8")
        starts = [os.fstat(fd).st_size for fd in self._fds]
        for path, fd, data in zip(self._paths, self._fds, (member, line), strict=True):
            try:
                append_whole(fd, data)
            except OSError as exc:
                if not is_disk_error(exc):
                    raise
                for other, start in zip(self._fds, starts, strict=True):  # the response member too
                    with contextlib.suppress(OSError):
                        os.ftruncate(other, start)
                raise RefusedWrite(path, exc) from None
        self.written += 1

    def close(self) -> None:
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.fsync(fd)
            os.close(fd)
        self._fds = []


# After a small read the recorder sleeps this long before reading again, so that frames accumulate in the
# pipe: the proxy's writes then land in the kernel buffer without waking this process once per attempt
# (on a busy machine each wake-up costs the proxy a context switch).
BATCH_SLEEP_S = 0.02
_BIG_READ = 1 << 16


def serve(rundir: RunDir, inp: BinaryIO, out: BinaryIO) -> int:
    """Read frames until EOF; returns attempts written (negative: -errors).  A torn final frame is dropped.
    A refused write ends it (``RefusedWrite``, after its line on ``out``)."""
    rec = Recorder(rundir)
    errors = 0
    fd = inp.fileno()
    buf = bytearray()
    try:
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            buf += chunk
            pos = 0
            while len(buf) - pos >= HEADER.size:
                lm, lq, lr = HEADER.unpack_from(buf, pos)
                end = pos + HEADER.size + lm + lq + lr
                if end > len(buf):
                    break
                start = pos + HEADER.size
                meta = json.loads(bytes(buf[start : start + lm]))
                pos = end
                if meta and meta[0] == FLUSH:
                    out.write(f"{meta[1]}\n".encode())
                    out.flush()
                    continue
                try:
                    req = bytes(buf[start + lm : start + lm + lq])
                    rec.record(meta, req, bytes(buf[start + lm + lq : end]))
                except RefusedWrite as exc:  # nothing more can be written: say which file, and stop
                    out.write(f"{DISK_FULL}\t{exc.errno}\t{exc.path}\n".encode())
                    out.flush()
                    raise
                except Exception as exc:  # one bad attempt must not end the log; reported on stderr
                    errors += 1
                    msg = f"evalpipe recorder: attempt {meta[M_ATTEMPT_ID]}: {type(exc).__name__}: {exc}"
                    print(msg, file=sys.stderr, flush=True)
            del buf[:pos]
            if len(chunk) < _BIG_READ:
                time.sleep(BATCH_SLEEP_S)
    finally:
        rec.close()
    return rec.written if not errors else -errors


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        n = serve(RunDir(Path(argv[0])), sys.stdin.buffer, sys.stdout.buffer)
    except RefusedWrite:
        return DISK_FULL_EXIT
    return 0 if n >= 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
