""" "Configuration under test": model, runtime, KV layout and kernels as verified, generation settings."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, C, Heading, Inline, T


def server_packages(summary: Summary) -> str:
    """``sglang 0.5.17, sglang-kernel 0.4.5, tilelang 0.1.11, …`` — the installed packages ``provenance.json``
    read in the server's environment, in its order."""
    prov = summary.provenance
    if prov is None:
        return ""
    return ", ".join(f"{p.name} {p.version}" for p in prov.packages if p.environment == "server" and p.version)


def configuration_section(summary: Summary) -> list[Block]:
    srv = summary.server
    m = summary.model
    if srv.verified:
        verified = "verified from server_info"
    elif srv.resolved_config_available is False:
        verified = "not verifiable: the server has no /server_info"
    else:
        verified = "not verified"
    cfg_items: list[Inline] = [
        [
            T("Model: "),
            C(m.path or "unknown"),
            T(" served as "),
            C(srv.served_model_name or m.served_name or "unknown"),
            T(
                f" ({verified})"
                if srv.served_model_name and srv.resolved_config_available is not False
                else (" (checked from /v1/models)" if srv.served_model_name else " (not verified)")
            ),
        ],
    ]
    if srv.verified is None:
        cfg_items.append(
            [T("Runtime, KV layout and kernels: not verified (no server_info verification record).")]
        )
    else:
        runtime = f"{srv.engine or srv.kind or 'server'} {srv.server_version or '(version unknown)'}"
        par = ", ".join(
            x
            for x in (
                f"TP {srv.tp_size}" if srv.tp_size else "",
                f"EP {srv.ep_size}" if srv.ep_size else "",
                f"speculative {srv.speculative_algorithm}" if srv.speculative_algorithm else "",
            )
            if x
        )
        cfg_items.append([T(f"Runtime: {runtime}{'; ' + par if par else ''} ({verified}).")])
        packages = server_packages(summary)
        if packages:
            cfg_items.append([T(f"Server packages: {packages} (read in the server's environment).")])
        kv = ", ".join(
            x
            for x in (
                f"KV cache {srv.kv_cache_dtype}" if srv.kv_cache_dtype else "",
                f"attention {srv.attention_backend}" if srv.attention_backend else "",
                f"DSA prefill {srv.dsa_prefill_backend}" if srv.dsa_prefill_backend else "",
                f"DSA decode {srv.dsa_decode_backend}" if srv.dsa_decode_backend else "",
            )
            if x
        )
        if kv:
            cfg_items.append([T(f"KV layout and kernels: {kv} ({verified}).")])
    cfg_items.append([T("Server verification: "), T(srv.description)])
    g = summary.generation
    seed_state = {True: "effective", False: "not effective", None: "effectiveness not verified"}[
        g.seed_effective
    ]
    cfg_items.append(
        [
            T(
                f"Generation: temperature {g.temperature}, top_p {g.top_p}, seed {g.seed} ({seed_state}); "
                f"thinking {m.thinking or 'unknown'}."
            )
        ]
    )
    return [Heading(2, "Configuration under test"), Bullets(cfg_items)]
