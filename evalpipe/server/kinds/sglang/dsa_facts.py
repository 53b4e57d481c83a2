"""What SGLang's DSA attention path ran with, from the server's own words — which ``/server_info`` alone does
not say.

* **Kernels**: ``/server_info`` reports the resolved ``dsa_prefill_backend``/``dsa_decode_backend``; the log line
  ``Set DSA backends for bfloat16 KV Cache: prefill=tilelang, decode=tilelang.`` is where SGLang itself says so
  (0.5.17, ``arg_groups/overrides.py``; seen live).
* **KV row layout**: nothing in ``/server_info`` names it; the pool's size does.  SGLang 0.5.17's DSA pool holds
  ``max_total_num_tokens + page_size`` slots per layer, each a row of the MLA cache plus the indexer's
  (128 FP8 keys + one FP32 scale = 132 B).  The MLA row is 1,152 B in BF16 (576 values), 656 B in the scaled FP8
  layout every CUDA DSA FP8 kernel but TRT-LLM uses before 0.5.22 (512 FP8 + four FP32 block scales + 64 BF16
  rope), 576 B in the raw FP8 layout (512 + 64 FP8, no scales: TileLang on CUDA from 0.5.22, TileLang on ROCm,
  TRT-LLM).  Read from ``internal_states[].memory_usage.kvcache`` (GiB, 3 decimals), else the log's ``KV size``
  (2 decimals), over the slots and the model's ``num_hidden_layers``.  Seen live (4 layers, 131,136 slots):
  0.627 GiB → 1,152 B, 0.385 GiB → 656 B.
* **Dense-prefill threshold**: on SM90/SM100, 0.5.17 prefills a batch whose longest KV is at most
  ``SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD`` tokens with dense attention (FA3), not the named DSA kernel;
  unset, SGLang sets it to the model's ``index_topk`` and logs ``Set dense attention kv len threshold to model
  index_topk=2048 ...``; set, it logs ``Dense attention kv len threshold is manually set to 0 for DSA. ...``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalpipe.artifacts.schema.server import (
    KvRowLayout,
    SparseAttentionFacts,
    ThresholdSource,
    VerifiedValue,
)
from evalpipe.server.kinds.sglang.launch_log import read_log_tail

THRESHOLD_ENV = "SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD"
#: The indexer cache's row per token per layer: 128 FP8 key values and one FP32 scale.
INDEXER_BYTES = 132
#: The MLA row per token per layer of each layout.
ROW_BYTES: dict[KvRowLayout, int] = {"raw": 576, "scaled": 656, "bf16": 1152}
#: How far a computed row may sit from a known one and still be named by it (the sizes are rounded).
ROW_TOLERANCE = 16.0

_BACKENDS = re.compile(
    r"Set DSA backends for (?P<kv>\w+) KV Cache: prefill=(?P<prefill>\w+), decode=(?P<decode>\w+)\."
)
_PAGE = re.compile(r"Setting page size to (?P<n>\d+) for DeepSeek DSA")
_KV_SIZE = re.compile(
    r"KV Cache is allocated\. dtype: torch\.\w+, #tokens: (?P<tokens>\d+), KV size: (?P<gb>[\d.]+) GB"
)
_THRESHOLD_SET = re.compile(r"Dense attention kv len threshold is manually set to (?P<n>-?\d+) for DSA")
_THRESHOLD_DEFAULT = re.compile(r"Set dense attention kv len threshold to model index_topk=(?P<n>\d+)")


def is_dsa(info: Mapping[str, Any]) -> bool:
    return info.get("attention_backend") in ("dsa", "nsa")


def model_config(model_path: str | None) -> dict[str, Any]:
    """The served model's ``config.json`` when it is a local directory; {} otherwise."""
    if not model_path:
        return {}
    path = Path(model_path) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def row_layout(bytes_per_token_layer: float) -> KvRowLayout | None:
    """The layout whose MLA row the computed bytes match within :data:`ROW_TOLERANCE`; None when none does."""
    for layout, size in ROW_BYTES.items():
        if abs(bytes_per_token_layer - size) <= ROW_TOLERANCE:
            return layout
    return None


