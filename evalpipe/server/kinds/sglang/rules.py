"""SGLang's own preflight rules: the installed SGLang's argument parser accepts the argv
(``dry_parse``), and the configured reasoning and tool-call parsers are names it knows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.server.chat_template import NO_REASONING_PARSER
from evalpipe.server.kinds.sglang import flags
from evalpipe.server.kinds.sglang.env import SglangProbe, dry_parse
from evalpipe.server.launch_env import API_KEY_PLACEHOLDER_PREFIX
from evalpipe.server.preflight_rules import fail, ok, skip, warn

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import PreflightCheck
    from evalpipe.config.models import RunConfig


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
