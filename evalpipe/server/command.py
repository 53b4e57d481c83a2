"""``server.kind: command``: any OpenAI-compatible server launched from an argv in the config.

The argv's placeholders are filled from the config here, so the launched command, ``launch.json`` and
``evalpipe server command`` all show the same thing.  ``{kv_cache_dtype}`` lets a ``variants:`` override
of ``kv_cache_dtype`` reach the server (the paired KV-cache control), and ``{python}`` is this
interpreter, so ``{python} -m evalpipe.server.llamacpp`` runs in evalpipe's own environment.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError


def placeholder_values(cfg: RunConfig, server: ServerConfig, python: str | None = None) -> dict[str, str]:
    from evalpipe.server.sglang_flags import model_path_arg

    return {
        "host": server.host,
        "port": str(server.port),
        "model_path": model_path_arg(cfg),
        "served_name": cfg.model.served_name,
        "kv_cache_dtype": server.kv_cache_dtype,
        "python": python or sys.executable,
    }


def command_argv(cfg: RunConfig, server: ServerConfig, python: str | None = None) -> list[str]:
    """``server.command`` with its placeholders filled in."""
    if not server.command:
        raise ConfigError("server.command: required when server.kind is 'command'")
    values = placeholder_values(cfg, server, python)
    return [arg.format(**values) for arg in server.command]


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
