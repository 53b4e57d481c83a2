"""The only module that knows SGLang's command-line flags and ``/server_info`` keys.

When SGLang renames a flag, this file changes and nothing else.  Names were checked against SGLang's
``python/sglang/srt/server_args.py``: 0.5.13 renamed the NSA (native sparse attention) options to DSA
(``--attention-backend dsa``, ``--dsa-prefill-backend``, ``--dsa-decode-backend``); older releases take
``nsa`` / ``--nsa-*``.  The ``sglang`` server kind (``evalpipe.server.kinds.sglang``) launches what
:func:`build_argv` builds.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalpipe.server.chat_template import NO_REASONING_PARSER
from evalpipe.server.kinds.sglang.settings import sglang_settings
from evalpipe.server.launch_env import API_KEY_PLACEHOLDER_PREFIX, api_key
from evalpipe.server.server_info import ServerInfoReader

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig, ServerConfig

SGLANG_MODULE = "sglang.launch_server"
DSA_RENAME = (0, 5, 13)
#: How the report names SGLang's attention kernel backends (``--attention-backend`` / ``--dsa-*-backend``).
KERNEL_NAMES = {
    "tilelang": "TileLang",
    "flashmla_sparse": "FlashMLA sparse",
    "flashmla_kv": "FlashMLA KV",
    "flashmla_auto": "FlashMLA auto",
    "flashinfer_sparse_mla": "FlashInfer sparse MLA",
    "fa3": "FA3",
    "aiter": "AITER",
    "trtllm": "TRT-LLM",
}


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
    "server.settings.tp_size": ("--tp-size", "--tensor-parallel-size", "--tp"),
    "server.settings.ep_size": ("--ep-size", "--expert-parallel-size", "--ep"),
    "server.settings.dp_size": ("--dp-size", "--data-parallel-size", "--dp"),
    "server.settings.attn_cp_size": ("--attn-cp-size", "--attention-context-parallel-size"),
    "server.settings.dcp_size": ("--dcp-size", "--decode-context-parallel-size"),
    "server.settings.attention_backend": ("--attention-backend",),
    "server.settings.dsa_prefill_backend": ("--dsa-prefill-backend", "--nsa-prefill-backend"),
    "server.settings.dsa_decode_backend": ("--dsa-decode-backend", "--nsa-decode-backend"),
    "server.kv_cache_dtype": ("--kv-cache-dtype",),
    "server.settings.speculative": (
        "--speculative-algorithm",
        "--speculative-num-steps",
        "--speculative-eagle-topk",
        "--speculative-num-draft-tokens",
    ),
    "server.settings.enable_deterministic_inference": ("--enable-deterministic-inference",),
    "server.settings.enable_hisparse": ("--enable-hisparse",),
    "server.settings.multi_node": ("--nnodes", "--node-rank", "--dist-init-addr", "--nccl-init-addr"),
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


def build_argv(
    cfg: RunConfig,
    server: ServerConfig,
    *,
    sglang_version: str | None,
    resolve_secrets: bool = True,
    python: str | None = None,
) -> list[str]:
    """The exact argv that launches ``python -m sglang.launch_server`` for this config.

    ``sglang_version`` is the *installed* SGLang version (None: newest naming).  With
    ``resolve_secrets=False`` the API key is replaced by ``$ENV_NAME`` (for printing, never for launching).
    """
    python = python or sys.executable
    names = FlagNames.for_version(sglang_version)
    argv = [python, "-m", SGLANG_MODULE, "--model-path", cfg.model_path_for_server()]
    argv += ["--served-model-name", cfg.model.served_name]
    if cfg.model.tokenizer_path:
        argv += ["--tokenizer-path", cfg.model.tokenizer_path]
    if cfg.model.chat_template != "native":
        argv += ["--chat-template", str(cfg.resolve_path(cfg.model.chat_template))]
    if cfg.model.reasoning_parser != NO_REASONING_PARSER:
        argv += ["--reasoning-parser", cfg.model.reasoning_parser]
    if cfg.model.tool_call_parser is not None:
        argv += ["--tool-call-parser", cfg.model.tool_call_parser]
    st = sglang_settings(server)
    argv += ["--host", server.host, "--port", str(server.port), "--tp-size", str(st.tp_size)]
    if st.ep_size is not None:
        argv += ["--ep-size", str(st.ep_size)]
    if st.dp_size is not None:
        argv += ["--dp-size", str(st.dp_size)]
    if st.attn_cp_size is not None:
        argv += ["--attn-cp-size", str(st.attn_cp_size)]
    if st.dcp_size is not None:
        argv += ["--dcp-size", str(st.dcp_size)]
    if st.attention_backend is not None:
        backend = st.attention_backend
        if backend in ("dsa", "nsa"):
            backend = names.attention_backend_dsa
        argv += ["--attention-backend", backend]
    if st.dsa_prefill_backend is not None:
        argv += [names.prefill_backend, st.dsa_prefill_backend]
    if st.dsa_decode_backend is not None:
        argv += [names.decode_backend, st.dsa_decode_backend]
    argv += ["--kv-cache-dtype", server.kv_cache_dtype]
    if st.speculative is not None:
        spec = st.speculative
        argv += ["--speculative-algorithm", spec.algorithm]
        argv += ["--speculative-num-steps", str(spec.num_steps)]
        argv += ["--speculative-eagle-topk", str(spec.eagle_topk)]
        argv += ["--speculative-num-draft-tokens", str(spec.num_draft_tokens)]
    if st.enable_deterministic_inference:
        argv.append("--enable-deterministic-inference")
    if st.enable_hisparse:
        argv.append("--enable-hisparse")
    mn = st.multi_node
    if mn.nnodes > 1:
        argv += ["--nnodes", str(mn.nnodes), "--node-rank", str(mn.node_rank)]
        argv += ["--dist-init-addr", str(mn.dist_init_addr)]
    if server.api_key_env:
        key = api_key(server) if resolve_secrets else API_KEY_PLACEHOLDER_PREFIX + server.api_key_env
        argv += ["--api-key", str(key)]
    argv += list(server.extra_args)
    return argv


# --- /server_info: where SGLang reports each resolved value (newest spelling first)
SERVER_INFO_KEYS: dict[str, tuple[str, ...]] = {
    "kv_cache_dtype": ("kv_cache_dtype",),
    "attention_backend": ("attention_backend",),
    "dsa_prefill_backend": ("dsa_prefill_backend", "nsa_prefill_backend"),
    "dsa_decode_backend": ("dsa_decode_backend", "nsa_decode_backend"),
    "tp_size": ("tp_size",),
    "ep_size": ("ep_size",),
    "nnodes": ("nnodes",),
    "speculative_algorithm": ("speculative_algorithm",),
    "served_model_name": ("served_model_name",),
    "reasoning_parser": ("reasoning_parser",),
    "tool_call_parser": ("tool_call_parser",),
    "enable_deterministic_inference": ("enable_deterministic_inference",),
    "launch_command": ("launch_command",),
    "model_path": ("model_path",),
    "version": ("version",),
}

_ALIASES = {"nsa": "dsa", "bf16": "bfloat16"}


def resolved_expectations(cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
    """The config values SGLang's ``/server_info`` reports as resolved, keyed as :data:`SERVER_INFO_KEYS`
    (only those the config pins down; ``reasoning_parser`` always: ``none`` expects no parser)."""
    st = sglang_settings(server)
    exp: dict[str, Any] = {}
    if server.kv_cache_dtype != "auto":
        exp["kv_cache_dtype"] = server.kv_cache_dtype
    if st.attention_backend is not None:
        exp["attention_backend"] = st.attention_backend
    if st.dsa_prefill_backend is not None:
        exp["dsa_prefill_backend"] = st.dsa_prefill_backend
    if st.dsa_decode_backend is not None:
        exp["dsa_decode_backend"] = st.dsa_decode_backend
    exp["tp_size"] = st.tp_size
    if st.ep_size is not None:
        exp["ep_size"] = st.ep_size
    if st.multi_node.nnodes > 1:  # one instance over several nodes: rank 0 reports how many
        exp["nnodes"] = st.multi_node.nnodes
    exp["speculative_algorithm"] = st.speculative.algorithm if st.speculative else None
    exp["served_model_name"] = cfg.model.served_name
    # "none" expects no parser: a server that splits reasoning off would change what is scored
    parser = cfg.model.reasoning_parser
    exp["reasoning_parser"] = None if parser == NO_REASONING_PARSER else parser
    if cfg.model.tool_call_parser is not None:
        exp["tool_call_parser"] = cfg.model.tool_call_parser
    return exp


#: Resolved values the workers of a fleet behind SGLang's router must share whether or not the config pins
#: them: SGLang's names, and those of evalpipe's llama.cpp launcher (a router's workers may be either).
FLEET_AGREEMENT: tuple[str, ...] = (
    "engine",
    "version",
    "served_model_name",
    "model_path",
    "model_file",
    "model_sha256",
    "model_ftype",
    "dtype",
    "quantization",
    "kv_cache_dtype",
    "cache_type_k",
    "cache_type_v",
    "attention_backend",
    "dsa_prefill_backend",
    "dsa_decode_backend",
    "tp_size",
    "ep_size",
    "dp_size",
    "pp_size",
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "reasoning_parser",
    "tool_call_parser",
    "context_length",
    "n_ctx",
    "n_ctx_per_slot",
    "flash_attention",
    "chat_template",
    "chat_template_sha256",
    "enable_deterministic_inference",
)

#: How SGLang's ``/server_info`` is read (``SglangKind.server_info_reader``): the spellings above, the
#: deprecated values folded (``nsa`` → ``dsa``, ``bf16`` → ``bfloat16``) and what a fleet must share.
SERVER_INFO = ServerInfoReader(SERVER_INFO_KEYS, _ALIASES, FLEET_AGREEMENT)


def resolved_value(server_info: dict[str, Any], key: str) -> Any:
    """The value SGLang resolved for ``key``: top level of ``/server_info``, else the first DP shard's
    ``internal_states`` entry.  None when the server does not report it."""
    return SERVER_INFO.value(server_info, key)


def internal_state_values(server_info: dict[str, Any], key: str) -> list[tuple[int, Any]]:
    """``(index, value)`` of every ``internal_states`` entry (one per data-parallel scheduler) that reports
    ``key``: each must have resolved what the config asks, not just the first."""
    return SERVER_INFO.state_values(server_info, key)


def normalize(value: Any) -> Any:
    """Comparable form of a reported value: deprecated aliases folded (``nsa`` → ``dsa``, ``bf16`` →
    ``bfloat16``), speculative ``NONE`` → None, numeric strings → int."""
    return SERVER_INFO.normalize(value)


# --- launch flags passed through ``extra_args``, as /server_info reports them
#: Flag names never copied into a verification file (their values may be credentials).
_SECRET_FLAG = re.compile(r"key|token|secret|password", re.IGNORECASE)


def _typed(value: str) -> Any:
    """``"256"`` → 256, ``"0.3"`` → 0.3, anything else as given (how ServerArgs' argparse types them)."""
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+)([eE]-?\d+)?", value):
        return float(value)
    return value


