"""A scripted OpenAI-compatible chat server for tests (aiohttp, loopback, ephemeral port).

It answers ``POST /v1/chat/completions`` from a *table keyed by question content*: the first rule
whose ``match`` text occurs in the request's final user message (line endings normalised) decides the
reply — its content, its ``finish_reason`` (``length`` = a truncated answer), or an HTTP error status
for the first ``fail_times`` matching requests.  Keying on content, not on order or index, is what lets
a test prove that an answer reached the question it was written for, whatever order the client sends
them in and however often it retries.

Every request is recorded (``requests``) with its messages, prompt hash and the rule that answered,
so tests can assert exactly what was asked.  Like SGLang, a request body field ``rid`` becomes the
response ``id``.  ``stream: true`` is answered with server-sent events.

With ``sampling=True`` the reply is not the rule's text but a deterministic stand-in for a model that
honours the sampling fields a router must pass on (``max_tokens``/``max_completion_tokens``,
``temperature``, ``seed``, ``top_p``, ``n`` and, with ``thinking_toggle``, the chat-template thinking
switch): greedy requests (temperature 0, or top_p below 0.001) always get the same words for a question,
seeded ones the same words per seed, unseeded ones fresh random words; ``finish_reason`` is ``length``
when the token limit cut the answer.  Request headers are recorded too (``X-Request-Id``).

Use it in-process (``with ScriptedServer(rules) as srv: srv.base_url``, a background thread with its
own event loop) or as a subprocess::

    python tests/scripted_server.py --rules rules.json --port-file port.txt

The subprocess writes its port to ``--port-file`` once listening, logs each request as a JSON line to
``--request-log`` (if given), serves ``--server-info FILE`` (e.g. the real SGLang payload for
glm-fp8.yaml) as ``/server_info`` if given, and exits on SIGTERM/SIGINT.  ``--answer TEXT`` answers every
question with TEXT (no rules file needed).  Like many real servers (llama-server, vLLM) it can go without
SGLang's info routes (``--no-server-info``: no ``/server_info``, no ``/model_info``), without ``/health``
(``--no-health``), or never finish loading (``--never-ready``: ``/health`` 503) — launched by the tests as
``server.kind: command``.  The shared routes and the serve loop are evalpipe's (``evalpipe.engines.http_base``).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import itertools
import json
import secrets
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

# Importable both as ``tests.scripted_server`` and as a script run from anywhere.
_REPO = Path(__file__).resolve().parents[1]
if str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

from evalpipe.engines.http_base import ModelServer, ServerThread, Shutdown, serve_until_signalled  # noqa: E402
from evalpipe.hashing import message_text, normalize_newlines, prompt_sha256  # noqa: E402


@dataclass
class Rule:
    """One row of the answer table.

    ``match``: text that must occur in the final user message (``""`` matches everything, useful as a
    last default rule).  ``status`` != 200 answers the first ``fail_times`` matching requests with
    that HTTP status (``fail_times=None``: every time) and then falls back to ``content``.
    """

    match: str
    content: str = ""
    finish_reason: str = "stop"
    status: int = 200
    fail_times: int | None = 1
    name: str | None = None
    delay_s: float = 0.0
    #: answer at most this many matching requests, then leave them to the next matching rule (a server
    #: that answers one prompt differently on a later attempt: the nondeterminism repeats measure)
    max_uses: int | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Rule:
        return cls(**data)


@dataclass
class RecordedRequest:
    seq: int
    path: str
    rule: str | None
    status: int
    model: str | None
    max_tokens: int | None
    stream: bool
    prompt_sha256: str | None
    last_user: str | None
    response_id: str | None
    body: dict[str, Any] = field(repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    arrived: float = 0.0  # time.time() when the request reached the server
    answered: float | None = None  # time.time() when its answer (or error) was ready to send


def _last_user_text(messages: list[dict[str, Any]]) -> str | None:
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "user":
            return normalize_newlines(message_text(m.get("content")))
    return None


def _n_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


_WORDS = ("the", "cat", "lighthouse", "sea", "light", "night", "storm", "keeper", "waves", "lamp", "sailor",
          "fish", "rock", "wind", "moon", "ship")  # fmt: skip
SAMPLED_LENGTH = 24  # words a sampled answer has when no token limit cuts it


def sampled_choices(
    body: dict[str, Any], last_user: str | None, thinking_toggle: str | None
) -> tuple[list[tuple[str, str | None, str]], int]:
    """``([(content, reasoning_content, finish_reason)] * n, completion_tokens)`` for ``sampling=True``."""
    limit = body.get("max_completion_tokens") or body.get("max_tokens") or SAMPLED_LENGTH
    temperature = float(body.get("temperature", 1.0))
    greedy = temperature == 0 or float(body.get("top_p", 1.0)) < 1e-3
    kwargs = body.get("chat_template_kwargs") or {}
    thinking = thinking_toggle is not None and bool(kwargs.get(thinking_toggle, True))
    choices, tokens = [], 0
    for i in range(int(body.get("n", 1))):
        if greedy:
            key = "greedy"
        elif body.get("seed") is not None:
            key = f"seed={body['seed']}/{i}/t={temperature}"
        else:
            key = secrets.token_hex(8)
        digest = hashlib.sha256(f"{key}|{last_user}".encode()).digest()
        words = [_WORDS[b % len(_WORDS)] for b in digest[:SAMPLED_LENGTH]]
        cut = words[: int(limit)]
        choices.append((" ".join(cut), "thinking about " + words[0] if thinking else None,
                        "length" if len(cut) < len(words) else "stop"))  # fmt: skip
        tokens += len(cut)
    return choices, tokens


class ScriptedApp(ModelServer):
    """The request handler and its state; independent of how the server is run."""

    client_max_size = 64 * 1024 * 1024
    owned_by = "scripted"

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        served_name: str = "scripted-model",
        default: Rule | None = None,
        server_info: dict[str, Any] | None = None,
        info_routes: bool = True,
        health: bool = True,
        ready: bool = True,
        sampling: bool = False,
        thinking_toggle: str | None = None,
    ):
        self.rules = list(rules)
        self.info = server_info
        self.sampling = sampling
        self.thinking_toggle = thinking_toggle
        self.default = default
        self.served_model_name = served_name
        self.requests: list[RecordedRequest] = []
        self._failures: dict[int, int] = {}
        self._uses: dict[int, int] = {}
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.request_log: Path | None = None
        self.ready = ready
        self.in_flight = 0  # chat requests being answered right now ...
        self.max_in_flight = 0  # ... and the most there ever were at once
        if not info_routes:
            self.server_info_paths = self.model_info_paths = ()
        if not health:
            self.health_paths = ()

    @property
    def served_name(self) -> str:
        return self.served_model_name

    def _pick(self, last_user: str | None) -> tuple[int, Rule] | tuple[None, None]:
        text = last_user or ""
        for i, rule in enumerate(self.rules):
            if normalize_newlines(rule.match) in text:
                if rule.max_uses is not None:
                    with self._lock:
                        used = self._uses.get(i, 0)
                        if used >= rule.max_uses:
                            continue
                        self._uses[i] = used + 1
                return i, rule
        if self.default is not None:
            return -1, self.default
        return None, None

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(rec)
            if self.request_log is not None:
                row = asdict(rec)
                with open(self.request_log, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def make_app(self) -> web.Application:
        return self.build_app()

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.chat)

    def is_ready(self) -> bool:
        return self.ready

    def server_info(self) -> dict[str, Any]:
        """Resolved arguments the way SGLang names them (a plain single-GPU server, or the given payload)."""
        if self.info is not None:
            return self.info
        return {
            "served_model_name": self.served_name,
            "tp_size": 1,
            "kv_cache_dtype": "auto",
            "speculative_algorithm": None,
            "enable_deterministic_inference": False,
            "version": "scripted-test-server",
        }

    async def chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.time()
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._chat(request, arrived)
        finally:
            with self._lock:
                self.in_flight -= 1

    async def _chat(self, request: web.Request, arrived: float) -> web.StreamResponse:
        body = await request.json()
        messages = body.get("messages") or []
        last_user = _last_user_text(messages)
        idx, rule = self._pick(last_user)
        with self._lock:
            seq = next(self._ids)
        rid = body.get("rid")
        response_id = str(rid) if rid else f"chatcmpl-scripted-{seq}"
        rec = RecordedRequest(
            seq=seq,
            path=request.path,
            rule=None,
            status=200,
            model=body.get("model"),
            max_tokens=body.get("max_tokens"),
            stream=bool(body.get("stream")),
            prompt_sha256=prompt_sha256(messages) if messages else None,
            last_user=last_user,
            response_id=None,
            body=body,
            headers=dict(request.headers),
            arrived=arrived,
        )
        if rule is None:
            rec.status = 404
            self._record(rec)
            return web.json_response(
                {"error": {"message": "no scripted answer for this question", "type": "not_found"}},
                status=404,
            )
        rec.rule = rule.name or rule.match[:60]
        if rule.status != 200:
            with self._lock:
                used = self._failures.get(idx, 0)
                fail = rule.fail_times is None or used < rule.fail_times
                if fail:
                    self._failures[idx] = used + 1
            if fail:
                rec.status = rule.status
                self._record(rec)
                if rule.delay_s:
                    await asyncio.sleep(rule.delay_s)
                rec.answered = time.time()
                return web.json_response(
                    {"error": {"message": f"scripted HTTP {rule.status}", "type": "server_error"}},
                    status=rule.status,
                )
        rec.response_id = response_id
        self._record(rec)  # recorded on arrival: a test can see a request the server is still "working" on
        if rule.delay_s:
            await asyncio.sleep(rule.delay_s)
        prompt_tokens = sum(
            _n_tokens(message_text(m.get("content"))) for m in messages if isinstance(m, dict)
        )
        if self.sampling:
            sampled, completion_tokens = sampled_choices(body, last_user, self.thinking_toggle)
            rule = Rule(match=rule.match, content=sampled[0][0], finish_reason=sampled[0][2], name=rule.name)
        else:
            sampled, completion_tokens = None, _n_tokens(rule.content)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        model = body.get("model") or self.served_name
        created = int(time.time())
        rec.answered = time.time()
        if body.get("stream"):
            return await self._stream(request, response_id, model, created, rule, usage)
        choices: list[dict[str, Any]] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": rule.content},
                "finish_reason": rule.finish_reason,
            }
        ]
        if sampled is not None:
            choices = [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": c, "reasoning_content": r},
                    "finish_reason": f,
                }
                for i, (c, r, f) in enumerate(sampled)
            ]
        return web.json_response(
            {
                "id": response_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": choices,
                "usage": usage,
            }
        )

    async def _stream(
        self, request: web.Request, rid: str, model: str, created: int, rule: Rule, usage: dict[str, int]
    ) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)

        def chunk(delta: dict[str, Any], finish: str | None, with_usage: bool = False) -> bytes:
            obj: dict[str, Any] = {
                "id": rid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if with_usage:
                obj["choices"] = []
                obj["usage"] = usage
            return f"data: {json.dumps(obj)}\n\n".encode()

        await resp.write(chunk({"role": "assistant", "content": ""}, None))
        text = rule.content
        for start in range(0, len(text), 64):
            await resp.write(chunk({"content": text[start : start + 64]}, None))
        await resp.write(chunk({}, rule.finish_reason))
        await resp.write(chunk({}, None, with_usage=True))
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


class ScriptedServer:
    """Runs a ``ScriptedApp`` on 127.0.0.1:<ephemeral> in a background thread."""

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        served_name: str = "scripted-model",
        default: Rule | None = None,
        server_info: dict[str, Any] | None = None,
        sampling: bool = False,
        thinking_toggle: str | None = None,
    ):
        self.app = ScriptedApp(
            rules,
            served_name=served_name,
            default=default,
            server_info=server_info,
            sampling=sampling,
            thinking_toggle=thinking_toggle,
        )
        self._thread = ServerThread(self.app.build_app())

    @property
    def port(self) -> int | None:
        return self._thread.port

    @property
    def base_url(self) -> str:
        """OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """Server base URL without ``/v1`` (``http://127.0.0.1:PORT``): what a router is given."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        return list(self.app.requests)

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._thread.stop()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def load_rules(path: Path) -> tuple[list[Rule], Rule | None]:
    """``{"rules": [...], "default": {...}|null}`` or a bare list of rules."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, list):
        return [Rule.from_dict(r) for r in data], None
    default = data.get("default")
    return [Rule.from_dict(r) for r in data.get("rules", [])], Rule.from_dict(default) if default else None


