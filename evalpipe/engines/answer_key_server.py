"""The answer-key server: an OpenAI-compatible server that answers the bundled items from gold answers.

Run as ``python -m evalpipe.engines.answer_key_server --host H --port P --served-model-name NAME
--mode positive|negative [--faults duplicate_request,truncate,http_500_once,index_error,reasoning_budget]
[--thinking off|reasoning_content|inline] [--reasoning-parser NAME] [--data-dir DIR] [--startup-delay S]`` — the argv evalpipe's launcher builds for ``server.kind:
answer_key``.  It behaves like SGLang where the pipeline depends on it: ``/health`` answers 503 while
starting (data loading plus ``--startup-delay``) and 200 once ready; ``/server_info`` (alias
``/get_server_info``) reports resolved arguments; ``/model_info``, ``/v1/models``; and
``/v1/chat/completions`` in OpenAI format, plain or streamed (SSE), with the body field ``rid`` as the
response ``id`` and usage counts.  SIGTERM and SIGINT stop it cleanly with exit code 0.

Thinking mode (``--thinking``), like a reasoning model: ``reasoning_content`` puts a short reasoning into
``message.reasoning_content`` (a server with ``--reasoning-parser``; usage reports SGLang's top-level
``reasoning_tokens``), ``inline`` puts it before the answer as ``<think>…</think>`` (no parser).  A request
whose ``chat_template_kwargs`` switch thinking off (``enable_thinking``/``thinking`` false) gets no
reasoning.  ``--reasoning-parser`` is reported in ``/server_info``.

Planted faults (each on one announced item, see ``data/faults.json``; ``GET /faults`` lists them with
how often each fired, and every announcement and firing is logged to stderr):

* ``truncate``: the item is answered with ``finish_reason: "length"`` and no final answer.
* ``reasoning_budget``: the item is "thought about" until the output budget runs out (``finish_reason:
  "length"``), with no answer at all: reasoning in ``reasoning_content`` (``--thinking reasoning_content``)
  or inline after an unclosed ``<think>`` (otherwise).
* ``index_error``: the LiveCodeBench item's solution raises IndexError on every test.
* ``http_500_once``: the first request for the item gets HTTP 500; later requests succeed.  The OpenAI
  SDK under EvalScope retries 5xx responses itself (``max_retries`` 2 by default).
* ``duplicate_request``: the first request for the item is held past the client's read timeout — or past
  the server-time deadline of evalpipe's proxy (``--request-timeout-s``) when that comes first — then
  answered normally (late).  The OpenAI SDK announces its read timeout in the ``x-stainless-read-timeout``
  header and, on a timeout, re-sends the identical request (``x-stainless-retry-count: 1``), so the
  server receives the item twice and the first response arrives after the client gave up on it.  When
  no header announces a timeout of at most ``MAX_HOLD_S``, the connection is dropped without a response
  instead, which the SDK retries as a connection error (``APIConnectionError``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import shlex
import sys
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aiohttp import web

from evalpipe import __version__
from evalpipe.benchmarks.base import KeyItem, bundled_data_dir
from evalpipe.engines.answer_key import (
    FAULTS,
    MODES,
    THINKING_MODES,
    AnswerKey,
    count_tokens,
    endless_thinking,
    limit_tokens,
    prompt_text,
    thinking_text,
)
from evalpipe.engines.http_base import ModelServer, Shutdown, log_to_stderr, serve_until_signalled
from evalpipe.errors import EvalpipeError
from evalpipe.hashing import message_text

log = logging.getLogger("evalpipe.answer_key")

MAX_HOLD_S = 30.0  # longest client read timeout the duplicate_request fault waits out
HOLD_MARGIN_S = 0.5  # answer this long after the client's read timeout expired
READ_TIMEOUT_HEADER = "x-stainless-read-timeout"
RETRY_COUNT_HEADER = "x-stainless-retry-count"
MESSAGE_OVERHEAD_TOKENS = 4  # per chat message, for the approximate prompt token count
UNBOUNDED_THINKING_TOKENS = 32768  # reasoning_budget without max_tokens: thinks this long, then stops


@dataclass
class ServerState:
    """Everything the handlers share: arguments, the loaded key, readiness and fault bookkeeping."""

    served_model_name: str
    mode: str
    faults: list[str]
    data_dir: Path
    host: str
    port: int
    startup_delay: float = 0.0
    thinking: str = "off"
    reasoning_parser: str | None = None
    request_timeout_s: float | None = None  # the deadline evalpipe's proxy puts on server time, if told
    wrong_share: dict[str, float] = field(default_factory=dict)  # planted regression: benchmark → share wrong
    wrong_per_attempt: bool = False  # the planted regression drawn per request seed (attempts disagree)
    benchmarks: list[str] | None = None  # answer only these (None: every benchmark folder of data_dir)
    context_length: int | None = None  # reported in /server_info as SGLang reports its context
    key: AnswerKey | None = None
    ready: bool = False
    fired: dict[str, int] = field(default_factory=dict)  # fault → times it fired
    requests: dict[str, int] = field(default_factory=dict)  # item label → chat requests received
    unmatched: int = 0

    def target(self, fault: str) -> KeyItem | None:
        if fault not in self.faults or self.key is None:
            return None
        return self.key.fault_targets.get(fault)

    def fire(self, fault: str, item: KeyItem, detail: str = "") -> None:
        self.fired[fault] = self.fired.get(fault, 0) + 1
        log.warning(
            "fault %s fired on %s (%d)%s",
            fault,
            item.label,
            self.fired[fault],
            f": {detail}" if detail else "",
        )


STATE_KEY = web.AppKey("state", ServerState)


# ---------------------------------------------------------------- info endpoints


def _error(status: int, message: str, err_type: str) -> web.Response:
    body = {"object": "error", "message": message, "type": err_type, "param": None, "code": status}
    return web.json_response(body, status=status)


def server_info_dict(state: ServerState) -> dict[str, Any]:
    """Resolved server arguments, named as SGLang names them, plus the answer-key settings."""
    key = state.key
    context = {} if state.context_length is None else {"context_length": state.context_length}
    return {
        **context,
        "model_path": str(state.data_dir),
        "tokenizer_path": None,
        "served_model_name": state.served_model_name,
        "reasoning_parser": state.reasoning_parser,
        "host": state.host,
        "port": state.port,
        "tp_size": 1,
        "dp_size": 1,
        "ep_size": 1,
        "pp_size": 1,
        "kv_cache_dtype": "auto",
        "attention_backend": "answer_key",
        "dsa_prefill_backend": None,
        "dsa_decode_backend": None,
        "speculative_algorithm": None,
        "enable_deterministic_inference": True,  # answers depend on the prompt only
        "version": f"evalpipe-answer-key {__version__}",
        "launch_command": shlex.join(getattr(sys, "orig_argv", sys.argv)),
        "answer_key": {
            "mode": state.mode,
            "thinking": state.thinking,
            "faults": [
                {"fault": f, "benchmark": t.benchmark, "source_id": t.source_id}
                for f in state.faults
                if (t := state.target(f)) is not None
            ],
            "items": key.counts() if key else {},
            "data_dir": str(state.data_dir),
        },
    }


async def faults(request: web.Request) -> web.Response:
    """The planted faults: which item carries each, and how often each fired so far."""
    state = request.app[STATE_KEY]
    rows = []
    for f in state.faults:
        t = state.target(f)
        if t is not None:
            rows.append(
                {
                    "fault": f,
                    "benchmark": t.benchmark,
                    "source_id": t.source_id,
                    "fired": state.fired.get(f, 0),
                }
            )
    return web.json_response({"mode": state.mode, "faults": rows})


async def stats(request: web.Request) -> web.Response:
    """Chat requests received per item (``benchmark:source_id``) and prompts that matched no item."""
    state = request.app[STATE_KEY]
    return web.json_response({"requests": dict(sorted(state.requests.items())), "unmatched": state.unmatched})


# ---------------------------------------------------------------- chat completions


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _thinking_requested(body: dict[str, Any]) -> bool:
    """False when the request's chat_template_kwargs switch thinking off (either family's toggle)."""
    kwargs = body.get("chat_template_kwargs")
    if not isinstance(kwargs, dict):
        return True
    return kwargs.get("enable_thinking") is not False and kwargs.get("thinking") is not False


def _prompt_tokens(messages: list[Any]) -> int:
    total = 0
    for m in messages:
        if isinstance(m, dict):
            total += count_tokens(message_text(m.get("content"))) + MESSAGE_OVERHEAD_TOKENS
    return total


async def _hold_or_drop(request: web.Request, state: ServerState, item: KeyItem) -> bool:
    """duplicate_request: hold the first response past the client's read timeout (True), or drop the
    connection when the client announced no usable timeout (False: nothing more to send)."""
    raw = request.headers.get(READ_TIMEOUT_HEADER)
    try:
        timeout = float(raw) if raw is not None else None
    except ValueError:
        timeout = None
    deadlines = {"client read timeout": timeout, "proxy request timeout": state.request_timeout_s}
    usable = {what: t for what, t in deadlines.items() if t is not None and 0 < t <= MAX_HOLD_S}
    if usable:
        what, first = min(usable.items(), key=lambda kv: kv[1])
        hold = first + HOLD_MARGIN_S
        state.fire("duplicate_request", item, f"response held {hold:.1f}s ({what} {first:g}s)")
        await asyncio.sleep(hold)
        return True
    state.fire(
        "duplicate_request", item, f"connection dropped (client read timeout {raw or 'not announced'})"
    )
    if request.transport is not None:
        request.transport.close()
    return False


async def chat_completions(request: web.Request) -> web.StreamResponse:
    state = request.app[STATE_KEY]
    if not state.ready or state.key is None:
        return _error(503, "server is starting", "ServiceUnavailableError")
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return _error(400, "request body is not JSON", "BadRequestError")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list) or not body["messages"]:
        return _error(400, "'messages' must be a non-empty list", "BadRequestError")

    messages: list[Any] = body["messages"]
    item = state.key.match(prompt_text(messages))
    rid = body.get("rid")
    response_id = rid if isinstance(rid, str) and rid else f"chatcmpl-{uuid.uuid4().hex}"
    attempt = request.headers.get(RETRY_COUNT_HEADER, "?")

    max_tokens = _int_or_none(body.get("max_completion_tokens")) or _int_or_none(body.get("max_tokens"))
    reasoning: str | None = None
    if item is None:
        state.unmatched += 1
        log.warning("id=%s: prompt matches no bundled item", response_id)
        content, finish = "answer-key: this prompt matches no bundled item.", "stop"
    else:
        state.requests[item.label] = state.requests.get(item.label, 0) + 1
        log.info(
            "id=%s item=%s request=%d client_retry=%s",
            response_id,
            item.label,
            state.requests[item.label],
            attempt,
        )
        if state.target("http_500_once") is item and state.fired.get("http_500_once", 0) == 0:
            state.fire("http_500_once", item)
            return _error(
                500, "answer-key planted fault: internal server error (http_500_once)", "InternalServerError"
            )
        if state.target("duplicate_request") is item and state.fired.get("duplicate_request", 0) == 0:
            if not await _hold_or_drop(request, state, item):
                return web.Response(status=500)  # never reaches the client: the connection is closed
        seed = body.get("seed") if state.wrong_per_attempt else None
        reply = state.key.reply(
            item,
            mode=state.mode,
            faults=state.faults,
            wrong_share=state.wrong_share,
            attempt_seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
        )
        if reply.fault is not None:
            state.fire(reply.fault, item)
        content, finish = reply.content, reply.finish_reason
        if reply.think_to_budget:
            reasoning = endless_thinking((max_tokens or UNBOUNDED_THINKING_TOKENS) + 1)
        elif state.thinking != "off" and _thinking_requested(body):
            reasoning = thinking_text()

    requested_model = body.get("model")
    requested_n = body.get("n")
    completion = _within_budget(
        state,
        _Completion(
            response_id=response_id,
            model=requested_model if isinstance(requested_model, str) else state.served_model_name,
            created=int(time.time()),
            content=content,
            reasoning=reasoning,
            finish=finish,
            n=requested_n if isinstance(requested_n, int) and requested_n > 0 else 1,
            usage={},
        ),
        max_tokens,
        _prompt_tokens(messages),
    )
    if body.get("stream"):
        opts = body.get("stream_options")
        include_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
        return await _stream(request, completion, include_usage=include_usage)
    return web.json_response(_completion_body(completion))


@dataclass(frozen=True)
class _Completion:
    """One reply before it is sent: its id, model and creation time, the answer text, the reasoning in its own
    field (None: none, or inline in ``content``), the finish reason, the number of choices and the usage."""

    response_id: str
    model: str
    created: int
    content: str
    reasoning: str | None
    finish: str
    n: int
    usage: dict[str, int]


def _within_budget(
    state: ServerState, reply: _Completion, max_tokens: int | None, prompt_tokens: int
) -> _Completion:
    """``reply`` (its ``reasoning`` the whole thinking, not yet placed) cut to the output budget, which covers
    reasoning and answer — thinking that reaches it leaves no answer — with its usage, and the reasoning in its
    own field or inline as the server's ``thinking`` mode says."""
    content, finish, reasoning = reply.content, reply.finish, reply.reasoning
    reasoning_tokens = 0
    if reasoning is not None:
        reasoning, cut = limit_tokens(reasoning, max_tokens)
        reasoning_tokens = count_tokens(reasoning)
        if cut:
            content, finish = "", "length"
    left = None if max_tokens is None else max(0, max_tokens - reasoning_tokens)
    content, cut = limit_tokens(content, left)
    if cut:
        finish = "length"
    n = reply.n
    completion_tokens = reasoning_tokens + count_tokens(content)
    if finish == "length" and max_tokens is not None:
        completion_tokens = max(completion_tokens, max_tokens)  # the budget was spent
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens * n,
        "total_tokens": prompt_tokens + completion_tokens * n,
    }
    field_reasoning: str | None = None
    if reasoning is not None and state.thinking == "reasoning_content":
        field_reasoning = reasoning
    elif reasoning is not None:  # inline: an unclosed <think> when the budget ran out while thinking
        content = f"<think>{reasoning}" + (
            "" if finish == "length" and not content else f"</think>\n{content}"
        )
    if state.thinking != "off" or reasoning is not None:
        usage["reasoning_tokens"] = reasoning_tokens * n  # SGLang reports it at the top level of usage
    return replace(reply, content=content, reasoning=field_reasoning, finish=finish, usage=usage)