def extra_arg_values(extra_args: list[str]) -> dict[str, Any]:
    """``--flag value`` pairs of ``extra_args`` keyed as ServerArgs names the field (``--mem-fraction-static
    0.3`` → ``mem_fraction_static: 0.3``; a flag without a value → True; several values → a list).

    SGLang's ``/server_info`` is ``dataclasses.asdict(ServerArgs)`` (plus scheduler facts), and each CLI flag
    is its field's name with dashes (``ServerArgs.add_cli_args``, 0.5.17 and 0.5.23 alike), so a flag the
    server accepted is reported under that key — unless SGLang resolved it to something else, which is what
    verification is for.  Flags that may carry credentials are left out."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(extra_args):
        arg = extra_args[i]
        i += 1
        if not arg.startswith("--") or len(arg) <= 2:
            continue
        name, eq, inline = arg[2:].partition("=")
        values = [inline] if eq else []
        while not eq and i < len(extra_args) and not extra_args[i].startswith("--"):
            values.append(extra_args[i])
            i += 1
        if _SECRET_FLAG.search(name):
            continue
        key = name.replace("-", "_")
        if not values:
            out[key] = True
        elif len(values) == 1:
            out[key] = _typed(values[0])
        else:
            out[key] = [_typed(v) for v in values]
    return out


#: ``--kv-cache-dtype`` → the torch dtype SGLang allocates the pool in (its log: "KV Cache is allocated.
#: dtype: torch.<this>"); ``auto`` follows the model's ``--dtype``.
KV_STORAGE_DTYPE = {
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
}
_MODEL_DTYPE = {
    "bfloat16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "float32": "float32",
    "float": "float32",
}


def expected_kv_storage(kv_cache_dtype: str, extra_args: list[str]) -> str | None:
    """The torch dtype the KV pool must have: from ``--kv-cache-dtype``, or for ``auto`` the model's
    ``--dtype`` when ``extra_args`` sets it; None when the config does not pin it down."""
    if kv_cache_dtype in KV_STORAGE_DTYPE:
        return KV_STORAGE_DTYPE[kv_cache_dtype]
    if kv_cache_dtype == "auto":
        dtype = extra_arg_values(extra_args).get("dtype")
        return _MODEL_DTYPE.get(dtype) if isinstance(dtype, str) else None
    return None
