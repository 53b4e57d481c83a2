"""Record ``python -m sglang.bench_serving`` JSONL with the real SGLang 0.5.23 client, on a CPU-only machine.

The committed fixtures ``tests/fixtures/sglang-0.5.23-bench_serving-*.jsonl`` are this script's output: SGLang's
own benchmark client (``sglang.bench_serving`` → ``sglang.benchmark.serving.cli_main`` → ``benchmark()``,
whose last step appends ``json.dumps(result | result_details)`` to ``--output-file``) run against a real
server — evalpipe's llama.cpp launcher serving SmolLM2-135M (``--threads 1 --no-prompt-cache``) — so every
key, every number format and the ``Infinity`` literal (``request_rate`` defaults to ``float("inf")``) are what
SGLang writes.  evalpipe's parser tests read them (``tests/speed/test_speed_sglang.py``).

How to run it (a side venv outside the repository; nothing here is an evalpipe dependency)::

    python3 -m venv /work/sglang-venv
    /work/sglang-venv/bin/pip install --no-deps sglang==0.5.23
    /work/sglang-venv/bin/pip install torch==2.13.0            # the CPU wheel on this disk
    /work/sglang-venv/bin/pip install --no-deps triton
    /work/sglang-venv/bin/pip install numpy psutil requests packaging pydantic orjson pybase64 pillow \
        starlette msgspec pyzmq tqdm IPython aiohttp transformers datasets torchvision
    /work/sglang-venv/bin/pip install --no-deps apache-tvm-ffi==0.1.11 sentencepiece compressed-tensors \
        loguru gguf                                           # what `import sglang.benchmark.serving` needs
    .venv/bin/python tools/make_sglang_bench_serving_fixture.py --sglang-python /work/sglang-venv/bin/python

(``torchvision`` from PyPI pulls torch 2.14.1 over the CPU wheel; bench_serving only imports torch, so either
works.)  The tokenizer is the one evalpipe derives from the model's GGUF (``gguf:smollm2``).

What is real and what is not:

* real: SGLang 0.5.23's CLI, dataset generator (``random-ids``, seed 42), request code, metric code and JSON
  writer; llama.cpp's responses; the timings (this machine, whatever its load was — they are not a speed
  claim); the ``server_info`` key (SGLang's client GETs ``/server_info`` and embeds it; here it is the llama.cpp
  launcher's payload, with this machine's paths).
* synthetic: in ``…-partial-failure.jsonl`` a small proxy in front of llama.cpp answers HTTP 500 to every
  second measured request (warm-up requests pass), standing in for a server that fails requests
  mid-benchmark.  Nothing in any line is written or edited by this script.
* also checked, not committed: when *every* measured request fails, SGLang raises inside
  ``calculate_metrics`` (``np.percentile`` of an empty list) and writes no line at all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import aiohttp
from aiohttp import web

from evalpipe.engines.llamacpp import spawn
from evalpipe.processes.ports import free_port
from evalpipe.tokenizer import resolve

PREFIX = "sglang-0.5.23-bench_serving"
WORKLOAD = ["--random-input-len", "32", "--random-output-len", "16", "--random-range-ratio", "1",
            "--num-prompts", "4", "--max-concurrency", "2", "--warmup-requests", "2", "--seed", "42"]  # fmt: skip


class FaultProxy:
    """Forwards to ``upstream``; ``fail(n)`` decides, by the 1-based count of completion requests, which
    ones get an HTTP 500 instead."""

    def __init__(self, upstream: str, warmup: int, mode: str) -> None:
        self.upstream, self.warmup, self.mode = upstream, warmup, mode
        self.count = 0
        self.port = free_port()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def fail(self, n: int) -> bool:
        measured = n - self.warmup
        return measured > 0 and (self.mode == "all" or measured % 2 == 0)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if request.path.endswith("/completions"):
            self.count += 1
            if self.fail(self.count):
                return web.json_response({"error": {"message": "injected failure", "code": 500}}, status=500)
        async with aiohttp.ClientSession() as session:
            async with session.request(request.method, self.upstream + request.path_qs, data=body,
                                       headers={"Content-Type": request.headers.get("Content-Type", "")}) as up:  # fmt: skip
                response = web.StreamResponse(status=up.status)
                response.content_type = up.content_type
                await response.prepare(request)
                async for chunk in up.content.iter_any():
                    await response.write(chunk)
                await response.write_eof()
                return response

    def __enter__(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(30)
        return f"http://127.0.0.1:{self.port}"

    async def _start(self) -> None:
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(30)
        self._loop.call_soon_threadsafe(self._loop.stop)


def bench(sglang_python: str, base_url: str, tokenizer: Path, out_file: Path, log: Path) -> int:
    argv = [sglang_python, "-m", "sglang.bench_serving", "--backend", "sglang-oai", "--base-url", base_url,
            "--model", "smollm2", "--tokenizer", str(tokenizer), "--dataset-name", "random-ids", *WORKLOAD,
            "--output-file", str(out_file), "--output-details", "--disable-tqdm"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    with open(log, "ab") as fh:
        return subprocess.run(
            argv, stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=900, check=False
        ).returncode


def main(args: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sglang-python", required=True, help="python of a venv with sglang==0.5.23")
    parser.add_argument("--out-dir", type=Path, default=Path("tests/fixtures"))
    ns = parser.parse_args(args)
    tokenizer = resolve("gguf:smollm2")
    assert tokenizer is not None
    work = Path(tempfile.mkdtemp(prefix="sglang-bench-fixture-"))
    proc, base = spawn(["--model", "smollm2", "--threads", "1", "--parallel", "2", "--ctx-size", "4096",
                        "--served-model-name", "smollm2", "--no-prompt-cache"], work / "server.log")  # fmt: skip
    try:
        runs = {"llamacpp": None, "partial-failure": "every-second", "all-failed": "all"}
        for name, mode in runs.items():
            out = work / f"{PREFIX}-{name}.jsonl"
            with contextlib.ExitStack() as stack:
                url = base if mode is None else stack.enter_context(FaultProxy(base, warmup=2, mode=mode))
                code = bench(ns.sglang_python, url, tokenizer.directory, out, work / f"{name}.log")
            print(f"{name}: bench_serving exit {code}, {'no output file' if not out.exists() else out.name}")
            if mode == "all":
                assert code != 0 and not out.exists(), (
                    "expected SGLang to write nothing when every request fails"
                )
                continue
            assert code == 0, f"bench_serving failed; see {work / f'{name}.log'}"
            ns.out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out, ns.out_dir / out.name)
            print(f"wrote {ns.out_dir / out.name}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    print(f"logs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
