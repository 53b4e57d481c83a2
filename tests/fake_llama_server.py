"""A stand-in for llama.cpp's ``llama-server`` binary, for the launcher's ``--llama-server`` tests (no GPU and
no llama.cpp build needed): it takes llama-server's flags, prints the load-log lines the launcher parses —
context size, KV cache types, flash attention, threads, and "offloaded N/N layers to GPU" when
``--n-gpu-layers`` is given — with the values it was given, and only at ``--verbosity 4`` or more, as
llama-server (0c1e570) prints them, then serves ``/health``, ``/props`` and ``/v1/models`` on loopback.
``--version`` prints a version line and exits, as llama-server's does.  Every flag it was started with is
echoed back in ``/props`` (``argv``), so a test can check the command line the launcher built.

    python tests/fake_llama_server.py --model M --port P --cache-type-k q4_0 --cache-type-v q4_0 …
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LAYERS = 30


def main() -> int:
    if "--version" in sys.argv[1:]:
        print("version: 1 (fake000)\nbuilt with a test for none", file=sys.stderr)
        return 0
    p = argparse.ArgumentParser()
    for flag in ("--model", "--host", "--alias", "--cache-type-k", "--cache-type-v"):
        p.add_argument(flag)
    for flag in ("--port", "--ctx-size", "--parallel", "--threads", "--threads-batch", "--n-gpu-layers",
                 "--seed", "--cache-ram", "--verbosity"):  # fmt: skip
        p.add_argument(flag, type=int)
    p.add_argument("--no-cache-prompt", action="store_true")
    ns = p.parse_args()
    log = [
        f"llama_context: n_ctx         = {ns.ctx_size}",
        f"llama_context: n_ctx_seq     = {ns.ctx_size // ns.parallel}",
        f"llama_kv_cache: size =   12.00 MiB (  4096 cells,  30 layers,  2/2 seqs), K ({ns.cache_type_k}):    6.00 MiB, "
        f"V ({ns.cache_type_v}):    6.00 MiB",
        "llama_context: flash_attn            = enabled",
        f"llama threadpool init, n_threads = {ns.threads}",
    ]
    if ns.verbosity is None or ns.verbosity < 4:  # as llama-server: those lines are printed from verbosity 4
        log = []
    if ns.n_gpu_layers is not None and log:
        log.insert(0, f"load_tensors: offloaded {min(ns.n_gpu_layers, LAYERS)}/{LAYERS} layers to GPU")
    props = {"total_slots": ns.parallel, "model_alias": ns.alias, "build_info": "b1-fake000",
             "default_generation_settings": {"n_ctx": ns.ctx_size // ns.parallel}, "argv": sys.argv[1:]}  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            body: object = {"error": "not found"}
            code = 200
            if self.path == "/health":
                body = {"status": "ok"}
            elif self.path == "/props":
                body = props
            elif self.path == "/v1/models":
                body = {"data": [{"id": ns.alias}]}
            else:
                code = 404
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((ns.host, ns.port), Handler)
    for line in log:
        print(line, file=sys.stderr, flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
