"""The raw-FP8 TileLang policy: what TileLang DSA kernels over an ``fp8_e4m3`` KV cache need, and which SGLang
can serve them.

The sign-off this project was built for runs SGLang's raw-FP8 KV path: ``--kv-cache-dtype fp8_e4m3`` with
``--dsa-prefill-backend``/``--dsa-decode-backend tilelang``.  Which SGLang can serve it at all is a matter of
version (``evalpipe.server.kinds.sglang.versions``): 0.5.17–0.5.21 refuse it on CUDA while resolving their
arguments, 0.5.11–0.5.16 accept it with no raw row to store it in, 0.5.22–0.5.23 serve it.  The installed
SGLang's own check (``_check_dsa_backend_constraints`` / ``_check_tilelang_dsa_fp8_kv``) is called on the
config's kernels before any launch, so the refusal is SGLang's own sentence; evalpipe's own rules say which
SGLang releases enforce them too:

* both DSA backends TileLang (raw and scaled layouts cannot be mixed) — enforced by SGLang 0.5.22–0.5.23;
* no decode context parallelism (``--dcp-size > 1``) — enforced by SGLang 0.5.22–0.5.23;
* no HiSparse — enforced by SGLang 0.5.22–0.5.23;
* every visible GPU of compute capability >= 8.9 — enforced by SGLang 0.5.22–0.5.23 at launch (on the GPU);
* no attention context parallelism (``--attn-cp-size > 1``) — the seed PR's rule: no SGLang release checks it;
* no deterministic inference with the DSA backend — SGLang refuses it too (0.5.17, seen live).

Applied by the ``sglang`` server kind's preflight; each rule names the flag to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.server import PreflightCheck
from evalpipe.server import gpus as gpu_mod
from evalpipe.server.kinds.sglang import versions
from evalpipe.server.kinds.sglang.env import DsaCheck, SglangProbe, probe_sglang, sglang_dsa_check
from evalpipe.server.kinds.sglang.settings import SglangSettings, sglang_settings
from evalpipe.server.preflight_rules import fail, ok, skip, warn

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig

RAW_FP8 = "fp8_e4m3"
MIN_RAW_FP8_CC = (8, 9)
#: Where a rule of this module is also SGLang's own.
SGLANG_ENFORCES = f"SGLang {versions.span(versions.RAW_ROW)} enforce it too"


def is_raw_fp8_tilelang(server: ServerConfig) -> bool:
    """Raw (unscaled) FP8 KV with a TileLang DSA kernel on at least one side."""
    st = sglang_settings(server)
    return server.kv_cache_dtype == RAW_FP8 and "tilelang" in (
        st.dsa_prefill_backend,
        st.dsa_decode_backend,
    )


def _flags(server: ServerConfig, st: SglangSettings) -> str:
    out = f"--attention-backend {st.attention_backend or 'dsa'}"
    if st.dsa_prefill_backend:
        out += f" --dsa-prefill-backend {st.dsa_prefill_backend}"
    if st.dsa_decode_backend:
        out += f" --dsa-decode-backend {st.dsa_decode_backend}"
    return out + f" --kv-cache-dtype {server.kv_cache_dtype}"


def check_sglang_serves_it(
    server: ServerConfig, env: Mapping[str, str], probe: SglangProbe, hip: bool
) -> list[PreflightCheck]:
    """Whether the installed SGLang can serve TileLang over an FP8 cache: its own check's refusal (called,
    never copied), else what the release table says of its version."""
    st = sglang_settings(server)
    version = probe.version or "?"
    flags = _flags(server, st)
    can = f"SGLang {versions.span(versions.RAW_ROW)} serve it (the raw 576-byte row)"
    if hip:
        return [
            ok(
                "sglang_serves_tilelang_fp8",
                f"{flags} on ROCm/HIP: TileLang's FP8 path is SGLang's ROCm path",
            )
        ]
    own = (
        sglang_dsa_check(
            env,
            server.kv_cache_dtype,
            st.dsa_prefill_backend,
            st.dsa_decode_backend,
            hip=False,
            dcp_size=st.dcp_size or 1,
        )
        if probe.importable
        else None
    )
    if own is not None and own.refused:
        return [
            fail(
                "sglang_serves_tilelang_fp8",
                f'SGLang {version} refuses {flags} on CUDA: "{own.refused}" (its own {own.function}); {can}',
                "--kv-cache-dtype",
            )
        ]
    return _by_release(probe.version, flags, own, can)


def _by_release(release: str | None, flags: str, own: DsaCheck | None, can: str) -> list[PreflightCheck]:
    """The answer of the release table where SGLang's own check did not refuse (or could not be called)."""
    answer = versions.tilelang_fp8_on_cuda(release)
    version = release or "?"
    if answer == "refused":
        return [
            fail(
                "sglang_serves_tilelang_fp8",
                f"SGLang {version} refuses {flags} on CUDA while resolving its arguments: "
                f'"{versions.REFUSAL_0517}" (SGLang 0.5.17\'s sentence; its own check could not be called here'
                f"{': ' + own.error if own is not None and own.error else ''}); {can}",
                "--kv-cache-dtype",
            )
        ]
    if answer == "no_check_no_raw":
        return [
            fail(
                "sglang_serves_tilelang_fp8",
                f"SGLang {version} accepts {flags} without a check but has no raw FP8 row on CUDA (its TileLang "
                f"kernel is BF16-only): the raw layout would not run; {can}",
                "--kv-cache-dtype",
            )
        ]
    if answer == "raw_row":
        how = (
            f"its own {own.function} accepts the kernels"
            if own is not None and own.function
            else "by its release"
        )
        note = (
            f" ({own.error}: the GPU rules below cover what it could not check here)"
            if own and own.error
            else ""
        )
        return [
            ok(
                "sglang_serves_tilelang_fp8",
                f"SGLang {version} serves {flags} with the raw 576-byte row: {how}{note}",
            )
        ]
    return [
        warn(
            "sglang_serves_tilelang_fp8",
            f"SGLang {version} is not among the releases checked ({versions.span(versions.KNOWN)}): whether it "
            f"serves {flags} with a raw FP8 row on CUDA is not known; {can}",
            "--kv-cache-dtype",
        )
    ]


