"""The slice of SGLang 0.5.23's ServerArgs CLI that evalpipe builds or its configs pass (same names and choices).

``ServerArgs.add_cli_args(parser)`` is what evalpipe's preflight dry-parse calls on the real package.
"""

from __future__ import annotations

import argparse
import dataclasses

from sglang.srt.function_call.parser_names import TOOL_CALL_PARSER_NAMES
from sglang.srt.parser.reasoning_parser_names import REASONING_PARSER_NAMES

ATTENTION_BACKEND_CHOICES = [
    "triton",
    "torch_native",
    "flex_attention",
    "dsa",
    "nsa",
    "fa3",
    "flashinfer",
    "flashmla",
]
DSA_CHOICES = [
    "flashmla_sparse",
    "flashmla_sparse_q8",
    "flashmla_kv",
    "flashmla_auto",
    "flashinfer_sparse_mla",
    "fa3",
    "tilelang",
    "aiter",
    "trtllm",
]
KV_CACHE_DTYPE_CHOICES = ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str = ""
    served_model_name: str | None = None
    tokenizer_path: str | None = None
    chat_template: str | None = None
    host: str = "127.0.0.1"
    port: int = 30000
    tp_size: int = 1
    ep_size: int = 1
    dp_size: int = 1
    attn_cp_size: int = 1
    dcp_size: int = 1
    attention_backend: str | None = None
    dsa_prefill_backend: str | None = None
    dsa_decode_backend: str | None = None
    kv_cache_dtype: str = "auto"
    speculative_algorithm: str | None = None
    speculative_num_steps: int | None = None
    speculative_eagle_topk: int | None = None
    speculative_num_draft_tokens: int | None = None
    enable_deterministic_inference: bool = False
    enable_hisparse: bool = False
    nnodes: int = 1
    node_rank: int = 0
    dist_init_addr: str | None = None
    api_key: str | None = None
    trust_remote_code: bool = False
    mem_fraction_static: float | None = None
    reasoning_parser: str | None = None
    tool_call_parser: str | None = None
    context_length: int | None = None
    dtype: str = "auto"
    chunked_prefill_size: int | None = None
    sampling_backend: str | None = None
    grammar_backend: str | None = None
    disable_cuda_graph: bool = False
    enable_metrics: bool = False
    disable_radix_cache: bool = False
    quantization_param_path: str | None = None
    log_level: str = "info"
    page_size: int | None = None
    max_running_requests: int | None = None
    max_total_tokens: int | None = None
    random_seed: int | None = None

    @staticmethod
    def add_cli_args(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--model-path", "--model", dest="model_path", required=True)
        parser.add_argument("--served-model-name")
        parser.add_argument("--tokenizer-path")
        parser.add_argument("--chat-template")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=30000)
        parser.add_argument("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
        parser.add_argument("--ep-size", "--expert-parallel-size", dest="ep_size", type=int, default=1)
        parser.add_argument("--dp-size", "--data-parallel-size", dest="dp_size", type=int, default=1)
        parser.add_argument("--attn-cp-size", dest="attn_cp_size", type=int, default=1)
        parser.add_argument("--dcp-size", dest="dcp_size", type=int, default=1)
        parser.add_argument("--attention-backend", choices=ATTENTION_BACKEND_CHOICES)
        parser.add_argument("--dsa-prefill-backend", choices=DSA_CHOICES)
        parser.add_argument("--dsa-decode-backend", choices=DSA_CHOICES)
        parser.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPE_CHOICES, default="auto")
        parser.add_argument("--speculative-algorithm")
        parser.add_argument("--speculative-num-steps", type=int)
        parser.add_argument("--speculative-eagle-topk", type=int)
        parser.add_argument("--speculative-num-draft-tokens", type=int)
        parser.add_argument("--enable-deterministic-inference", action="store_true")
        parser.add_argument("--enable-hisparse", action="store_true")
        parser.add_argument("--nnodes", type=int, default=1)
        parser.add_argument("--node-rank", type=int, default=0)
        parser.add_argument("--dist-init-addr", "--nccl-init-addr", dest="dist_init_addr")
        parser.add_argument("--api-key")
        parser.add_argument("--trust-remote-code", action="store_true")
        parser.add_argument("--mem-fraction-static", type=float)
        parser.add_argument("--context-length", type=int)
        parser.add_argument(
            "--dtype", default="auto", choices=["auto", "half", "float16", "bfloat16", "float", "float32"]
        )
        parser.add_argument("--chunked-prefill-size", type=int)
        parser.add_argument("--sampling-backend", choices=["flashinfer", "pytorch", "ascend"])
        parser.add_argument("--grammar-backend", choices=["xgrammar", "outlines", "llguidance", "none"])
        parser.add_argument("--disable-cuda-graph", action="store_true")
        parser.add_argument("--enable-metrics", action="store_true")
        parser.add_argument("--disable-radix-cache", action="store_true")
        parser.add_argument("--quantization-param-path")
        parser.add_argument("--log-level", default="info")
        parser.add_argument("--page-size", type=int)
        parser.add_argument("--max-running-requests", type=int)
        parser.add_argument("--max-total-tokens", type=int)
        parser.add_argument("--random-seed", type=int)
        # like SGLang: choices are "auto" plus the names of the dependency-free name modules
        parser.add_argument("--reasoning-parser", choices=["auto", *REASONING_PARSER_NAMES])
        parser.add_argument("--tool-call-parser", choices=["auto", *TOOL_CALL_PARSER_NAMES])

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> ServerArgs:
        return cls(
            **{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
        )


def prepare_server_args(argv: list[str]) -> ServerArgs:
    parser = argparse.ArgumentParser(prog="sglang.launch_server")
    ServerArgs.add_cli_args(parser)
    return ServerArgs.from_cli_args(parser.parse_args(argv))