def _completion_body(c: _Completion) -> dict[str, Any]:
    """The non-streaming response body, as SGLang shapes it."""
    choices = [
        {
            "index": i,
            "message": {
                "role": "assistant",
                # like SGLang: no content when the reasoning parser took everything
                "content": None if c.reasoning is not None and not c.content else c.content,
                "reasoning_content": c.reasoning,
                "tool_calls": None,
            },
            "logprobs": None,
            "finish_reason": c.finish,
            "matched_stop": None,
        }
        for i in range(c.n)
    ]
    return {
        "id": c.response_id,
        "object": "chat.completion",
        "created": c.created,
        "model": c.model,
        "choices": choices,
        "usage": c.usage,
    }


def _pieces(text: str, parts: int = 4) -> list[str]:
    step = max(1, -(-len(text) // parts))
    return [text[i : i + step] for i in range(0, len(text), step)] or [""]


async def _stream(request: web.Request, c: _Completion, *, include_usage: bool) -> web.StreamResponse:
    """Server-sent events as SGLang sends them: role, reasoning and content deltas, finish reason, usage (when
    the request asked for it), [DONE]."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    content, reasoning, finish = c.content, c.reasoning, c.finish

    def chunk(choices: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> bytes:
        obj = {
            "id": c.response_id,
            "object": "chat.completion.chunk",
            "created": c.created,
            "model": c.model,
            "choices": choices,
        }
        obj.update(extra or {})
        return b"data: " + json.dumps(obj, ensure_ascii=False).encode() + b"\n\n"

    for i in range(c.n):
        await resp.write(
            chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        )
        if reasoning is not None:
            for piece in _pieces(reasoning):
                delta = {"reasoning_content": piece}
                await resp.write(chunk([{"index": i, "delta": delta, "finish_reason": None}]))
        for piece in _pieces(content) if content or reasoning is None else []:
            await resp.write(chunk([{"index": i, "delta": {"content": piece}, "finish_reason": None}]))
        await resp.write(chunk([{"index": i, "delta": {}, "finish_reason": finish}]))
    if include_usage:
        await resp.write(chunk([], {"usage": c.usage}))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


# ---------------------------------------------------------------- app and process lifecycle


class AnswerKeyServer(ModelServer):
    """The shared routes (``/health`` 503 until loaded, info documents, ``/v1/models``) plus the answer key's."""

    health_paths = ("/health", "/health_generate")
    loading_body = {"status": "starting"}

    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.served_model_name = state.served_model_name

    def is_ready(self) -> bool:
        return self.state.ready

    def server_info(self) -> dict[str, Any]:
        return server_info_dict(self.state)

    def model_info(self) -> dict[str, Any]:
        return {
            "model_path": str(self.state.data_dir),
            "tokenizer_path": None,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "answer-key",
            "model_type": "answer_key",
            "architectures": ["AnswerKey"],
        }

    def add_routes(self, app: web.Application) -> None:
        app[STATE_KEY] = self.state
        app.router.add_get("/faults", faults)
        app.router.add_get("/stats", stats)
        app.router.add_post("/v1/chat/completions", chat_completions)


def build_app(state: ServerState) -> web.Application:
    return AnswerKeyServer(state).build_app()


async def _load(state: ServerState) -> None:
    """Load the data while /health says 503 (like SGLang loading weights), then wait the startup delay."""
    key = await asyncio.to_thread(AnswerKey.load, state.data_dir, state.benchmarks)
    key.check_mode(state.mode, state.faults)
    state.key = key
    log.info("loaded %s from %s; mode %s", key.counts(), state.data_dir, state.mode)
    for f in state.faults:
        t = key.fault_targets[f]
        log.warning("planted fault %s -> %s %s", f, t.benchmark, t.source_id)
    if state.startup_delay > 0:
        await asyncio.sleep(state.startup_delay)
    state.ready = True
    log.info("ready")


async def serve(state: ServerState) -> int:
    """Serve until SIGTERM/SIGINT; returns the process exit code (1 when the data cannot be loaded)."""

    def listening(port: int) -> None:  # the bound port (differs from the argument with --port 0)
        state.port = port
        log.info(
            "listening on http://%s:%d (served model %s)", state.host, state.port, state.served_model_name
        )

    async def load() -> int | None:
        try:
            await _load(state)
        except Exception as exc:
            log.error("cannot start: %s", exc.message if isinstance(exc, EvalpipeError) else repr(exc))
            return 1
        return None

    code = await serve_until_signalled(
        build_app(state),
        state.host,
        state.port,
        startup=load,
        on_listening=listening,
        shutdown=Shutdown(timeout_s=0.5),
        log=log,
    )
    if code == 0:
        log.info("stopping (signal)")
    return code


def _faults_arg(value: str) -> list[str]:
    out = [f.strip() for f in value.split(",") if f.strip()]
    bad = [f for f in out if f not in FAULTS]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown fault(s) {', '.join(bad)}; choose from {', '.join(FAULTS)}"
        )
    return list(dict.fromkeys(out))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m evalpipe.engines.answer_key_server",
        description="OpenAI-compatible answer-key server for evalpipe's self-test (bundled items only).",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0 = any free port (logged on stderr)")
    p.add_argument("--served-model-name", default="answer-key")
    p.add_argument("--mode", choices=MODES, default="positive")
    p.add_argument("--faults", type=_faults_arg, default=[], help=f"comma-separated: {','.join(FAULTS)}")
    p.add_argument("--thinking", choices=THINKING_MODES, default="off", help="answer as a thinking model")
    p.add_argument("--reasoning-parser", default=None, help="reported in /server_info (as SGLang reports it)")
    p.add_argument("--data-dir", type=Path, default=None, help="default: the bundled datasets")
    p.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="tokens per request reported in /server_info as context_length (SGLang's key); nothing enforced",
    )
    p.add_argument("--startup-delay", type=float, default=0.0, help="seconds /health stays 503 after loading")
    p.add_argument(
        "--request-timeout-s",
        type=float,
        default=None,
        help="the server-time deadline of the proxy in front (duplicate_request holds past the earlier one)",
    )
    p.add_argument(
        "--wrong-share",
        type=_shares_arg,
        default={},
        help="planted regression: comma-separated BENCHMARK=SHARE, that share of the benchmark's items answered "
        "wrong (a fixed, hash-chosen set)",
    )
    p.add_argument(
        "--wrong-per-attempt",
        action="store_true",
        help="draw the planted regression per request seed: attempts of one item disagree independently",
    )
    p.add_argument(
        "--benchmarks",
        type=lambda text: [b for b in (x.strip() for x in text.split(",")) if b],
        default=None,
        help="comma-separated: answer only these benchmarks' folders of --data-dir",
    )
    return p.parse_args(argv)


def _shares_arg(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            share = float(value)
        except ValueError:
            share = -1.0
        if not sep or not name or not 0.0 <= share <= 1.0:
            raise argparse.ArgumentTypeError(f"expected BENCHMARK=SHARE with SHARE in [0, 1], got {part!r}")
        out[name] = share
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log_to_stderr(log.name, "answer-key")
    state = ServerState(
        served_model_name=args.served_model_name,
        mode=args.mode,
        faults=args.faults,
        data_dir=(args.data_dir or bundled_data_dir()).resolve(),
        host=args.host,
        port=args.port,
        startup_delay=max(0.0, args.startup_delay),
        thinking=args.thinking,
        reasoning_parser=args.reasoning_parser,
        request_timeout_s=args.request_timeout_s,
        wrong_share=args.wrong_share,
        wrong_per_attempt=args.wrong_per_attempt,
        benchmarks=args.benchmarks,
        context_length=args.context_length,
    )
    return asyncio.run(serve(state))


if __name__ == "__main__":
    sys.exit(main())
