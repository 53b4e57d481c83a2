"""``server.kind: command`` — any OpenAI-compatible server launched from an argv in the config.

The argv's placeholders are filled from the config here, so the launched command, ``launch.json`` and
``evalpipe server command`` all show the same thing.  ``{kv_cache_dtype}`` lets a ``variants:`` override
of ``kv_cache_dtype`` reach the server (the paired KV-cache control), and ``{python}`` is this
interpreter, so ``{python} -m evalpipe.engines.llamacpp`` runs in evalpipe's own environment.

Such a server is not SGLang: its ``/server_info`` (when it has one, like evalpipe's llama.cpp launcher) can
confirm only the KV cache dtype and the served name, a missing one leaves the resolved configuration
"unverifiable" (never a mismatch), and readiness falls back to ``/v1/models`` where ``/health`` is not served.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from evalpipe.errors import ConfigError
from evalpipe.server.kinds.base import Kind, KindPreflight, engine_expectations
from evalpipe.server.preflight_rules import check_port, fail, ok

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import PreflightCheck
    from evalpipe.config.models import RunConfig, ServerConfig


class CommandKind(Kind):
    name: ClassVar[str] = "command"
    config_section: ClassVar[str | None] = "command"

    def check_config(self, server: ServerConfig) -> None:
        if not server.command:
            raise ValueError("command (the server's argv) is required when kind is 'command'")

    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        """``server.command`` with its placeholders filled in."""
        if not server.command:
            raise ConfigError("server.command: required when server.kind is 'command'")
        values = placeholder_values(cfg, server, python)
        return [arg.format(**values) for arg in server.command]

    def ready_paths(self, server: ServerConfig) -> tuple[str, ...]:
        return (server.ready_path,) if server.ready_path else ("/health", "/v1/models")

    def preflight(self, cfg: RunConfig, server: ServerConfig, env: Mapping[str, str]) -> KindPreflight:
        argv = self.argv(cfg, server, resolve_secrets=False)
        return KindPreflight(argv=argv, checks=[*_check_command(cfg, server, argv), *check_port(server)])

    def expected_values(
        self, cfg: RunConfig, server: ServerConfig, reported_engine: str | None
    ) -> dict[str, Any]:
        return engine_expectations(cfg, server)


def placeholder_values(cfg: RunConfig, server: ServerConfig, python: str | None = None) -> dict[str, str]:
    """What each ``server.command`` placeholder (``COMMAND_PLACEHOLDERS`` in the config) stands for."""
    return {
        "host": server.host,
        "port": str(server.port),
        "model_path": cfg.model_path_for_server(),
        "served_name": cfg.model.served_name,
        "kv_cache_dtype": server.kv_cache_dtype,
        "python": python or sys.executable,
    }


def uses_placeholder(server: ServerConfig, name: str) -> bool:
    return any("{" + name + "}" in arg for arg in server.command or [])


def executable_problem(argv: list[str]) -> str | None:
    """Why ``argv[0]`` cannot be executed (None when it can): checked before launch so that a typo is one
    clear line, not a traceback from ``Popen``."""
    exe = argv[0]
    if "/" in exe:
        p = Path(exe)
        if not p.exists():
            return f"{exe}: no such file"
        if not p.is_file() or not shutil.which(str(p)):
            return f"{exe}: not an executable file"
        return None
    if shutil.which(exe) is None:
        return f"{exe}: not found on PATH"
    return None


def _check_command(cfg: RunConfig, server: ServerConfig, argv: list[str]) -> list[PreflightCheck]:
    """The executable exists and, when the argv names ``{model_path}``, so does the model (a file, e.g. a
    GGUF, or a directory)."""
    out = []
    problem = executable_problem(argv)
    if problem:
        out.append(fail("command", f"server.command[0]: {problem}", "server.command"))
    else:
        out.append(ok("command", f"server.command[0] {argv[0]} is executable", "server.command"))
    if uses_placeholder(server, "model_path"):
        path = cfg.resolve_path(cfg.model.path)
        if not path.exists():
            out.append(
                fail(
                    "model_path",
                    f"model.path {cfg.model.path}: {path} does not exist (server.command uses {{model_path}})",
                    "model.path",
                )
            )
        else:
            out.append(ok("model_path", f"{path} exists", "model.path"))
    return out


KIND = CommandKind()
