"""SGLang's DSA backend checks as the version this double claims has them (``srt/arg_groups/overrides.py``):
0.5.11-0.5.16 have no DSA backend check; 0.5.17-0.5.21 have ``_check_tilelang_dsa_fp8_kv`` alone, refusing any TileLang DSA kernel over an
``fp8_e4m3`` cache on CUDA; 0.5.22+ have ``_check_dsa_backend_constraints`` (both kernels TileLang, no
``--dcp-size > 1``, then the GPU's SM, which needs a GPU: like torch without one it raises RuntimeError here).
The messages are SGLang's own, verbatim."""

from __future__ import annotations

from sglang.version import __version__

_V = tuple(int(p) for p in __version__.split(".")[:3])

if _V >= (0, 5, 22):

    def _check_dsa_backend_constraints(
        kv_cache_dtype: str,
        prefill_backend: str | None,
        decode_backend: str | None,
        *,
        hip: bool,
        dcp_size: int = 1,
    ) -> None:
        chosen = {prefill_backend, decode_backend}
        if hip or kv_cache_dtype != "fp8_e4m3" or "tilelang" not in chosen:
            return
        if prefill_backend != "tilelang" or decode_backend != "tilelang":
            raise ValueError(
                "CUDA TileLang FP8 KV requires both DSA backends to be tilelang; "
                "raw and scaled FP8 KV layouts cannot be mixed."
            )
        if dcp_size > 1:
            raise ValueError("CUDA TileLang FP8 KV does not support --dcp-size > 1.")
        raise RuntimeError("No CUDA GPUs are available")

    def _check_tilelang_dsa_fp8_kv(
        kv_cache_dtype: str,
        prefill_backend: str | None,
        decode_backend: str | None,
        *,
        hip: bool,
        dcp_size: int = 1,
    ) -> None:
        _check_dsa_backend_constraints(
            kv_cache_dtype, prefill_backend, decode_backend, hip=hip, dcp_size=dcp_size
        )

elif _V >= (0, 5, 17):

    def _check_tilelang_dsa_fp8_kv(
        kv_cache_dtype: str,
        prefill_backend: str | None,
        decode_backend: str | None,
        *,
        hip: bool,
    ) -> None:
        if not hip and kv_cache_dtype == "fp8_e4m3" and "tilelang" in {prefill_backend, decode_backend}:
            raise ValueError(
                "The tilelang DSA prefill/decode kernels only support an fp8_e4m3 KV "
                "cache on ROCm/HIP; on CUDA they require a bfloat16 KV cache. Use "
                "--kv-cache-dtype bfloat16 with the tilelang backend, or keep "
                "--kv-cache-dtype fp8_e4m3 and pick an fp8-capable DSA backend "
                "(flashmla_kv on Hopper, trtllm on Blackwell)."
            )
