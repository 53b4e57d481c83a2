"""``python -m evalpipe.evalscope_bridge.forkserver SOCKET``: EvalScope workers forked with EvalScope imported.

Started once, it imports what a worker imports before it reads its tasks (``patches.preload``) and what the
benchmarks' scoring imports (``patches.preload_scoring``: Math-Verify, NLTK), then forks
one worker per request (``processes.forkserver``).  A run whose environment names the socket in
``EVALPIPE_WORKER_FORKSERVER`` gets its worker from it (``prestart.launch``) instead of starting an
interpreter that imports EvalScope again: ~2-3 s of CPU less per run, what many short runs on one host (the
test suite, a sweep of small configs) spend most on.  A request it cannot serve is started the usual way,
and the worker's log says which way it came.

The worker is the same code either way (``worker.main``): its streams, channel, working directory and
environment are the request's; its process group and its end (the parent's connection closing kills the
group) are those of a spawned one.  What EvalScope's import read from the environment is read here, once,
from the same settings a spawned worker has (``prestart.worker_env``: offline hubs, no colours, the
allow-listed host variables); the HF ``datasets`` cache, read at import too, is pointed at the request's
private one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

from evalpipe.evalscope_bridge import worker
from evalpipe.evalscope_bridge.patches import SCORING_IMPORT_ENV, preload, preload_scoring
from evalpipe.evalscope_bridge.prestart import worker_env
from evalpipe.processes.forkserver import ForkRequest, serve
from evalpipe.processes.group import spawn

#: The server's own ``HF_DATASETS_CACHE`` (under a file: no directory can be made there).
UNUSABLE_CACHE = "/dev/null/evalpipe-forkserver-has-no-datasets-cache"


def point_datasets_cache(cache_dir: str) -> None:
    """The paths ``datasets.config`` derived from ``HF_DATASETS_CACHE`` when EvalScope's import loaded it (in
    the server), set to the request's cache as a spawned worker's import would have."""
    config: Any = sys.modules["datasets.config"]
    root = Path(cache_dir)
    config.HF_DATASETS_CACHE = root
    config.DOWNLOADED_DATASETS_PATH = root / config.DOWNLOADED_DATASETS_DIR
    config.EXTRACTED_DATASETS_PATH = config.DOWNLOADED_DATASETS_PATH / config.EXTRACTED_DATASETS_DIR


def import_env_mismatch(request: ForkRequest) -> str | None:
    """Why a worker asked for with ``request``'s environment cannot be forked from this server: a variable
    that a library the server imported read at import (``patches.SCORING_IMPORT_ENV``) differs, so the
    worker would not find what a spawned one would (NLTK's data folders); None when none differs.  The
    caller then spawns the worker."""
    differ = [name for name in SCORING_IMPORT_ENV if request.env.get(name) != os.environ.get(name)]
    if differ:
        return f"{', '.join(differ)} differ from the fork server's, which its imports read"
    return None


def _run_worker(request: ForkRequest) -> int:
    """In the forked child: the worker, as ``python -m evalpipe.evalscope_bridge.worker`` runs it."""
    cache = request.env.get("HF_DATASETS_CACHE")
    if cache:
        point_datasets_cache(cache)
    sys.argv = [worker.__file__ or "worker"]
    worker.leave(worker.main())


def start(address: str, *, log: int | IO[bytes] | None = None) -> subprocess.Popen[bytes]:
    """Start ``python -m evalpipe.evalscope_bridge.forkserver ADDRESS`` as the leader of its own process group
    (its stderr to ``log``) and return it once it listens; raises ``RuntimeError`` if it ends first."""
    server = spawn(
        [sys.executable, "-m", "evalpipe.evalscope_bridge.forkserver", address], stdout=subprocess.PIPE, stderr=log
    )
    assert server.stdout is not None
    if server.stdout.readline().strip() != b"ready":  # "ready", or end of file when it failed
        server.wait()
        raise RuntimeError(f"the EvalScope fork server at {address} did not start (exit {server.returncode})")
    return server


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m evalpipe.evalscope_bridge.forkserver SOCKET", file=sys.stderr)
        return 2
    # the environment EvalScope's import reads is a spawned worker's; its datasets cache, replaced per request,
    # is a path nothing can be written under: a worker that kept it would fail, not share a cache
    env = worker_env(UNUSABLE_CACHE)
    os.environ.clear()
    os.environ.update(env)
    preload()  # EvalScope (and HF datasets) read the environment at import: after it is set
    preload_scoring()  # a fork server's workers may run any benchmark: their scoring's imports once, here
    serve(args[0], _run_worker, ready=lambda: print("ready", flush=True), refuse=import_env_mismatch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
