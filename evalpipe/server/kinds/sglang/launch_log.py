"""What SGLang's own log says about its KV cache, which ``/server_info`` does not.

``/server_info`` reports ``kv_cache_dtype`` as the flag was given (``"auto"``, ``"fp8_e4m3"``) — except on the
DSA path, where it is the dtype SGLang resolved (``"bfloat16"`` for ``auto`` on SM90) — never the torch dtype
the pool was allocated in, and nothing about FP8 scaling factors.  The launched server's log does, in lines
that read the same in SGLang 0.5.17 and 0.5.23 (``srt/mem_cache/memory_pool.py``,
``srt/model_executor/model_runner_components/load_model_utils.py``; seen live with 0.5.17):

* ``KV Cache is allocated. dtype: torch.float8_e4m3fn, #tokens: 2165893, K size: 11.62 GB, V size: 11.62 GB``
  — the storage dtype and the pool's capacity in tokens;
* ``Using FP8 KV cache but no scaling factors provided. Defaulting to scaling factors of 1.0.`` — an
  ``fp8_e4m3`` cache without ``--quantization-param-path``: no per-tensor k/v scales.  Over a pool whose rows
  carry no scales of their own every K/V value is cast to FP8 at 1.0; SGLang prints the same line over the DSA
  path's scaled FP8 row (per-block scales in every row), which ``dsa_facts`` tells apart by the pool's size;
* ``Loaded KV cache scaling factors from PATH`` — scales read from a file.

Only a server evalpipe launched has a log here; an attached one leaves these facts unknown (None).
"""

from __future__ import annotations

import re
from pathlib import Path

from evalpipe.artifacts.schema.server import Fp8ScaleState, KvCacheFacts

_ALLOCATED = re.compile(
    r"(?P<name>[A-Za-z ]*KV Cache) is allocated\. dtype: torch\.(?P<dtype>\w+), #tokens: (?P<tokens>\d+)"
)
_NO_SCALES = re.compile(r"Using FP8 KV cache but no scaling factors provided\.[^\n]*")
_LOADED_SCALES = re.compile(r"Loaded KV cache scaling factors from (?P<path>\S+)")
#: How much of a log is read: the lines come within the first minutes of a launch.
_MAX_BYTES = 8 << 20


def read_log_tail(path: Path) -> str:
    """The last :data:`_MAX_BYTES` of the log (a relaunch appends: the newest launch's lines are last)."""
    with path.open("rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - _MAX_BYTES))
        return fh.read().decode("utf-8", errors="replace")


def kv_cache_facts(log_text: str) -> KvCacheFacts | None:
    """The KV pool's dtype and capacity and the FP8 scale state of the *last* launch in ``log_text``
    (evalpipe marks each launch with ``=== evalpipe: launching at``); None when the log names no KV pool."""
    launch = log_text.rsplit("=== evalpipe: launching at", 1)[-1]
    allocated = list(_ALLOCATED.finditer(launch))
    if not allocated:
        return None
    last = allocated[-1]
    dtype = last.group("dtype")
    scales: Fp8ScaleState | None = None
    evidence: str | None = None
    if (m := _LOADED_SCALES.search(launch)) is not None:
        scales, evidence = "loaded", m.group(0)
    elif (m := _NO_SCALES.search(launch)) is not None:
        scales, evidence = "default_1.0", m.group(0).strip()
    elif dtype.startswith("float8"):
        # an FP8 pool whose log says neither: the checkpoint's own k/v scales (or a version that logs
        # nothing) — not claimed either way
        scales, evidence = "not_logged", None
    return KvCacheFacts(
        storage_dtype=dtype,
        capacity_tokens=int(last.group("tokens")),
        fp8_scales=scales,
        fp8_scales_evidence=evidence,
        source="server log",
    )


def kv_cache_facts_of(log_path: Path | None) -> KvCacheFacts | None:
    if log_path is None or not log_path.is_file():
        return None
    return kv_cache_facts(read_log_tail(log_path))
