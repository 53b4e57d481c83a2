"""``server.kind: answer_key`` — evalpipe's self-test server, launched through the same path as SGLang.

It answers the bundled items from their gold answers (``evalpipe.engines.answer_key_server``), reports its
resolved arguments as SGLang names them, and is verified on what it can resolve: the served name and the
reasoning parser.  ``server.answer_key`` is optional (positive mode, no faults, no thinking).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from evalpipe.server.chat_template import NO_REASONING_PARSER
from evalpipe.server.kinds.base import Kind

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import ServerVerification
    from evalpipe.config.models import RunConfig, ServerConfig

MODULE = "evalpipe.engines.answer_key_server"


class AnswerKeyKind(Kind):
    name: ClassVar[str] = "answer_key"

    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        ak = server.answer_key
        mode = ak.mode if ak else "positive"
        faults = list(ak.faults) if ak else []
        argv = [python or sys.executable, "-m", MODULE, "--host", server.host, "--port", str(server.port)]
        argv += ["--served-model-name", cfg.model.served_name, "--mode", mode]
        if faults:
            argv += ["--faults", ",".join(faults)]
        if "duplicate_request" in faults:  # the fault holds a request past the proxy's deadline
            argv += ["--request-timeout-s", f"{cfg.generation.request_timeout_s:g}"]
        if ak is not None and ak.thinking != "off":
            argv += ["--thinking", ak.thinking]
        if ak is not None and ak.wrong_share:
            argv += ["--wrong-share", ",".join(f"{b}={v:g}" for b, v in ak.wrong_share.items())]
            if ak.wrong_per_attempt:
                argv.append("--wrong-per-attempt")
        if ak is not None and ak.data_dir is not None:
            argv += ["--data-dir", str(cfg.resolve_path(str(ak.data_dir)))]
            argv += ["--benchmarks", ",".join(b.name for b in cfg.benchmarks)]
        if ak is not None and ak.context_length is not None:
            argv += ["--context-length", str(ak.context_length)]
        if cfg.model.reasoning_parser != NO_REASONING_PARSER:
            argv += ["--reasoning-parser", cfg.model.reasoning_parser]
        return argv

    def expected_values(
        self, cfg: RunConfig, server: ServerConfig, reported_engine: str | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {"served_model_name": cfg.model.served_name}
        if cfg.model.reasoning_parser != NO_REASONING_PARSER:
            out["reasoning_parser"] = cfg.model.reasoning_parser
        return out

    def describe_head(self, v: ServerVerification, info: Mapping[str, Any] | None) -> str:
        return f"answer-key self-test server, model {v.served_model_name or '?'}"


KIND = AnswerKeyKind()
