"""What every launched or attached server gets from the config, whatever its kind: its environment
(ours plus ``server.env``) and the API key named by ``server.api_key_env``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig

#: Placeholder put in place of the API key when secrets are not resolved (``evalpipe server command``).
API_KEY_PLACEHOLDER_PREFIX = "$"


def server_env(server: ServerConfig, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment the server process gets: ours (or ``base``) plus ``server.env``."""
    env = dict(os.environ if base is None else base)
    env.update(server.env)
    return env


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
