"""``requests.jsonl`` — one line per request attempt that passed the recording proxy (append-only).

Response bodies are kept in ``responses.jsonl.gz`` (one gzip member per attempt, keyed by
``attempt_id``) so a run can be replayed without a GPU.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evalpipe.artifacts.schema.base import Row


class Usage(Row):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    reasoning_tokens: int | None = Field(
        default=None,
        description="Completion tokens spent thinking, as the server reported them: SGLang's top-level "
        "usage.reasoning_tokens or OpenAI's usage.completion_tokens_details.reasoning_tokens; None when "
        "neither is present (never estimated).",
    )


class RequestAttempt(Row):
    schema_version: int = 1
    attempt_id: str = Field(
        description="Unique per attempt; sent to SGLang as `rid` where accepted (SGLang's router drops it)."
    )
    seq: int = Field(description="Order in which the proxy received the attempt (0-based).")
    started_at: str = Field(description="UTC ISO-8601")
    ended_at: str | None = None
    method: str
    path: str
    body_sha256: str
    messages_sha256: str | None = Field(default=None, description="evalpipe.hashing.prompt_sha256(messages)")
    model: str | None = None
    max_tokens: int | None = None
    seed: int | None = Field(
        default=None,
        description="The request body's seed (evalpipe.hashing.attempt_seed of the sample and attempt); None "
        "when the request carried none.",
    )
    stream: bool = False
    chat_template_kwargs: dict[str, Any] | None = Field(
        default=None,
        description="The request body's chat_template_kwargs (e.g. the thinking toggle); None when absent.",
    )
    status: int | None = Field(
        default=None, description="HTTP status from the server; None on transport error."
    )
    response_id: str | None = None
    finish_reason: str | None = None
    usage: Usage | None = None
    latency_s: float | None = Field(
        default=None,
        description="Seconds from admission to the server (after any queue wait) to the last response byte.",
    )
    queue_wait_s: float | None = Field(
        default=None,
        description="Seconds the attempt waited in the proxy for one of the run's generation.concurrency "
        "slots before it was sent to the server (None in files written before admission control).",
    )
    admitted_at: str | None = Field(
        default=None,
        description="UTC ISO-8601 time the attempt was sent to the server (started_at + queue wait).",
    )
    transport_error: str | None = Field(
        default=None, description="Exception class name when no response came."
    )
    resent_after: str | None = Field(
        default=None,
        description="The proxy sent this attempt to the server twice: the first send, on a reused keep-alive "
        "connection, failed before any response byte with this exception, and it was re-sent once on a fresh "
        "connection.  A server that read the first send may have worked on it too.  None: sent once (or a "
        "file written before re-sends were recorded).",
    )
    client_disconnected: bool = Field(
        default=False,
        description="The server answered but the client had already gone (e.g. its read timeout expired): "
        "the response was never delivered and cannot have been used.",
    )
    x_request_id: str | None = Field(
        default=None,
        description="X-Request-Id header the proxy sent with this attempt (evalpipe-<attempt_id>); a router "
        "forwards it to the worker that answers and echoes it. None for requests other than completions.",
    )
    response_sha256: str | None = Field(
        default=None,
        description="sha256 of the completion text (first choice); of its final answer when the text holds "
        "inline <think> reasoning (evalpipe.recording.reasoning.answer_text).",
    )


class ResponseRecord(Row):
    """One member of ``responses.jsonl.gz``: the response body exactly as the client received it.

    ``body`` is the (decompressed) text — a JSON document, or the raw SSE stream for ``stream: true``;
    ``body_b64`` replaces it for bodies that are not UTF-8.
    """

    schema_version: int = 1
    attempt_id: str
    status: int | None = None
    content_type: str | None = None
    body: str | None = None
    body_b64: str | None = None
