"""Preflight rules every server kind may use, each returning :class:`PreflightCheck` values.

A rule checks one thing before any GPU time is spent and names the flag (or config field) it concerns;
``fail`` aborts the launch with exit 2, ``warn`` is shown loudly and recorded, ``skipped`` says what could not
be checked here.  Which rules apply is the server kind's decision (``Kind.preflight``); the API key,
``extra_args`` and NLTK rules apply to every kind (``evalpipe.server.preflight``).  Rules only one kind
knows (its engine's argument parser, its parser names) live in that kind's own module.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.artifacts.schema.server import PreflightCheck
from evalpipe.processes.ports import port_in_use

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig, ServerConfig


def ok(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="ok", message=message, flag=flag)


def fail(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="fail", message=message, flag=flag)


def skip(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="skipped", message=message, flag=flag)


def warn(rule: str, message: str, flag: str | None = None) -> PreflightCheck:
    return PreflightCheck(rule=rule, status="warn", message=message, flag=flag)


def check_api_key(server: ServerConfig, env: Mapping[str, str]) -> list[PreflightCheck]:
    if not server.api_key_env:
        return []
    if env.get(server.api_key_env):
        return [ok("api_key", f"API key found in ${server.api_key_env}", "--api-key")]
    return [
        fail(
            "api_key",
            f"--api-key: server.api_key_env names ${server.api_key_env}, which is not set in the environment",
            "--api-key",
        )
    ]


def check_extra_args(server: ServerConfig, conflicts: list[tuple[str, str]]) -> list[PreflightCheck]:
    """``conflicts``: ``(flag, config field)`` of each ``extra_args`` flag the kind already builds from the
    config (``Kind.extra_args_conflicts``)."""
    if not conflicts:
        return (
            [ok("extra_args", "extra_args set no flag that the config already controls")]
            if server.extra_args
            else []
        )
    return [
        fail(
            "extra_args",
            f"{flag} in server.extra_args overrides config field {field}: set {field} instead "
            "(the report and the verification read the config)",
            flag,
        )
        for flag, field in conflicts
    ]


def check_model_path(cfg: RunConfig) -> list[PreflightCheck]:
    path = cfg.resolve_path(cfg.model.path)
    if not path.exists():
        return [
            fail(
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
            fail("model_path", f"--model-path {path}: no config.json in the model directory", "--model-path")
        ]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [fail("model_path", f"--model-path {path}: config.json unreadable ({exc})", "--model-path")]
    return [ok("model_path", f"{config_json} readable", "--model-path")]


def check_port(server: ServerConfig) -> list[PreflightCheck]:
    if server.port == 0:
        return [ok("port_free", "port 0: a free port is chosen at launch", "--port")]
    if port_in_use(server.host, server.port):
        return [
            fail(
                "port_free",
                f"--port {server.port} is already in use on {server.host} (another server running?)",
                "--port",
            )
        ]
    return [ok("port_free", f"{server.host}:{server.port} is free", "--port")]


def check_punkt(punkt_needed: str | None) -> list[PreflightCheck]:
    if not punkt_needed:
        return []
    # import cost: kept out of the kinds registry's import (server.nltk_data), loaded on this path only
    from evalpipe.server.nltk_data import PUNKT_TAB_FIX, punkt_tab_available

    if punkt_tab_available():
        return [ok("nltk_punkt_tab", f"NLTK punkt_tab found ({punkt_needed} sentence counting)")]
    return [
        warn(
            "nltk_punkt_tab",
            f"{punkt_needed} is selected but NLTK punkt_tab is missing: its sentence-count instructions cannot be "
            f"scored offline; {PUNKT_TAB_FIX}",
        )
    ]
