"""SGLang's own preflight rules: the installed SGLang's argument parser accepts the argv
(``dry_parse``), the configured reasoning and tool-call parsers are names it knows, and the GPUs its tensor
and data parallel sizes need are visible."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.server import gpus as gpu_mod
from evalpipe.server.chat_template import NO_REASONING_PARSER
from evalpipe.server.kinds.sglang import flags
from evalpipe.server.kinds.sglang.env import SglangProbe, dry_parse
from evalpipe.server.kinds.sglang.settings import sglang_settings
from evalpipe.server.launch_env import API_KEY_PLACEHOLDER_PREFIX
from evalpipe.server.preflight_rules import fail, ok, skip, warn

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import PreflightCheck
    from evalpipe.config.models import RunConfig, ServerConfig


def check_dry_parse(
    importable: bool, probe_error: str | None, argv: list[str], env: Mapping[str, str]
) -> list[PreflightCheck]:
    if not importable:
        why = f" ({probe_error})" if probe_error else ""
        return [
            fail(
                "sglang_installed",
                f"sglang is not importable with the server environment{why}: "
                f"`python -m {flags.SGLANG_MODULE}` would fail; install SGLang or use kind: endpoint",
            )
        ]
    tail = argv[3:]  # after [python, -m, sglang.launch_server]
    tail = ["EVALPIPE-REDACTED" if a.startswith(API_KEY_PLACEHOLDER_PREFIX) else a for a in tail]
    result = dry_parse(tail, env)
    if not result.importable:
        return [fail("sglang_installed", f"sglang.srt.server_args cannot be imported: {result.error}")]
    if result.ok:
        return [ok("dry_parse", "argv accepted by the installed SGLang's ServerArgs parser")]
    if result.inconclusive:
        return [warn("dry_parse", f"could not dry-parse the argv: {result.error}")]
    return [fail("dry_parse", f"SGLang rejects the argv: {result.error}", _flag_in(result.error))]


def check_parser_names(cfg: RunConfig, probe: SglangProbe) -> list[PreflightCheck]:
    """``model.reasoning_parser`` / ``model.tool_call_parser`` are names the installed SGLang knows.

    The lists are read from the installed SGLang (never copied here); ``auto`` is SGLang's own extra choice.
    """
    out: list[PreflightCheck] = []
    version = probe.version or "?"
    for field, flag, value, known in (
        ("model.reasoning_parser", "--reasoning-parser", cfg.model.reasoning_parser, probe.reasoning_parsers),
        ("model.tool_call_parser", "--tool-call-parser", cfg.model.tool_call_parser, probe.tool_call_parsers),
    ):
        if value is None or (field == "model.reasoning_parser" and value == NO_REASONING_PARSER):
            continue
        rule = field.split(".", 1)[1]
        if not probe.importable:
            out.append(skip(rule, f"{field} {value!r} not checked: sglang is not importable", flag))
        elif known is None:
            out.append(
                skip(rule, f"{field} {value!r} not checked: SGLang {version} has no parser name list", flag)
            )
        elif value == "auto" or value in known:
            out.append(ok(rule, f"{field} {value!r} is a {flag} choice of SGLang {version}", flag))
        else:
            out.append(
                fail(
                    rule,
                    f"{field}: {value!r} is not a {flag} choice of the installed SGLang {version} "
                    f"(known: {', '.join(known)})",
                    flag,
                )
            )
    return out


def _flag_in(message: str | None) -> str | None:
    if not message:
        return None
    for word in message.replace("/", " ").replace(":", " ").split():
        if word.startswith("--"):
            return word.strip("'\",")
    return None


def gpus_needed(server: ServerConfig) -> int:
    """GPUs this node needs: tp (× dp without DP attention) spread over the nodes."""
    st = sglang_settings(server)
    per_replica = st.tp_size
    if st.dp_size and st.dp_size > 1 and "--enable-dp-attention" not in server.extra_args:
        per_replica *= st.dp_size
    return max(1, math.ceil(per_replica / st.multi_node.nnodes))


def check_gpus(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    """Enough GPUs visible on this node for the tensor (and data) parallel size over the nodes."""
    st = sglang_settings(server)
    tp_size, nnodes = st.tp_size, st.multi_node.nnodes
    out = []
    if tp_size % nnodes:
        out.append(
            fail(
                "gpu_count", f"--tp-size {tp_size} is not divisible by --nnodes {nnodes}", "--tp-size"
            )
        )
    need = gpus_needed(server)
    all_gpus = gpu_mod.query_gpus(env)
    if all_gpus is None:
        out.append(
            fail(
                "gpu_count",
                f"--tp-size {tp_size}: needs {need} GPU(s) on this node but nvidia-smi is not available",
                "--tp-size",
            )
        )
        return out
    visible = gpu_mod.visible_gpus(all_gpus, env)
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    where = f" (CUDA_VISIBLE_DEVICES={cvd})" if cvd is not None else ""
    if len(visible) < need:
        out.append(
            fail(
                "gpu_count",
                f"--tp-size {tp_size} over --nnodes {nnodes} needs {need} GPU(s) on this node, "
                f"{len(visible)} visible{where}",
                "--tp-size",
            )
        )
    else:
        out.append(
            ok("gpu_count", f"{need} GPU(s) needed on this node, {len(visible)} visible{where}", "--tp-size")
        )
    return out
