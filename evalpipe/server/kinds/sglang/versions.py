"""Which SGLang release can serve which DSA configuration — read from each release's source
(``sglang-0.5.*``: ``srt/arg_groups/overrides.py``, ``kv_cache_configurator.calculate_mla_kv_cache_dim``) and
seen live for 0.5.17 on an H100.

TileLang DSA prefill/decode kernels over an ``fp8_e4m3`` KV cache on CUDA:

* 0.5.11 – 0.5.16 accept it without any check, but have no raw FP8 row on CUDA (TileLang's CUDA kernel is
  BF16-only; the FP8 DSA rows there are the scaled 656-byte row);
* 0.5.17 – 0.5.21 refuse it while resolving their arguments (``_check_tilelang_dsa_fp8_kv``);
* 0.5.22 – 0.5.23 serve it with the raw 576-byte row (512 + 64 FP8, no scales), only with both kernels
  TileLang, no ``--dcp-size > 1``, no HiSparse, SM 8.9 or newer (``_check_dsa_backend_constraints``).

SGLang pins torch exactly: 0.5.11 – 0.5.17 torch 2.11.0, 0.5.18 – 0.5.21 2.13.0, 0.5.22 – 0.5.23 2.14.1.
"""

from __future__ import annotations

from typing import Literal

from evalpipe.server.kinds.sglang.flags import parse_version

Version = tuple[int, ...]

#: The releases this table was read from.
KNOWN: tuple[Version, Version] = ((0, 5, 11), (0, 5, 23))
#: TileLang over an fp8_e4m3 cache on CUDA, per range of releases.
NO_CHECK_NO_RAW: tuple[Version, Version] = ((0, 5, 11), (0, 5, 16))
REFUSED_ON_CUDA: tuple[Version, Version] = ((0, 5, 17), (0, 5, 21))
RAW_ROW: tuple[Version, Version] = ((0, 5, 22), (0, 5, 23))
#: 0.5.17's refusal, verbatim as the live 0.5.17 server printed it (quoted where SGLang's own check cannot be
#: called: SGLang not importable with the server's environment).
REFUSAL_0517 = (
    "The tilelang DSA prefill/decode kernels only support an fp8_e4m3 KV cache on ROCm/HIP; on CUDA they "
    "require a bfloat16 KV cache. Use --kv-cache-dtype bfloat16 with the tilelang backend, or keep "
    "--kv-cache-dtype fp8_e4m3 and pick an fp8-capable DSA backend (flashmla_kv on Hopper, trtllm on "
    "Blackwell)."
)

TileLangFp8 = Literal["no_check_no_raw", "refused", "raw_row", "unknown"]


def span(r: tuple[Version, Version]) -> str:
    return f"{'.'.join(map(str, r[0]))}–{'.'.join(map(str, r[1]))}"


def tilelang_fp8_on_cuda(version: str | None) -> TileLangFp8:
    """What the installed release does with TileLang DSA kernels over an fp8_e4m3 cache on CUDA."""
    v = parse_version(version)
    if v is None:
        return "unknown"
    v = v[:3]
    table: tuple[tuple[tuple[Version, Version], TileLangFp8], ...] = (
        (NO_CHECK_NO_RAW, "no_check_no_raw"),
        (REFUSED_ON_CUDA, "refused"),
        (RAW_ROW, "raw_row"),
    )
    for r, answer in table:
        if r[0] <= v <= r[1]:
            return answer
    return "unknown"
