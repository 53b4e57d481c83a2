"""Hub loading: one split of a hub dataset, via ModelScope or Hugging Face, and the offline check before it.

Which dataset (the ids EvalScope's adapter declares) is the benchmark's to say: ``evalpipe.samplers.loading``.

Only used when a benchmark has no local mirror; needs network access to the hub (never in tests).
Rows are passed through the same canonicalisation as local files, so hashes and fingerprints agree
with a local mirror of the same content.

Offline hosts: the hub clients retry until their own download deadline (measured: ModelScope's
``MsDataset.load`` 16 s per split on a host without DNS, ~30 s for ``evalpipe plan`` on the shipped config,
~70 s on others), then raise their own error, in ModelScope's case a Chinese message
(``_DownloadDeadlineError: [E1001] 下载总时限已耗尽…``).  So before the first load of a backend, one bounded
check (:func:`hub_unreachable`: the hub's host — or the HTTPS proxy the clients would use — resolved and
connected to within ``HUB_CHECK_TIMEOUT_S``; ``HF_HUB_OFFLINE``/``HF_DATASETS_OFFLINE`` for Hugging Face)
decides whether the hub is tried at all, and every failure becomes one English line naming the benchmark,
the hub id and ``--dataset-root`` (:func:`hub_failure`).
"""

from __future__ import annotations

import functools
import os
import socket
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from evalpipe.config.models import BenchmarkConfig
from evalpipe.errors import DataError
from evalpipe.sources.base import canonical_value

HUB_CHECK_TIMEOUT_S = 5.0
#: Where to get a local copy instead, in every hub failure line.
MIRROR_HINT = (
    "give a local mirror with --dataset-root DIR (one folder per benchmark, the layout of ../shared/datasets) "
    "or benchmarks[].source.local"
)


def hub_address(backend: str, environ: dict[str, str] | None = None) -> tuple[str, int, str]:
    """(host, port, what) the hub client of ``backend`` connects to first: its HTTPS proxy when one is set,
    else the hub's host (``MODELSCOPE_DOMAIN`` / ``HF_ENDPOINT`` when set)."""
    env = dict(os.environ) if environ is None else environ
    proxy = env.get("HTTPS_PROXY") or env.get("https_proxy")
    if proxy:
        parts = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        return parts.hostname or proxy, parts.port or 80, f"HTTPS proxy {parts.hostname}"
    if backend == "huggingface":
        parts = urlsplit(env.get("HF_ENDPOINT") or "https://huggingface.co")
        return parts.hostname or "huggingface.co", parts.port or 443, parts.hostname or "huggingface.co"
    domain = env.get("MODELSCOPE_DOMAIN") or "www.modelscope.cn"
    parts = urlsplit(domain if "://" in domain else "https://" + domain)
    return parts.hostname or domain, parts.port or 443, parts.hostname or domain


def _connect(host: str, port: int, timeout: float, result: list[str]) -> None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        result.append(f"{type(exc).__name__}: {exc.strerror or exc}")


def hub_unreachable(backend: str, timeout: float = HUB_CHECK_TIMEOUT_S) -> str | None:
    """Why the ``backend`` hub cannot be reached from this host (None: it answered a TCP connect)."""
    if backend == "huggingface":
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
            if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
                return f"{name} is set"
    return _unreachable(*hub_address(backend), timeout)


@functools.lru_cache(maxsize=8)
def _unreachable(host: str, port: int, what: str, timeout: float) -> str | None:
    """Bounded: name resolution has no timeout of its own, so the attempt runs in a daemon thread that is
    given ``timeout`` seconds.  Checked once per address and process (``evalpipe plan`` asks per benchmark)."""
    result: list[str] = []
    worker = threading.Thread(target=_connect, args=(host, port, timeout, result), daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return f"{what}:{port} did not answer within {timeout:g} s"
    return f"{what}:{port} unreachable ({result[0]})" if result else None


def hub_failure(bench: BenchmarkConfig, repo: str, why: str) -> DataError:
    """The one line for a benchmark the hub could not give: benchmark, hub id, ``--dataset-root``."""
    return DataError(f"benchmark {bench.name}: cannot load {repo} from the {bench.source.hub_backend} hub "
                     f"({why}); {MIRROR_HINT}")  # fmt: skip


def _why(exc: Exception) -> str:
    """The hub client's error in English: its class, and its message only when that is plain ASCII (the
    clients' own messages can be Chinese, or pages of a traceback)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if text and text.isascii() and len(text) <= 200:
        return f"{type(exc).__name__}: {text}"
    return type(exc).__name__


def load_split(bench: BenchmarkConfig, repo: str, subset: str | None, split: str) -> Iterable[dict[str, Any]]:
    try:
        if bench.source.hub_backend == "huggingface":
            # import cost: datasets, only on this path
            from datasets import load_dataset

            ds = load_dataset(repo, subset, split=split, revision=bench.source.revision)
        else:
            # import cost: modelscope, only on this path
            from modelscope import MsDataset

            ds = MsDataset.load(
                repo, subset_name=subset, split=split, version=bench.source.revision or "master"
            )
    except Exception as exc:  # hub clients raise many types
        where = "/".join(p for p in (subset, split) if p)
        raise hub_failure(bench, repo, f"{where}: {_why(exc)}") from None
    for row in ds:
        yield {k: canonical_value(v) for k, v in dict(row).items()}