def _pool_gib(info: Mapping[str, Any], log: str) -> tuple[float, str] | None:
    """The pool's size in GiB and where it was read."""
    for state in info.get("internal_states") or []:
        usage = state.get("memory_usage") if isinstance(state, Mapping) else None
        value = usage.get("kvcache") if isinstance(usage, Mapping) else None
        if isinstance(value, (int, float)) and value > 0:
            return float(value), f"memory_usage.kvcache {value} GiB"
    sizes = list(_KV_SIZE.finditer(log))
    if sizes:
        return float(sizes[-1].group("gb")), f"the log's KV size {sizes[-1].group('gb')} GB"
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def dsa_facts(
    info: Mapping[str, Any],
    log_path: Path | None,
    model_path: str | None,
    server_env: Mapping[str, str] | None,
) -> SparseAttentionFacts | None:
    """A DSA server's kernels, KV row, page size and dense-prefill threshold; None for another attention
    backend.  Each fact is None where the server did not state it; ``server_env``: the environment a launched
    server got (None for an attached one, whose threshold is then neither read nor assumed)."""
    if not is_dsa(info):
        return None
    log = read_log_tail(log_path) if log_path is not None and log_path.is_file() else ""
    launch = log.rsplit("=== evalpipe: launching at", 1)[-1]
    cfg = model_config(model_path)
    backends = list(_BACKENDS.finditer(launch))
    page = _int(info.get("page_size"))
    if page is None and (m := _PAGE.search(launch)) is not None:
        page = int(m.group("n"))
    layers = _int(cfg.get("num_hidden_layers"))
    capacity = _int(info.get("max_total_num_tokens"))
    if capacity is None and (sizes := list(_KV_SIZE.finditer(launch))):
        capacity = int(sizes[-1].group("tokens"))
    row = layout = evidence = None
    pool = _pool_gib(info, launch)
    if pool is not None and layers and capacity is not None and page is not None:
        slots = capacity + page
        row = round(pool[0] * (1 << 30) / (slots * layers) - INDEXER_BYTES, 1)
        layout = row_layout(row)
        evidence = f"{pool[1]} over {slots:,} slots × {layers} layers − {INDEXER_BYTES} B indexer"
    topk = _int(cfg.get("index_topk"))
    threshold: int | None = None
    source: ThresholdSource | None = None
    if (m := _THRESHOLD_SET.search(launch)) is not None:
        threshold, source = int(m.group("n")), "server log"
    elif (m := _THRESHOLD_DEFAULT.search(launch)) is not None:
        threshold, source = int(m.group("n")), "server log"
    elif server_env is None:
        pass  # an attached server: its environment is not ours to read
    elif (env := server_env.get(THRESHOLD_ENV)) is not None and re.fullmatch(r"-?\d+", env.strip()):
        threshold, source = int(env), "server env"
    elif topk is not None:
        threshold, source = topk, "engine default (index_topk)"
    last = backends[-1] if backends else None
    return SparseAttentionFacts(
        prefill_kernel=last.group("prefill") if last else None,
        decode_kernel=last.group("decode") if last else None,
        kernels_evidence=last.group(0) if last else None,
        page_size=page,
        kv_layout=layout,
        kv_bytes_per_token_layer=row,
        indexer_bytes_per_token_layer=INDEXER_BYTES if row is not None else None,
        kv_bytes_evidence=evidence,
        dense_prefill_threshold=threshold,
        dense_prefill_threshold_source=source,
        index_topk=topk,
    )


def expected_layout(kv_cache_dtype: str, prefill: str | None, decode: str | None) -> KvRowLayout | None:
    """The row a configuration asks for: raw FP8 for ``fp8_e4m3`` with both kernels TileLang (the release
    configuration), BF16 for a BF16 cache; None where the configuration leaves it to SGLang."""
    if kv_cache_dtype == "fp8_e4m3" and prefill == decode == "tilelang":
        return "raw"
    if kv_cache_dtype in ("bfloat16", "bf16"):
        return "bf16"
    return None


def dsa_checks(
    facts: SparseAttentionFacts | None,
    kv_cache_dtype: str,
    prefill: str | None,
    decode: str | None,
) -> list[VerifiedValue]:
    """The kernels the log names against the kernels the config names, and the KV row the pool's size shows
    against the layout the config asks for — each where the server stated it (an attached server's log, a
    remote model's layer count: not stated, not checked; ``/server_info``'s own kernel keys are checked
    regardless)."""
    if facts is None:
        return []
    out: list[VerifiedValue] = []
    for key, want, got in (
        ("dsa_prefill_kernel (server log)", prefill, facts.prefill_kernel),
        ("dsa_decode_kernel (server log)", decode, facts.decode_kernel),
    ):
        if want is not None and got is not None:
            out.append(VerifiedValue(key=key, expected=want, resolved=got, ok=got == want))
    layout = expected_layout(kv_cache_dtype, prefill, decode)
    if layout is not None and facts.kv_bytes_per_token_layer is not None:
        out.append(
            VerifiedValue(
                key="kv_row_layout",
                expected=f"{layout} ({ROW_BYTES[layout]} B)",
                resolved=(
                    f"{facts.kv_layout} ({ROW_BYTES[facts.kv_layout]} B)"
                    if facts.kv_layout is not None
                    else f"unknown ({facts.kv_bytes_per_token_layer:g} B)"
                ),
                ok=facts.kv_layout == layout,
            )
        )
    return out


def layout_words(kv_cache_dtype: str | None, facts: SparseAttentionFacts | None) -> str:
    """``fp8_e4m3 scaled FP8 (656 B)``, ``fp8_e4m3 raw (576 B)``, ``bfloat16 (1,152 B)``; without a stated row,
    the dtype alone and, for FP8, that its layout was not stated."""
    kv = kv_cache_dtype or "?"
    layout = facts.kv_layout if facts is not None else None
    if layout == "scaled":
        return f"{kv} scaled FP8 ({ROW_BYTES['scaled']} B)"
    if layout == "raw":
        return f"{kv} raw ({ROW_BYTES['raw']} B)"
    if layout == "bf16":
        return f"{kv} ({ROW_BYTES['bf16']:,} B)"
    if kv.startswith("fp8") and facts is not None:
        return f"{kv} (row layout not stated)"
    return kv


def prefill_words(facts: SparseAttentionFacts | None) -> str:
    """``; page size 64; dense prefill up to KV length 0 (server log)``."""
    if facts is None:
        return ""
    out = f"; page size {facts.page_size}" if facts.page_size is not None else ""
    if facts.dense_prefill_threshold is not None:
        out += (
            f"; dense prefill up to KV length {facts.dense_prefill_threshold:,} "
            f"({facts.dense_prefill_threshold_source})"
        )
    return out
