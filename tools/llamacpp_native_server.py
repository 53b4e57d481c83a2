"""llama.cpp's own HTTP server (xllamacpp), with none of evalpipe's front in the path.

    python tools/llamacpp_native_server.py --port N [the launcher's flags: --kv-cache-dtype q4_0 --threads 1 …]

Takes exactly ``python -m evalpipe.engines.llamacpp``'s flags and builds llama.cpp's parameters with the
launcher's own ``common_params``, but serves llama.cpp's native server on ``--port`` directly (``/health``,
``/props``, ``/tokenize``, ``/v1/completions``…; no ``/server_info``).  ``tools/measure_speed_kv.py`` uses it
to keep evalpipe's front out of the measured path.  (It was written while the launcher's front dropped an
occasional request — llama.cpp closes the connection after every streamed response and the front reused its
pooled keep-alive connection, ``ServerDisconnectedError`` → HTTP 500; the front now opens one connection per
request, ``force_close``, and the speed tests run through the launcher.)
Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from evalpipe.engines.llamacpp import UsageError, common_params, parse_args, settings_from
from evalpipe.processes.ports import free_port


def spawn_native(
    args: list[str], log_path: Path, timeout: float = 180.0
) -> tuple[subprocess.Popen[bytes], str]:
    """Start this script in its own session on a free port; wait for llama.cpp's ``/health`` to say 200."""
    port = free_port()
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, __file__, *args, "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama.cpp native server exited with {proc.returncode}; see {log_path}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(base + "/health", timeout=2) as response:
                if response.status == 200:
                    return proc, base
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"llama.cpp native server not ready within {timeout:g} s; see {log_path}")


def main(argv: list[str]) -> int:
    try:
        settings = settings_from(parse_args(argv), [sys.executable, __file__, *argv])
    except UsageError as exc:
        print(f"llamacpp_native_server: {exc}", file=sys.stderr)
        return 2
    import xllamacpp as xl

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server = xl.Server(common_params(settings, settings.port))
    print(f"llamacpp_native_server: serving on {settings.host}:{settings.port}", file=sys.stderr, flush=True)
    stop.wait()
    del server  # the native destructor stops llama.cpp's loop
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
