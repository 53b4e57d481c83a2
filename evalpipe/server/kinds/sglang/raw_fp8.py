"""The raw-FP8 TileLang policy: what a raw (unscaled) ``fp8_e4m3`` KV cache with TileLang DSA kernels needs.

The sign-off this project was built for runs SGLang's raw-FP8 KV path: ``--kv-cache-dtype fp8_e4m3`` with
``--dsa-prefill-backend``/``--dsa-decode-backend tilelang``.  SGLang does not refuse every combination that
path cannot serve; some it silently "fixes" by picking another kernel, so a run would certify a
configuration that never ran.  The rules:

* both DSA backends TileLang (raw and scaled KV layouts cannot be mixed);
* then no decode context parallelism (``--dcp-size > 1``), no attention context parallelism, no HiSparse,
  and every visible GPU of compute capability >= 8.9;
* no ``fp8_e4m3fnuz`` (the ROCm format) on CUDA; no deterministic inference with the DSA backend.

Applied by the ``sglang`` server kind's preflight; each rule names the flag to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.server import PreflightCheck
from evalpipe.server import gpus as gpu_mod
from evalpipe.server.kinds.sglang.settings import sglang_settings
from evalpipe.server.preflight_rules import fail, ok, skip

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig

RAW_FP8 = "fp8_e4m3"
MIN_RAW_FP8_CC = (8, 9)


def is_raw_fp8_tilelang(server: ServerConfig) -> bool:
    """Raw (unscaled) FP8 KV with a TileLang DSA kernel on at least one side."""
    st = sglang_settings(server)
    return server.kv_cache_dtype == RAW_FP8 and "tilelang" in (
        st.dsa_prefill_backend,
        st.dsa_decode_backend,
    )


def check_raw_fp8_rules(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    """The raw-FP8 TileLang constraints SGLang enforces (or silently works around), plus the FP8-format and
    deterministic-inference rules that go with them."""
    out: list[PreflightCheck] = []
    st = sglang_settings(server)
    kv = server.kv_cache_dtype
    prefill, decode = st.dsa_prefill_backend, st.dsa_decode_backend
    dsa = st.attention_backend in ("dsa", "nsa")

    if kv == "fp8_e4m3fnuz":
        if gpu_mod.rocm_present(env) and gpu_mod.nvidia_smi_path(env) is None:
            out.append(ok("fnuz_on_cuda", "fp8_e4m3fnuz KV on ROCm", "--kv-cache-dtype"))
        else:
            out.append(
                fail(
                    "fnuz_on_cuda",
                    "--kv-cache-dtype fp8_e4m3fnuz is the ROCm FP8 format; on CUDA use fp8_e4m3",
                    "--kv-cache-dtype",
                )
            )

    if st.enable_deterministic_inference and dsa:
        out.append(
            fail(
                "deterministic_dsa",
                "--enable-deterministic-inference is not supported with --attention-backend dsa "
                "(no batch-invariant DSA kernels): drop it (the request seed is then not effective, "
                "and the report says so)",
                "--enable-deterministic-inference",
            )
        )
    elif st.enable_deterministic_inference:
        out.append(ok("deterministic_dsa", "deterministic inference without the DSA backend"))

    if not is_raw_fp8_tilelang(server):
        out.append(skip("raw_fp8_both_tilelang", "not a raw-FP8 TileLang configuration"))
        return out

    if prefill == "tilelang" and decode == "tilelang":
        out.append(
            ok(
                "raw_fp8_both_tilelang",
                "fp8_e4m3 raw KV with TileLang prefill and decode",
                "--dsa-decode-backend",
            )
        )
    else:
        other_flag, other = (
            ("--dsa-decode-backend", decode) if prefill == "tilelang" else ("--dsa-prefill-backend", prefill)
        )
        shown = other if other is not None else "unset (SGLang auto-selects, possibly a scaled-layout kernel)"
        out.append(
            fail(
                "raw_fp8_both_tilelang",
                f"{other_flag} is {shown}: --kv-cache-dtype fp8_e4m3 with a TileLang DSA backend needs both "
                "--dsa-prefill-backend and --dsa-decode-backend tilelang (raw and scaled FP8 KV layouts "
                "cannot be mixed)",
                other_flag,
            )
        )
    if st.dcp_size is not None and st.dcp_size > 1:
        out.append(
            fail(
                "raw_fp8_dcp",
                f"--dcp-size {st.dcp_size}: decode context parallelism is not supported with the raw "
                "fp8_e4m3 TileLang KV layout (use --dcp-size 1)",
                "--dcp-size",
            )
        )
    else:
        out.append(ok("raw_fp8_dcp", "no decode context parallelism", "--dcp-size"))
    if st.attn_cp_size is not None and st.attn_cp_size > 1:
        out.append(
            fail(
                "raw_fp8_attn_cp",
                f"--attn-cp-size {st.attn_cp_size}: attention context parallelism is not supported with "
                "the raw fp8_e4m3 TileLang KV layout",
                "--attn-cp-size",
            )
        )
    else:
        out.append(ok("raw_fp8_attn_cp", "no attention context parallelism", "--attn-cp-size"))
    if st.enable_hisparse:
        out.append(
            fail(
                "raw_fp8_hisparse",
                "--enable-hisparse: HiSparse is not supported with the raw fp8_e4m3 TileLang KV layout",
                "--enable-hisparse",
            )
        )
    else:
        out.append(ok("raw_fp8_hisparse", "HiSparse off", "--enable-hisparse"))

    all_gpus = gpu_mod.query_gpus(env)
    if all_gpus is None:
        out.append(skip("raw_fp8_compute_capability", "nvidia-smi not found: compute capability not checked"))
        return out
    visible = gpu_mod.visible_gpus(all_gpus, env)
    low = [g for g in visible if (gpu_mod.compute_capability(g) or (0, 0)) < MIN_RAW_FP8_CC]
    if low:
        names = ", ".join(f"GPU {g.index} {g.name} (sm {g.compute_capability or '?'})" for g in low)
        out.append(
            fail(
                "raw_fp8_compute_capability",
                f"--kv-cache-dtype fp8_e4m3 with TileLang DSA kernels needs compute capability >= 8.9; {names}",
                "--kv-cache-dtype",
            )
        )
    else:
        out.append(ok("raw_fp8_compute_capability", "all visible GPUs have compute capability >= 8.9"))
    return out