async def _serve(args: argparse.Namespace) -> int:
    if args.rules:
        rules, default = load_rules(Path(args.rules))
    else:
        rules, default = [], Rule(match="", content=args.answer, name="answer")
    info = json.loads(Path(args.server_info).read_text(encoding="utf-8")) if args.server_info else None
    scripted = ScriptedApp(
        rules,
        served_name=args.served_name,
        default=default,
        server_info=info,
        info_routes=not args.no_server_info,
        health=not args.no_health,
        ready=not args.never_ready,
    )
    if args.request_log:
        scripted.request_log = Path(args.request_log)

    def listening(port: int) -> None:
        if args.port_file:
            port_file = Path(args.port_file)
            tmp = port_file.with_name(port_file.name + ".tmp")
            tmp.write_text(str(port))
            tmp.replace(port_file)  # atomic: a reader never sees a half-written port
        print(f"scripted server listening on http://{args.host}:{port}", file=sys.stderr, flush=True)

    # a client that disconnects cancels its handler (a delayed answer does not keep the server busy), and
    # stopping never waits long for in-flight requests
    return await serve_until_signalled(
        scripted.build_app(),
        args.host,
        args.port,
        on_listening=listening,
        shutdown=Shutdown(timeout_s=2.0, handler_cancellation=True),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--rules", help="JSON file: a list of rules or {rules, default}")
    what.add_argument("--answer", help="answer every question with this text")
    parser.add_argument("--port-file", default=None, help="written with the bound port once listening")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = ephemeral")
    parser.add_argument("--served-name", default="scripted-model")
    parser.add_argument("--request-log", default=None, help="append each request as a JSON line")
    parser.add_argument("--server-info", default=None, help="JSON file served as /server_info")
    parser.add_argument("--no-server-info", action="store_true", help="serve no /server_info, /model_info")
    parser.add_argument("--no-health", action="store_true", help="serve no /health")
    parser.add_argument("--never-ready", action="store_true", help="/health answers 503 forever")
    return asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
