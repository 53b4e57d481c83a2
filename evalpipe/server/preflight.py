"""Preflight: refuse a launch that would fail or would not test what the config claims.

Runs before any GPU time is spent (a GLM-class model takes many minutes to load).  Every rule returns
a :class:`PreflightCheck`; a ``fail`` aborts with exit 2 and a message naming the flag, a ``warn`` is
shown loudly and recorded.  Rules:

(a) the argv parses with the installed SGLang's own ``ServerArgs`` parser (subprocess, when importable),
    and ``model.reasoning_parser`` / ``model.tool_call_parser`` are in the installed SGLang's parser lists;
(b) raw-FP8 TileLang rules — ``fp8_e4m3`` KV with a TileLang DSA backend needs *both* backends TileLang
    (raw and scaled KV layouts cannot be mixed), and then no ``--dcp-size > 1``, no attention context
    parallelism, no HiSparse, compute capability >= 8.9; no ``fp8_e4m3fnuz`` on CUDA; no deterministic
    inference with the DSA backend;
(c) the model path exists with a readable ``config.json``;
(d) the port is free;
(e) enough visible GPUs on this node;
(f) IFEval selected but NLTK ``punkt_tab`` missing → warning with the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError, PreflightError
from evalpipe.rundir import RunDir
from evalpipe.schema.server import PreflightCheck, PreflightReport
from evalpipe.server import gpus as gpu_mod
from evalpipe.server import sglang_flags as flags
from evalpipe.server.ports import port_in_use
from evalpipe.server.sglang_env import SglangProbe, dry_parse, probe_sglang, server_env

RAW_FP8 = "fp8_e4m3"
MIN_RAW_FP8_CC = (8, 9)


def is_raw_fp8_tilelang(server: ServerConfig) -> bool:
    """Raw (unscaled) FP8 KV with a TileLang DSA kernel on at least one side."""
    return server.kv_cache_dtype == RAW_FP8 and "tilelang" in (
        server.dsa_prefill_backend,
        server.dsa_decode_backend,
    )


def run_preflight(
    cfg: RunConfig,
    server: ServerConfig,
    *,
    punkt_needed: str | None,
    variant: str | None = None,
    env: Mapping[str, str] | None = None,
    rundir: RunDir | None = None,
) -> PreflightReport:
    """Evaluate every rule; raise PreflightError (exit 2) naming the flag if any fails.

    ``env`` is the environment the server would get (default: ours plus ``server.env``).  With
    ``rundir`` the report is also written to ``server/preflight.json`` (also on failure).  The raised
    error carries the report as ``exc.report``.
    """
    from evalpipe.io import write_model
    from evalpipe.redact import redact_argv

    env = dict(env) if env is not None else server_env(server)
    checks: list[PreflightCheck] = []
    sglang_version: str | None = None
    argv: list[str] = []

    checks += _check_api_key(server, env)
    checks += _check_extra_args(server)
    if server.kind == "sglang":
        probe = probe_sglang(env, packages=("sglang",))
        sglang_version = probe.version
        argv = flags.build_argv(cfg, server, sglang_version=sglang_version, resolve_secrets=False)
        checks += check_parser_names(cfg, probe)
        checks += _check_dry_parse(probe.importable, probe.error, argv, env)
        checks += check_raw_fp8_rules(server, env)
        checks += _check_model_path(cfg)
        checks += _check_gpus(server, env)
    elif server.kind == "answer_key":
        argv = flags.build_argv(cfg, server, sglang_version=None, resolve_secrets=False)
    elif server.kind == "command":
        argv = flags.build_argv(cfg, server, sglang_version=None, resolve_secrets=False)
        checks += _check_command(cfg, server, argv)
    if server.kind in ("sglang", "answer_key", "command"):
        checks += _check_port(server)
    checks += _check_punkt(punkt_needed)

    report = PreflightReport(
        kind=server.kind,
        variant=variant,
        sglang_version=sglang_version,
        argv=redact_argv(argv),
        checks=checks,
        ok=not any(c.status == "fail" for c in checks),
    )
    if rundir is not None:
        write_model(rundir.server_preflight, report)
    if not report.ok:
        fails = report.failures
        first = fails[0].message
        more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
        exc = PreflightError(f"preflight: {first}{more}", details=[c.message for c in fails[1:]])
        exc.report = report  # type: ignore[attr-defined]
        raise exc
    return report


def _ok(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="ok", message=message, flag=flag)


def _fail(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="fail", message=message, flag=flag)


def _skip(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="skipped", message=message, flag=flag)


def _warn(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="warn", message=message, flag=flag)


def _check_api_key(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    if not server.api_key_env:
        return []
    if env.get(server.api_key_env):
        return [_ok("api_key", f"API key found in ${server.api_key_env}", "--api-key")]
    return [
        _fail(
            "api_key",
            f"--api-key: server.api_key_env names ${server.api_key_env}, which is not set in the environment",
            "--api-key",
        )
    ]


def _check_extra_args(server: ServerConfig) -> list[PreflightCheck]:
    conflicts = flags.extra_args_conflicts(server)
    if not conflicts:
        return (
            [_ok("extra_args", "extra_args set no flag that the config already controls")]
            if server.extra_args
            else []
        )
    return [
        _fail(
            "extra_args",
            f"{flag} in server.extra_args overrides config field {field}: set {field} instead "
            "(the report and the verification read the config)",
            flag,
        )
        for flag, field in conflicts
    ]


def _check_dry_parse(
    importable: bool, probe_error: str | None, argv: list[str], env: Mapping[str, str]
) -> list[PreflightCheck]:
    if not importable:
        why = f" ({probe_error})" if probe_error else ""
        return [
            _fail(
                "sglang_installed",
                f"sglang is not importable with the server environment{why}: "
                f"`python -m {flags.SGLANG_MODULE}` would fail; install SGLang or use kind: endpoint",
            )
        ]
    tail = argv[3:]  # after [python, -m, sglang.launch_server]
    tail = ["EVALPIPE-REDACTED" if a.startswith(flags.API_KEY_PLACEHOLDER_PREFIX) else a for a in tail]
    result = dry_parse(tail, env)
    if not result.importable:
        return [_fail("sglang_installed", f"sglang.srt.server_args cannot be imported: {result.error}")]
    if result.ok:
        return [_ok("dry_parse", "argv accepted by the installed SGLang's ServerArgs parser")]
    if result.inconclusive:
        return [_warn("dry_parse", f"could not dry-parse the argv: {result.error}")]
    return [_fail("dry_parse", f"SGLang rejects the argv: {result.error}", _flag_in(result.error))]


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
        if value is None or (field == "model.reasoning_parser" and value == flags.NO_REASONING_PARSER):
            continue
        rule = field.split(".", 1)[1]
        if not probe.importable:
            out.append(_skip(rule, f"{field} {value!r} not checked: sglang is not importable", flag))
        elif known is None:
            out.append(
                _skip(rule, f"{field} {value!r} not checked: SGLang {version} has no parser name list", flag)
            )
        elif value == "auto" or value in known:
            out.append(_ok(rule, f"{field} {value!r} is a {flag} choice of SGLang {version}", flag))
        else:
            out.append(
                _fail(
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


def check_raw_fp8_rules(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    """Rule (b): the raw-FP8 TileLang constraints SGLang enforces (or silently works around)."""
    out: list[PreflightCheck] = []
    kv = server.kv_cache_dtype
    prefill, decode = server.dsa_prefill_backend, server.dsa_decode_backend
    dsa = server.attention_backend in ("dsa", "nsa")

    if kv == "fp8_e4m3fnuz":
        if gpu_mod.rocm_present(env) and gpu_mod.nvidia_smi_path(env) is None:
            out.append(_ok("fnuz_on_cuda", "fp8_e4m3fnuz KV on ROCm", "--kv-cache-dtype"))
        else:
            out.append(
                _fail(
                    "fnuz_on_cuda",
                    "--kv-cache-dtype fp8_e4m3fnuz is the ROCm FP8 format; on CUDA use fp8_e4m3",
                    "--kv-cache-dtype",
                )
            )

    if server.enable_deterministic_inference and dsa:
        out.append(
            _fail(
                "deterministic_dsa",
                "--enable-deterministic-inference is not supported with --attention-backend dsa "
                "(no batch-invariant DSA kernels): drop it (the request seed is then not effective, "
                "and the report says so)",
                "--enable-deterministic-inference",
            )
        )
    elif server.enable_deterministic_inference:
        out.append(_ok("deterministic_dsa", "deterministic inference without the DSA backend"))

    if not is_raw_fp8_tilelang(server):
        out.append(_skip("raw_fp8_both_tilelang", "not a raw-FP8 TileLang configuration"))
        return out

    if prefill == "tilelang" and decode == "tilelang":
        out.append(
            _ok(
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
            _fail(
                "raw_fp8_both_tilelang",
                f"{other_flag} is {shown}: --kv-cache-dtype fp8_e4m3 with a TileLang DSA backend needs both "
                "--dsa-prefill-backend and --dsa-decode-backend tilelang (raw and scaled FP8 KV layouts "
                "cannot be mixed)",
                other_flag,
            )
        )
    if server.dcp_size is not None and server.dcp_size > 1:
        out.append(
            _fail(
                "raw_fp8_dcp",
                f"--dcp-size {server.dcp_size}: decode context parallelism is not supported with the raw "
                "fp8_e4m3 TileLang KV layout (use --dcp-size 1)",
                "--dcp-size",
            )
        )
    else:
        out.append(_ok("raw_fp8_dcp", "no decode context parallelism", "--dcp-size"))
    if server.attn_cp_size is not None and server.attn_cp_size > 1:
        out.append(
            _fail(
                "raw_fp8_attn_cp",
                f"--attn-cp-size {server.attn_cp_size}: attention context parallelism is not supported with "
                "the raw fp8_e4m3 TileLang KV layout",
                "--attn-cp-size",
            )
        )
    else:
        out.append(_ok("raw_fp8_attn_cp", "no attention context parallelism", "--attn-cp-size"))
    if server.enable_hisparse:
        out.append(
            _fail(
                "raw_fp8_hisparse",
                "--enable-hisparse: HiSparse is not supported with the raw fp8_e4m3 TileLang KV layout",
                "--enable-hisparse",
            )
        )
    else:
        out.append(_ok("raw_fp8_hisparse", "HiSparse off", "--enable-hisparse"))

    all_gpus = gpu_mod.query_gpus(env)
    if all_gpus is None:
        out.append(
            _skip("raw_fp8_compute_capability", "nvidia-smi not found: compute capability not checked")
        )
        return out
    visible = gpu_mod.visible_gpus(all_gpus, env)
    low = [g for g in visible if (gpu_mod.compute_capability(g) or (0, 0)) < MIN_RAW_FP8_CC]
    if low:
        names = ", ".join(f"GPU {g.index} {g.name} (sm {g.compute_capability or '?'})" for g in low)
        out.append(
            _fail(
                "raw_fp8_compute_capability",
                f"--kv-cache-dtype fp8_e4m3 with TileLang DSA kernels needs compute capability >= 8.9; {names}",
                "--kv-cache-dtype",
            )
        )
    else:
        out.append(_ok("raw_fp8_compute_capability", "all visible GPUs have compute capability >= 8.9"))
    return out


def _check_model_path(cfg: RunConfig) -> list[PreflightCheck]:
    path = cfg.resolve_path(cfg.model.path)
    if not path.exists():
        return [
            _fail(
                "model_path",
                f"--model-path {cfg.model.path}: {path} does not exist (download the weights first; "
                "evalpipe does not let the server fetch models mid-run)",
                "--model-path",
            )
        ]
    config_json = path / "config.json"
    try:
        json.loads(config_json.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return [
            _fail("model_path", f"--model-path {path}: no config.json in the model directory", "--model-path")
        ]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [_fail("model_path", f"--model-path {path}: config.json unreadable ({exc})", "--model-path")]
    return [_ok("model_path", f"{config_json} readable", "--model-path")]


def _check_command(cfg: RunConfig, server: ServerConfig, argv: list[str]) -> list[PreflightCheck]:
    """kind: command — the executable exists and, when the argv names ``{model_path}``, so does the model
    (a file, e.g. a GGUF, or a directory)."""
    from evalpipe.server.command import executable_problem, uses_placeholder

    out = []
    problem = executable_problem(argv)
    if problem:
        out.append(_fail("command", f"server.command[0]: {problem}", "server.command"))
    else:
        out.append(_ok("command", f"server.command[0] {argv[0]} is executable", "server.command"))
    if uses_placeholder(server, "model_path"):
        path = cfg.resolve_path(cfg.model.path)
        if not path.exists():
            out.append(
                _fail(
                    "model_path",
                    f"model.path {cfg.model.path}: {path} does not exist (server.command uses {{model_path}})",
                    "model.path",
                )
            )
        else:
            out.append(_ok("model_path", f"{path} exists", "model.path"))
    return out


def _check_port(server: ServerConfig) -> list[PreflightCheck]:
    if server.port == 0:
        return [_ok("port_free", "port 0: a free port is chosen at launch", "--port")]
    if port_in_use(server.host, server.port):
        return [
            _fail(
                "port_free",
                f"--port {server.port} is already in use on {server.host} (another server running?)",
                "--port",
            )
        ]
    return [_ok("port_free", f"{server.host}:{server.port} is free", "--port")]


def gpus_needed(server: ServerConfig) -> int:
    """GPUs this node needs: tp (× dp without DP attention) spread over the nodes."""
    per_replica = server.tp_size
    if server.dp_size and server.dp_size > 1 and "--enable-dp-attention" not in server.extra_args:
        per_replica *= server.dp_size
    return max(1, math.ceil(per_replica / server.multi_node.nnodes))


def _check_gpus(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    nnodes = server.multi_node.nnodes
    out = []
    if server.tp_size % nnodes:
        out.append(
            _fail(
                "gpu_count", f"--tp-size {server.tp_size} is not divisible by --nnodes {nnodes}", "--tp-size"
            )
        )
    need = gpus_needed(server)
    all_gpus = gpu_mod.query_gpus(env)
    if all_gpus is None:
        out.append(
            _fail(
                "gpu_count",
                f"--tp-size {server.tp_size}: needs {need} GPU(s) on this node but nvidia-smi is not available",
                "--tp-size",
            )
        )
        return out
    visible = gpu_mod.visible_gpus(all_gpus, env)
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    where = f" (CUDA_VISIBLE_DEVICES={cvd})" if cvd is not None else ""
    if len(visible) < need:
        out.append(
            _fail(
                "gpu_count",
                f"--tp-size {server.tp_size} over --nnodes {nnodes} needs {need} GPU(s) on this node, "
                f"{len(visible)} visible{where}",
                "--tp-size",
            )
        )
    else:
        out.append(
            _ok("gpu_count", f"{need} GPU(s) needed on this node, {len(visible)} visible{where}", "--tp-size")
        )
    return out


def _check_punkt(punkt_needed: str | None) -> list[PreflightCheck]:
    if not punkt_needed:
        return []
    from evalpipe.nltk_data import PUNKT_TAB_FIX, punkt_tab_available

    if punkt_tab_available():
        return [_ok("nltk_punkt_tab", f"NLTK punkt_tab found ({punkt_needed} sentence counting)")]
    return [
        _warn(
            "nltk_punkt_tab",
            f"{punkt_needed} is selected but NLTK punkt_tab is missing: its sentence-count instructions cannot be "
            f"scored offline; {PUNKT_TAB_FIX}",
        )
    ]


def punkt_needed(cfg: RunConfig) -> str | None:
    """Display names of the configured benchmarks whose scoring needs NLTK punkt_tab (None: none)."""
    from evalpipe.benchmarks import benchmark

    names = [
        benchmark(b.name).display_name for b in cfg.benchmarks if benchmark(b.name).needs_punkt is not None
    ]
    return ", ".join(names) or None


def preflight_for(cfg: RunConfig, variant: str | None = None, **kwargs: object) -> PreflightReport:
    """Convenience for the CLI and the pipeline: effective server for ``variant``, NLTK needs from the config."""
    from evalpipe.server.variants import effective_server

    server = effective_server(cfg, variant)
    try:
        return run_preflight(cfg, server, punkt_needed=punkt_needed(cfg), variant=variant, **kwargs)  # type: ignore[arg-type]
    except ConfigError as exc:  # e.g. the API key variable missing while building the argv
        raise PreflightError(exc.message, details=exc.details) from None