def check_raw_fp8_rules(
    server: ServerConfig, env: Mapping[str, str], probe: SglangProbe | None = None
) -> list[PreflightCheck]:
    """The raw-FP8 TileLang constraints (each saying which SGLang releases enforce it themselves), whether the
    installed SGLang serves the configuration at all (``probe``: the installed SGLang, probed here when not
    given), and the deterministic-inference rule that goes with the DSA backend."""
    out: list[PreflightCheck] = []
    st = sglang_settings(server)
    prefill, decode = st.dsa_prefill_backend, st.dsa_decode_backend
    dsa = st.attention_backend in ("dsa", "nsa")

    if st.enable_deterministic_inference and dsa:
        out.append(
            fail(
                "deterministic_dsa",
                "--enable-deterministic-inference is not supported with --attention-backend dsa "
                "(no batch-invariant DSA kernels; SGLang refuses it too): drop it (the request seed is then not "
                "effective, and the report says so)",
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
                f"cannot be mixed; {SGLANG_ENFORCES})",
                other_flag,
            )
        )
    if st.dcp_size is not None and st.dcp_size > 1:
        out.append(
            fail(
                "raw_fp8_dcp",
                f"--dcp-size {st.dcp_size}: decode context parallelism is not supported with the raw "
                f"fp8_e4m3 TileLang KV layout (use --dcp-size 1; {SGLANG_ENFORCES})",
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
                "the raw fp8_e4m3 TileLang KV layout (the seed PR's rule: no SGLang release checks it)",
                "--attn-cp-size",
            )
        )
    else:
        out.append(
            ok("raw_fp8_attn_cp", "no attention context parallelism (the seed PR's rule)", "--attn-cp-size")
        )
    if st.enable_hisparse:
        out.append(
            fail(
                "raw_fp8_hisparse",
                "--enable-hisparse: HiSparse is not supported with the raw fp8_e4m3 TileLang KV layout "
                f"({SGLANG_ENFORCES})",
                "--enable-hisparse",
            )
        )
    else:
        out.append(ok("raw_fp8_hisparse", "HiSparse off", "--enable-hisparse"))

    hip = gpu_mod.rocm_present(env) and gpu_mod.nvidia_smi_path(env) is None
    out += check_sglang_serves_it(server, env, probe or probe_sglang(env, packages=("sglang",)), hip)

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
                f"--kv-cache-dtype fp8_e4m3 with TileLang DSA kernels needs compute capability >= 8.9 "
                f"({SGLANG_ENFORCES}, at launch); {names}",
                "--kv-cache-dtype",
            )
        )
    else:
        out.append(ok("raw_fp8_compute_capability", "all visible GPUs have compute capability >= 8.9"))
    return out
