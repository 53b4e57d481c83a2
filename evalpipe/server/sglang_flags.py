"""The only module that knows SGLang's command-line flags and ``/server_info`` keys.

When SGLang renames a flag, this file changes and nothing else.  Names were checked against SGLang's
``python/sglang/srt/server_args.py``: 0.5.13 renamed the NSA (native sparse attention) options to DSA
(``--attention-backend dsa``, ``--dsa-prefill-backend``, ``--dsa-decode-backend``); older releases take
``nsa`` / ``--nsa-*``.

The self-test server (``kind: answer_key``) is evalpipe's own module; its argv is built here too so that
both kinds go through one launch path.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError

SGLANG_MODULE = "sglang.launch_server"
ANSWER_KEY_MODULE = "evalpipe.selftest.answer_key_server"
REPLAY_MODULE = "evalpipe.replay.server"
DSA_RENAME = (0, 5, 13)
#: Placeholder put in place of the API key when secrets are not resolved (``evalpipe server command``).
API_KEY_PLACEHOLDER_PREFIX = "$"
#: ``model.reasoning_parser`` value for a model without reasoning (no ``--reasoning-parser`` flag).
NO_REASONING_PARSER = "none"

# The chat-template kwarg that switches thinking on/off, per reasoning parser.  SGLang 0.5.23 derives it
# from each detector's ``reasoning_default`` (``serving_chat.py::_get_reasoning_toggle_param``: the mode
# with any ``explicit_`` prefix removed); values read from ``srt/parser/reasoning_parser.py``.  Parsers not
# listed (always-on ones such as deepseek-r1, or effort-controlled ones) have no boolean toggle.
THINKING_TOGGLE: dict[str, str] = {
    "glm45": "enable_thinking",  # Glm45Detector: reasoning_default="enable_thinking"
    "ling3": "enable_thinking",
    "qwen3": "enable_thinking",  # Qwen3Detector, also behind dots/minimax/nanbeige/interns1
    "qwen3-thinking": "enable_thinking",
    "dots": "enable_thinking",
    "minimax": "enable_thinking",
    "nanbeige": "enable_thinking",
    "interns1": "enable_thinking",
    "nemotron_3": "enable_thinking",
    "granite_thinking_parser": "enable_thinking",
    "gemma4": "enable_thinking",  # explicit_enable_thinking
    "deepseek-v3": "thinking",  # _DeepSeekV3Detector: explicit_thinking (not enable_thinking)
    "deepseek-v4": "thinking",
    "deepseek-v41": "thinking",
    "kimi_k2": "thinking",
    "kimi_k3": "thinking",
}


def thinking_kwargs(cfg: RunConfig) -> dict[str, bool] | None:
    """``chat_template_kwargs`` every request must carry for ``model.thinking`` (None: send none).

    ConfigError (naming the field) when thinking is switched on or off for a model whose reasoning parser
    has no boolean toggle, or without a reasoning parser at all.
    """
    mode = cfg.model.thinking
    if mode == "model_default":
        return None
    parser = cfg.model.reasoning_parser
    if parser == NO_REASONING_PARSER:
        raise ConfigError(
            f"model.thinking: {mode} needs model.reasoning_parser (the toggle depends on the model family); "
            "use thinking: model_default for a model without reasoning"
        )
    toggle = THINKING_TOGGLE.get(parser)
    if toggle is None:
        raise ConfigError(
            f"model.thinking: {mode}: reasoning parser {parser!r} has no chat-template thinking toggle "
            f"(known: {', '.join(sorted(THINKING_TOGGLE))}); use thinking: model_default"
        )
    return {toggle: mode == "enabled"}


def parse_version(version: str | None) -> tuple[int, ...] | None:
    """``"0.5.13.post1"`` → ``(0, 5, 13)``; None when unparseable (treated as the newest known)."""
    if not version:
        return None
    m = re.match(r"^\s*v?(\d+(?:\.\d+)*)", version)
    if not m:
        return None
    return tuple(int(p) for p in m.group(1).split("."))


def uses_dsa_names(sglang_version: str | None) -> bool:
    """True for SGLang >= 0.5.13 (or unknown version): ``dsa`` names; False: legacy ``nsa`` names."""
    parsed = parse_version(sglang_version)
    return parsed is None or parsed >= DSA_RENAME


@dataclass(frozen=True)
class FlagNames:
    """Flag spelling for one SGLang version."""

    attention_backend_dsa: str
    prefill_backend: str
    decode_backend: str

    @classmethod
    def for_version(cls, sglang_version: str | None) -> FlagNames:
        if uses_dsa_names(sglang_version):
            return cls("dsa", "--dsa-prefill-backend", "--dsa-decode-backend")
        return cls("nsa", "--nsa-prefill-backend", "--nsa-decode-backend")


# Flags evalpipe builds from config fields; setting them again in extra_args would make the config lie.
# Each entry: config field → the flag and its known aliases (all versions).
MANAGED_FLAGS: dict[str, tuple[str, ...]] = {
    "model.path": ("--model-path", "--model"),
    "model.served_name": ("--served-model-name",),
    "model.tokenizer_path": ("--tokenizer-path",),
    "model.chat_template": ("--chat-template",),
    "model.reasoning_parser": ("--reasoning-parser",),
    "model.tool_call_parser": ("--tool-call-parser",),
    "server.host": ("--host",),
    "server.port": ("--port",),
    "server.tp_size": ("--tp-size", "--tensor-parallel-size", "--tp"),
    "server.ep_size": ("--ep-size", "--expert-parallel-size", "--ep"),
    "server.dp_size": ("--dp-size", "--data-parallel-size", "--dp"),
    "server.attn_cp_size": ("--attn-cp-size", "--attention-context-parallel-size"),
    "server.dcp_size": ("--dcp-size", "--decode-context-parallel-size"),
    "server.attention_backend": ("--attention-backend",),
    "server.dsa_prefill_backend": ("--dsa-prefill-backend", "--nsa-prefill-backend"),
    "server.dsa_decode_backend": ("--dsa-decode-backend", "--nsa-decode-backend"),
    "server.kv_cache_dtype": ("--kv-cache-dtype",),
    "server.speculative": (
        "--speculative-algorithm",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
    ),
    "server.enable_deterministic_inference": ("--enable-deterministic-inference",),
    "server.enable_hisparse": ("--enable-hisparse",),
    "server.multi_node": ("--nnodes", "--node-rank", "--dist-init-addr", "--nccl-init-addr"),
    "server.api_key_env": ("--api-key",),
}


def extra_args_conflicts(server: ServerConfig) -> list[tuple[str, str]]:
    """``(flag, config field)`` for each flag in ``extra_args`` that evalpipe already builds from config."""
    by_flag = {flag: field for field, flags in MANAGED_FLAGS.items() for flag in flags}
    out = []
    for arg in server.extra_args:
        flag = arg.split("=", 1)[0]
        if flag in by_flag:
            out.append((flag, by_flag[flag]))
    return out


def api_key(server: ServerConfig) -> str | None:
    """The API key from the environment variable named by ``server.api_key_env`` (None when not set up)."""
    if not server.api_key_env:
        return None
    value = os.environ.get(server.api_key_env) or server.env.get(server.api_key_env)
    if not value:
        raise ConfigError(
            f"server.api_key_env: environment variable {server.api_key_env} is not set (it should hold the API key)"
        )
    return value


def model_path_arg(cfg: RunConfig) -> str:
    """The model path as passed to the server: resolved against the config directory when it exists there."""
    candidate = cfg.resolve_path(cfg.model.path)
    return str(candidate) if candidate.exists() else cfg.model.path


def build_argv(
    cfg: RunConfig,
    server: ServerConfig,
    *,
    sglang_version: str | None,
    resolve_secrets: bool = True,
    python: str | None = None,
) -> list[str]:
    """The exact argv that launches the server for ``server.kind`` (``sglang`` or ``answer_key``).

    ``sglang_version`` is the *installed* SGLang version (None: newest naming).  With
    ``resolve_secrets=False`` the API key is replaced by ``$ENV_NAME`` (for printing, never for launching).
    ``kind: endpoint`` launches nothing and raises ConfigError.
    """
    python = python or sys.executable
    if server.kind == "endpoint":
        raise ConfigError(f"server.kind is 'endpoint': nothing is launched (attaches to {server.endpoint})")
    if server.kind == "answer_key":
        return _answer_key_argv(cfg, server, python)
    if server.kind == "replay":
        return _replay_argv(cfg, server, python)
    if server.kind == "command":
        from evalpipe.server.command import command_argv

        return command_argv(cfg, server, python)
    names = FlagNames.for_version(sglang_version)
    argv = [python, "-m", SGLANG_MODULE, "--model-path", model_path_arg(cfg)]
    argv += ["--served-model-name", cfg.model.served_name]
    if cfg.model.tokenizer_path:
        argv += ["--tokenizer-path", cfg.model.tokenizer_path]
    if cfg.model.chat_template != "native":
        argv += ["--chat-template", str(cfg.resolve_path(cfg.model.chat_template))]
    if cfg.model.reasoning_parser != NO_REASONING_PARSER:
        argv += ["--reasoning-parser", cfg.model.reasoning_parser]
    if cfg.model.tool_call_parser is not None:
        argv += ["--tool-call-parser", cfg.model.tool_call_parser]
    argv += ["--host", server.host, "--port", str(server.port), "--tp-size", str(server.tp_size)]
    if server.ep_size is not None:
        argv += ["--ep-size", str(server.ep_size)]
    if server.dp_size is not None:
        argv += ["--dp-size", str(server.dp_size)]
    if server.attn_cp_size is not None:
        argv += ["--attn-cp-size", str(server.attn_cp_size)]
    if server.dcp_size is not None:
        argv += ["--dcp-size", str(server.dcp_size)]
    if server.attention_backend is not None:
        backend = server.attention_backend
        if backend in ("dsa", "nsa"):
            backend = names.attention_backend_dsa
        argv += ["--attention-backend", backend]
    if server.dsa_prefill_backend is not None:
        argv += [names.prefill_backend, server.dsa_prefill_backend]
    if server.dsa_decode_backend is not None:
        argv += [names.decode_backend, server.dsa_decode_backend]
    argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    if server.speculative is not None:
        spec = server.speculative
        argv += ["--speculative-algorithm", spec.algorithm]
        argv += ["--speculative-num-steps", str(spec.num_steps)]
        argv += ["--speculative-eagle-topk", str(spec.eagle_topk)]
        argv += ["--speculative-num-draft-tokens", str(spec.num_draft_tokens)]
    if server.enable_deterministic_inference:
        argv.append("--enable-deterministic-inference")
    if server.enable_hisparse:
        argv.append("--enable-hisparse")
    mn = server.multi_node
    if mn.nnodes > 1:
        argv += ["--nnodes", str(mn.nnodes), "--node-rank", str(mn.node_rank)]
        argv += ["--dist-init-addr", str(mn.dist_init_addr)]
    if server.api_key_env:
        key = api_key(server) if resolve_secrets else API_KEY_PLACEHOLDER_PREFIX + server.api_key_env
        argv += ["--api-key", str(key)]
    argv += list(server.extra_args)
    return argv


def _answer_key_argv(cfg: RunConfig, server: ServerConfig, python: str) -> list[str]:
    ak = server.answer_key
    mode = ak.mode if ak else "positive"
    faults = list(ak.faults) if ak else []
    argv = [python, "-m", ANSWER_KEY_MODULE, "--host", server.host, "--port", str(server.port)]
    argv += ["--served-model-name", cfg.model.served_name, "--mode", mode]
    if faults:
        argv += ["--faults", ",".join(faults)]
    if ak is not None and ak.thinking != "off":
        argv += ["--thinking", ak.thinking]
    if cfg.model.reasoning_parser != NO_REASONING_PARSER:
        argv += ["--reasoning-parser", cfg.model.reasoning_parser]
    return argv


def _replay_argv(cfg: RunConfig, server: ServerConfig, python: str) -> list[str]:
    rp = server.replay
    if rp is None:
        raise ConfigError("server.replay: required for kind 'replay'")
    argv = [python, "-m", REPLAY_MODULE, "--host", server.host, "--port", str(server.port)]
    argv += ["--served-model-name", cfg.model.served_name, "--bundle", rp.bundle, "--miss-log", rp.miss_log]
    return argv


# --- /server_info: where SGLang reports each resolved value (newest spelling first)
SERVER_INFO_KEYS: dict[str, tuple[str, ...]] = {
    "kv_cache_dtype": ("kv_cache_dtype",),
    "attention_backend": ("attention_backend",),
    "dsa_prefill_backend": ("dsa_prefill_backend", "nsa_prefill_backend"),
    "dsa_decode_backend": ("dsa_decode_backend", "nsa_decode_backend"),
    "tp_size": ("tp_size",),
    "ep_size": ("ep_size",),
    "speculative_algorithm": ("speculative_algorithm",),
    "served_model_name": ("served_model_name",),
    "reasoning_parser": ("reasoning_parser",),
    "tool_call_parser": ("tool_call_parser",),
    "enable_deterministic_inference": ("enable_deterministic_inference",),
    "launch_command": ("launch_command",),
    "version": ("version",),
}

_ALIASES = {"nsa": "dsa", "bf16": "bfloat16"}


def resolved_value(server_info: dict[str, Any], key: str) -> Any:
    """The value SGLang resolved for ``key``: top level of ``/server_info``, else the first DP shard's
    ``internal_states`` entry.  None when the server does not report it."""
    names = SERVER_INFO_KEYS.get(key, (key,))
    for name in names:
        value = server_info.get(name)
        if value is not None:
            return value
    states = server_info.get("internal_states")
    if isinstance(states, list):
        for state in states:
            if isinstance(state, dict):
                for name in names:
                    if state.get(name) is not None:
                        return state[name]
    return None


def normalize(value: Any) -> Any:
    """Comparable form of a reported value: deprecated aliases folded (``nsa`` → ``dsa``, ``bf16`` →
    ``bfloat16``), speculative ``NONE`` → None, numeric strings → int."""
    if isinstance(value, str):
        v = value.strip()
        if v.upper() == "NONE" or v == "":
            return None
        if re.fullmatch(r"-?\d+", v):
            return int(v)
        return _ALIASES.get(v, v)
    return value
