"""``python -m sglang.launch_server ARGS`` — the test double.

Behaviour switches (environment variables, so tests need not change the argv evalpipe builds):

* ``FAKE_SGLANG_STARTUP_S``      seconds /health answers 503 before 200 (default 0.3) — "start slowly"
* ``FAKE_SGLANG_CRASH``          print 80 log lines, then exit 3 before ever becoming ready
* ``FAKE_SGLANG_RESOLVE_KV``     report this kv_cache_dtype in /server_info instead of the requested one
* ``FAKE_SGLANG_IGNORE_SIGTERM`` the server and its child ignore SIGTERM (needs SIGKILL of the group)
* ``FAKE_SGLANG_NO_SERVER_INFO`` /server_info is 404 (clients must fall back to /get_server_info)
* ``FAKE_SGLANG_DETERMINISTIC``  report enable_deterministic_inference true
* ``FAKE_SGLANG_SHAPE=live-0.5.17`` answer in the shape a live SGLang 0.5.17 did (``tests/fixtures/
  sglang-0.5.17-live/``: its ``/server_info`` with ``context_length`` null and ``max_req_input_len``, its
  ``/v1/models`` card with ``max_model_len``, its version) instead of the source-built 0.5.23 payload
* ``FAKE_SGLANG_KV_STORAGE``     log this torch dtype for the KV pool instead of the one the flags give
* ``FAKE_SGLANG_SHAPE=live-0.5.17-dsa`` a live 0.5.17 on the DSA path (``--attention-backend dsa``;
  ``tests/fixtures/sglang-0.5.17-dsa-live/``): resolves as 0.5.17 does on an SM90 GPU — ``auto`` KV to
  bfloat16, the page size to 64, unset kernels to ``flashmla_sparse``/``fa3`` (BF16) or ``flashmla_kv`` (FP8),
  ``max_total_num_tokens`` — logs its DSA lines and the pool's ``KV size`` from the row each layout stores
  (BF16 1,152 B, scaled FP8 656 B, plus the indexer's 132 B, per token per layer of the model's
  ``num_hidden_layers``), and refuses TileLang + ``fp8_e4m3`` with 0.5.17's own ValueError (exit 1)

``/generate`` and chat ``logprobs`` answer in the live 0.5.17 shape (``sglang/logprobs.py``), deterministic per
launch and moved by an ``fp8_*`` KV cache past the first 256-token chunk.

Like SGLang, it logs the KV pool it allocated ("KV Cache is allocated. dtype: torch.…, #tokens: …") and, for an
``fp8_e4m3`` cache without ``--quantization-param-path``, that it defaults the scaling factors to 1.0 — the
lines of SGLang's own log, word for word.  Like SGLang, the server starts a child process (its "scheduler") in the same process group and stops it on
a graceful shutdown, and it returns the request body's ``rid`` as the response ``id``.

``/server_info`` is the payload real SGLang 0.5.23 builds (``tests/fixtures/sglang-0.5.23-server_info-glm-fp8
.json``, made by ``tools/make_sglang_server_info_fixture.py``) with this launch's arguments written where the
real payload holds them: the top level and every per-DP ``internal_states`` entry; ``launch_command`` is the
argv joined by spaces.  Like SGLang, it reports ``api_key`` and the ``--api-key`` value in ``launch_command``.
The shared routes and the serve loop are evalpipe's (``evalpipe.engines.http_base``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

from evalpipe.engines.http_base import ModelServer, Shutdown, serve_until_signalled
from sglang import __version__
from sglang.logprobs import chat_logprobs, generate_answer
from sglang.srt.server_args import ServerArgs, prepare_server_args

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SERVER_INFO_FIXTURE = FIXTURES / "sglang-0.5.23-server_info-glm-fp8.json"
LIVE_DIR = FIXTURES / "sglang-0.5.17-live"
LIVE_SHAPE = "live-0.5.17"
DSA_SHAPE = "live-0.5.17-dsa"
DSA_DIR = FIXTURES / "sglang-0.5.17-dsa-live"
#: 0.5.17's refusal of TileLang DSA kernels over an FP8 pool on CUDA (``_check_tilelang_dsa_fp8_kv``), verbatim.
TILELANG_FP8_REFUSAL = (
    "ValueError: The tilelang DSA prefill/decode kernels only support an fp8_e4m3 KV cache on ROCm/HIP; on CUDA "
    "they require a bfloat16 KV cache. Use --kv-cache-dtype bfloat16 with the tilelang backend, or keep "
    "--kv-cache-dtype fp8_e4m3 and pick an fp8-capable DSA backend (flashmla_kv on Hopper, trtllm on Blackwell)."
)
#: Bytes per token per layer of SGLang 0.5.17's DSA pools on CUDA: the MLA row by KV dtype, the indexer's row.
DSA_ROW_BYTES = {"bfloat16": 1152, "fp8_e4m3": 656}
DSA_INDEXER_BYTES = 132
#: ``--kv-cache-dtype`` → the torch dtype SGLang allocates the pool in (``auto``: the model's --dtype).
KV_TORCH = {
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
}

_CHILD = """
import os, signal, time
if os.environ.get("FAKE_SGLANG_IGNORE_SIGTERM"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
while True:
    time.sleep(3600)
"""


def _authorized(request: web.Request, args: ServerArgs) -> bool:
    if not args.api_key:
        return True
    return request.headers.get("Authorization", "") == f"Bearer {args.api_key}"


class FakeSglang(ModelServer):
    """/health 503 for ``FAKE_SGLANG_STARTUP_S``, the real /server_info shape, the API key on every route."""

    models_paths = ()  # like the payloads evalpipe's tests were written against: no /v1/models listing

    def __init__(self, args: ServerArgs, argv: list[str]) -> None:
        self.args, self.argv = args, argv
        self.started = time.monotonic()
        self.startup_s = float(os.environ.get("FAKE_SGLANG_STARTUP_S", "0.3"))
        self.counter = 0
        self.dsa = os.environ.get("FAKE_SGLANG_SHAPE") == DSA_SHAPE
        self.live = self.dsa or os.environ.get("FAKE_SGLANG_SHAPE") == LIVE_SHAPE
        if self.dsa:
            shape = DSA_DIR / "server_info-bf16_tilelang.json"
        else:
            shape = LIVE_DIR / "server_info-auto.json" if self.live else SERVER_INFO_FIXTURE
        self.real_shape = json.loads(shape.read_text(encoding="utf-8"))
        if self.live:
            self.models_paths = ("/v1/models",)
            self.served_model_name = args.served_model_name or args.model_path
        if os.environ.get("FAKE_SGLANG_NO_SERVER_INFO"):
            self.server_info_paths = ("/get_server_info",)  # /server_info is 404

    def is_ready(self) -> bool:
        return time.monotonic() - self.started >= self.startup_s

    def authorized(self, request: web.Request) -> bool:
        return _authorized(request, self.args)

    def server_info(self) -> dict:
        resolved = dataclasses.asdict(self.args)
        if os.environ.get("FAKE_SGLANG_RESOLVE_KV"):
            resolved["kv_cache_dtype"] = os.environ["FAKE_SGLANG_RESOLVE_KV"]
        if os.environ.get("FAKE_SGLANG_DETERMINISTIC"):
            resolved["enable_deterministic_inference"] = True
        info = json.loads(json.dumps(self.real_shape))
        for state in [info, *info["internal_states"]]:
            state.update(resolved)
        if self.dsa:
            pool = dsa_pool(self.args)
            info["max_total_num_tokens"] = pool.tokens
            for state in info["internal_states"]:
                state["memory_usage"].update(kvcache=round(pool.gib, 3), token_capacity=pool.tokens)
        if not self.live:  # 0.5.17 reports no launch_command; its version is its own
            info["launch_command"] = " ".join(self.argv)
            info["version"] = __version__
        return info

    async def _models(self, request: web.Request) -> web.StreamResponse:
        """0.5.17's card: the model path as ``root``, ``owned_by`` sglang, ``max_model_len``."""
        card = {"id": self.served_model_name, "object": "model", "created": 0, "owned_by": "sglang",
                "root": self.args.model_path, "parent": None, "max_model_len": 16384 if self.dsa else 8192}  # fmt: skip
        return web.json_response({"object": "list", "data": [card]})

    def model_info(self) -> dict:
        if self.dsa:  # the live DSA server's /get_model_info (model_type glm_moe_dsa), for this launch's model
            live = json.loads((DSA_DIR / "get_model_info.json").read_text(encoding="utf-8"))
            return {**live, "model_path": self.args.model_path, "tokenizer_path": self.args.model_path}
        return {
            "model_path": self.args.model_path,
            "tokenizer_path": self.args.tokenizer_path,
            "is_generation": True,
        }

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self.chat)
        app.router.add_post("/v1/completions", self.chat)
        app.router.add_post("/generate", self.generate)
        app.router.add_post("/flush_cache", self.flush_cache)
        app.router.add_get("/metrics", self.metrics)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        """SGLang's native route with prompt log-probabilities (``sglang.logprobs``: the live 0.5.17 shape)."""
        if not self.authorized(request):
            return web.json_response({"error": "unauthorized"}, status=401)
        body = await request.json()
        self.counter += 1
        rid = body.get("rid") or f"fake-{self.counter}"
        return web.json_response(generate_answer(body, self.args.kv_cache_dtype, rid))

    async def flush_cache(self, request: web.Request) -> web.StreamResponse:
        return web.Response(text="Cache flushed.\n")

    async def metrics(self, request: web.Request) -> web.StreamResponse:
        """The live 0.5.17 server's Prometheus text (``--enable-metrics``)."""
        return web.Response(text=(LIVE_DIR / "metrics-auto.txt").read_text(encoding="utf-8"))

    async def chat(self, request: web.Request) -> web.StreamResponse:
        if not self.authorized(request):
            return web.json_response({"error": "unauthorized"}, status=401)
        body = await request.json()
        self.counter += 1
        rid = body.get("rid") or f"fake-{self.counter}"
        text = _completion_text(body)
        usage = {
            "prompt_tokens": 7,
            "completion_tokens": len(text.split()),
            "total_tokens": 7 + len(text.split()),
        }
        chat_api = request.path.endswith("/chat/completions")
        if body.get("stream"):
            resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
            await resp.prepare(request)
            for word in text.split(" "):
                delta = {"content": word + " "} if chat_api else None
                choice = (
                    {"index": 0, "delta": delta, "finish_reason": None}
                    if chat_api
                    else {
                        "index": 0,
                        "text": word + " ",
                        "finish_reason": None,
                    }
                )
                chunk = {"id": rid, "object": "chat.completion.chunk", "choices": [choice]}
                await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
            final = {"id": rid, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            await resp.write(f"data: {json.dumps(final)}\n\n".encode())
            if (body.get("stream_options") or {}).get("include_usage"):
                await resp.write(
                    f"data: {json.dumps({'id': rid, 'choices': [], 'usage': usage})}\n\n".encode()
                )
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
            return resp
        if chat_api:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            if body.get("logprobs"):
                choice["logprobs"] = chat_logprobs(text, 7, int(body.get("top_logprobs") or 0), self.args.kv_cache_dtype)
        else:
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
        return web.json_response(
            {
                "id": rid,
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [choice],
                "usage": usage,
            }
        )


def _completion_text(body: dict) -> str:
    messages = body.get("messages")
    if isinstance(messages, list) and messages:
        last = messages[-1].get("content", "")
        return f"echo: {last}"
    return f"echo: {body.get('prompt', '')}"


@dataclasses.dataclass(frozen=True)
class DsaPool:
    tokens: int
    gib: float


def _layers(args: ServerArgs) -> int:
    try:
        cfg = json.loads((Path(args.model_path) / "config.json").read_text(encoding="utf-8"))
        return int(cfg.get("num_hidden_layers", 4))
    except (OSError, ValueError):
        return 4


def dsa_pool(args: ServerArgs) -> DsaPool:
    """The pool 0.5.17 allocates: ``max_total_tokens`` (else 131,072) tokens, one page more of slots."""
    tokens = args.max_total_tokens or 131072
    row = DSA_ROW_BYTES[args.kv_cache_dtype] + DSA_INDEXER_BYTES
    return DsaPool(tokens, (tokens + 64) * _layers(args) * row / (1 << 30))


def resolve_dsa(args: ServerArgs) -> None:
    """What 0.5.17 resolves and logs for a DSA model on SM90 before it loads anything (``server_args.py``),
    or its refusal (exit 1)."""
    fp8 = args.kv_cache_dtype == "fp8_e4m3"
    print("Setting page size to 64 for DeepSeek DSA.", flush=True)
    args.page_size = 64
    threshold = os.environ.get("SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD")
    if threshold is not None:
        print(
            f"Dense attention kv len threshold is manually set to {threshold} for DSA. Caution: This may cause "
            "performance regression if the threshold is larger than the index topk of model.",
            flush=True,
        )
    if args.kv_cache_dtype == "auto":
        print("Setting KV cache dtype to bfloat16 for DeepSeek DSA on SM9 device.", flush=True)
        args.kv_cache_dtype = "bfloat16"
    elif args.kv_cache_dtype == "bf16":
        args.kv_cache_dtype = "bfloat16"
    if fp8 and "tilelang" in (args.dsa_prefill_backend, args.dsa_decode_backend):
        print("Traceback (most recent call last):", flush=True)
        print(TILELANG_FP8_REFUSAL, flush=True)
        raise SystemExit(1)
    args.dsa_prefill_backend = args.dsa_prefill_backend or ("flashmla_kv" if fp8 else "flashmla_sparse")
    args.dsa_decode_backend = args.dsa_decode_backend or ("flashmla_kv" if fp8 else "fa3")
    print(
        f"Set DSA backends for {args.kv_cache_dtype} KV Cache: prefill={args.dsa_prefill_backend}, "
        f"decode={args.dsa_decode_backend}.",
        flush=True,
    )


def log_dsa_pool(args: ServerArgs) -> None:
    if args.kv_cache_dtype == "fp8_e4m3":
        print(
            "Using FP8 KV cache but no scaling factors provided. Defaulting to scaling factors of 1.0. "
            "This may lead to less accurate results!",
            flush=True,
        )
    pool = dsa_pool(args)
    dtype = KV_TORCH[args.kv_cache_dtype]
    print(
        f"KV Cache is allocated. dtype: torch.{dtype}, #tokens: {pool.tokens}, KV size: {pool.gib:.2f} GB",
        flush=True,
    )


def log_kv_pool(args: ServerArgs) -> None:
    """SGLang's own lines about the pool (``srt/mem_cache/memory_pool.py``, ``load_model_utils.py``)."""
    if args.kv_cache_dtype == "fp8_e4m3":
        if args.quantization_param_path:
            print(f"Loaded KV cache scaling factors from {args.quantization_param_path}", flush=True)
        else:
            print(
                "Using FP8 KV cache but no scaling factors provided. Defaulting to scaling factors of 1.0. "
                "This may lead to less accurate results!",
                flush=True,
            )
    model_dtype = "float16" if args.dtype in ("half", "float16") else "bfloat16"
    dtype = os.environ.get("FAKE_SGLANG_KV_STORAGE") or KV_TORCH.get(args.kv_cache_dtype, model_dtype)
    tokens = 2165893 if dtype.startswith("float8") else 1082946
    print(
        f"KV Cache is allocated. dtype: torch.{dtype}, #tokens: {tokens}, K size: 11.62 GB, V size: 11.62 GB",
        flush=True,
    )


def main(argv: list[str]) -> int:
    args = prepare_server_args(argv)
    print(f"server_args: kv_cache_dtype={args.kv_cache_dtype} tp_size={args.tp_size}", flush=True)
    if os.environ.get("FAKE_SGLANG_CRASH"):
        for i in range(80):
            print(f"loading shard {i}/80", flush=True)
        print("RuntimeError: fake crash during model load", flush=True)
        return 3
    if os.environ.get("FAKE_SGLANG_SHAPE") == DSA_SHAPE and args.attention_backend in ("dsa", "nsa"):
        resolve_dsa(args)
        log_dsa_pool(args)
    else:
        log_kv_pool(args)
    ignore = bool(os.environ.get("FAKE_SGLANG_IGNORE_SIGTERM"))
    child = subprocess.Popen([sys.executable, "-c", _CHILD])
    print(f"scheduler child pid {child.pid}", flush=True)
    if ignore:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)

    def listening(port: int) -> None:
        print(f"fake sglang {__version__} listening on {args.host}:{port}", flush=True)

    app = FakeSglang(args, argv).build_app()
    try:
        asyncio.run(
            serve_until_signalled(
                app,
                args.host,
                args.port,
                on_listening=listening,
                shutdown=Shutdown(signals=() if ignore else (signal.SIGTERM,)),
                reuse_address=True,
            )
        )
    finally:
        child.terminate()
        child.wait()
    print("graceful shutdown", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
