"""The replay server: serves a bundle's recorded responses, launched like SGLang.

``python -m evalpipe.engines.replay_server --bundle DIR --host H --port P --served-model-name NAME
--miss-log PATH``.  ``/server_info`` and ``/model_info`` return the recorded (redacted) documents, so
the launcher's verification checks the original server's resolved settings again.  A chat request is
answered from the queue of its prompt hash (``evalpipe.engines.replay_queues``); the body's ``id`` becomes the
request's ``rid`` like SGLang.  A request with no recorded answer left gets HTTP 404 (type
``replay_miss``) and a line in the miss log, which the audit reports as an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aiohttp import web

from evalpipe.artifacts import RunDir
from evalpipe.engines.http_base import ModelServer, log_to_stderr, serve_until_signalled
from evalpipe.engines.replay_queues import ReplayQueues, build_queues
from evalpipe.hashing import prompt_sha256, sha256_hex

log = logging.getLogger("evalpipe.replay")

PLAN_KEY = web.AppKey("plan", ReplayQueues)
MISS_KEY = web.AppKey("miss_log", Path)


def _with_id(body: bytes, content_type: str | None, old_id: str, new_id: str | None) -> bytes:
    if not new_id or not old_id:
        return body
    if content_type and "json" in content_type:
        try:
            doc = json.loads(body)
        except ValueError:
            return body
        if isinstance(doc, dict) and "id" in doc:
            doc["id"] = new_id
            return json.dumps(doc, ensure_ascii=False).encode()
        return body
    # SSE: every chunk carries the id
    return re.sub(
        rb'"id":\s*"' + re.escape(old_id.encode()) + rb'"', b'"id":"' + new_id.encode() + b'"', body
    )


async def chat(request: web.Request) -> web.Response:
    plan = request.app[PLAN_KEY]
    raw = await request.read()
    try:
        doc = json.loads(raw)
    except ValueError:
        return web.json_response(
            {"error": {"message": "body is not JSON", "type": "bad_request"}}, status=400
        )
    messages = doc.get("messages") if isinstance(doc, dict) else None
    key = prompt_sha256(messages) if isinstance(messages, list) else sha256_hex(raw)
    queue = plan.queues.get(key)
    if not queue:
        miss = {"messages_sha256": key, "model": doc.get("model") if isinstance(doc, dict) else None}
        with request.app[MISS_KEY].open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(miss) + "\n")
        log.error("replay miss: no recorded answer left for prompt %s", key[:16])
        return web.json_response(
            {"object": "error", "message": f"no recorded response for prompt {key}", "type": "replay_miss"},
            status=404,
        )
    rec = queue.pop(0)
    new_id = doc.get("rid") if isinstance(doc, dict) else None
    body = _with_id(rec.body, rec.content_type, _recorded_id(rec.body, rec.content_type), new_id)
    return web.Response(
        status=rec.status, body=body, content_type=(rec.content_type or "application/json").split(";")[0]
    )


def _recorded_id(body: bytes, content_type: str | None) -> str:
    m = re.search(rb'"id":\s*"([^"]+)"', body)
    return m.group(1).decode() if m else ""


class ReplayServer(ModelServer):
    """The shared routes with the recorded documents (``/health`` is ready at once: the plan is built before
    listening); no ``/v1/models``, as the replayed runs never asked for it."""

    models_paths = ()

    def __init__(self, plan: ReplayQueues, info: dict[str, Any], miss_log: Path) -> None:
        self.plan, self.info, self.miss_log = plan, info, miss_log

    def server_info(self) -> Mapping[str, Any]:
        return self.info.get("server_info") or {}

    def model_info(self) -> Mapping[str, Any]:
        return self.info.get("model_info") or {}

    def add_routes(self, app: web.Application) -> None:
        app[PLAN_KEY], app[MISS_KEY] = self.plan, self.miss_log
        app.router.add_post("/v1/chat/completions", chat)


def build_app(plan: ReplayQueues, info: dict[str, Any], miss_log: Path) -> web.Application:
    return ReplayServer(plan, info, miss_log).build_app()


def load_info(bundle: Path) -> dict[str, Any]:
    rd = RunDir(bundle)
    info: dict[str, Any] = {}
    for name, path in (("server_info", rd.server_info), ("model_info", rd.model_info)):
        if path.is_file():
            info[name] = json.loads(path.read_text(encoding="utf-8"))
    return info


async def serve(args: argparse.Namespace) -> int:
    plan = build_queues(args.bundle)
    log.info(
        "replaying %d prompts from %s (%d unused duplicate responses skipped)",
        len(plan.queues),
        args.bundle,
        plan.skipped_unused,
    )
    app = build_app(plan, load_info(args.bundle), args.miss_log)
    return await serve_until_signalled(app, args.host, args.port, log=log)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evalpipe.engines.replay_server", description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--miss-log", type=Path, required=True)
    args = p.parse_args(argv)
    log_to_stderr(log.name, "replay")
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
