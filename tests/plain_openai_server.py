"""A minimal OpenAI-compatible server the way many real ones are: no ``/server_info``, optionally no
``/health`` — launched by the tests as ``server.kind: command``.

    python plain_openai_server.py --port N [--served-name NAME] [--no-health] [--never-ready]

Answers every chat completion with a fixed text (usage counted in words).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import time

from aiohttp import web


def make_app(args: argparse.Namespace) -> web.Application:
    async def health(request: web.Request) -> web.Response:
        if args.never_ready:
            return web.json_response({"status": "loading"}, status=503)
        return web.json_response({"status": "ok"})

    async def models(request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": args.served_name, "object": "model"}]})

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        text = "The answer is 42."
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        return web.json_response(
            {
                "id": f"plain-{time.monotonic_ns()}",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [
                    {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                ],
                "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 4, "total_tokens": 0},
            }
        )

    app = web.Application()
    if not args.no_health:
        app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", chat)
    return app


async def serve(args: argparse.Namespace) -> None:
    runner = web.AppRunner(make_app(args), handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, args.host, args.port).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await runner.cleanup()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-name", default="plain-model")
    p.add_argument("--no-health", action="store_true")
    p.add_argument("--never-ready", action="store_true")
    asyncio.run(serve(p.parse_args()))


if __name__ == "__main__":
    main()
