"""Preflight: refuse a launch that would fail or would not test what the config claims.

Runs before any GPU time is spent (a GLM-class model takes many minutes to load).  Every rule returns
a :class:`PreflightCheck`; a ``fail`` aborts with exit 2 and a message naming the flag, a ``warn`` is
shown loudly and recorded.  Rules for every kind: the API key variable is set, ``extra_args`` set no flag
the config already controls, NLTK ``punkt_tab`` is there when IFEval-like scoring needs it.  Everything
else is the server kind's (``Kind.preflight``): for SGLang the argv parses with the installed SGLang's own
parser, the parser names exist, the raw-FP8 TileLang policy, the model path,
the GPUs; for launched servers the port is free; for ``command`` the executable exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from evalpipe.artifacts import write_model
from evalpipe.artifacts.redact import redact_argv
from evalpipe.artifacts.schema.server import PreflightCheck, PreflightReport
from evalpipe.errors import ConfigError, PreflightError
from evalpipe.server.launch_env import server_env
from evalpipe.server.preflight_rules import check_api_key, check_extra_args, check_punkt
from evalpipe.server.variants import effective_server

if TYPE_CHECKING:
    from evalpipe.artifacts import RunDir
    from evalpipe.config.models import RunConfig, ServerConfig
    from evalpipe.server.kinds.base import Kind


class PreflightRefused(PreflightError):
    """The preflight rules ran and at least one failed; ``report`` holds every rule's outcome."""

    def __init__(self, message: str, *, details: list[str] | None = None, report: PreflightReport) -> None:
        super().__init__(message, details=details)
        self.report = report


def run_preflight(
    cfg: RunConfig,
    server: ServerConfig,
    *,
    punkt_needed: str | None,
    variant: str | None = None,
    env: Mapping[str, str] | None = None,
    rundir: RunDir | None = None,
    kind: Kind,
) -> PreflightReport:
    """Evaluate every rule; raise PreflightRefused (a PreflightError: exit 2) naming the flag if any fails.

    ``kind``: the server's kind as the run resolved it.
    ``env`` is the environment the server would get (default: ours plus ``server.env``).  With
    ``rundir`` the report is also written to ``server/preflight.json`` (also on failure).  The raised
    ``PreflightRefused`` carries the report as ``exc.report``.
    """
    env = dict(env) if env is not None else server_env(server)
    checks: list[PreflightCheck] = []
    checks += check_api_key(server, env)
    checks += check_extra_args(server, kind.extra_args_conflicts(server))
    own = kind.preflight(cfg, server, env)
    checks += own.checks
    checks += check_punkt(punkt_needed)

    report = PreflightReport(
        kind=server.kind,
        variant=variant,
        sglang_version=own.engine_version,
        argv=redact_argv(own.argv),
        checks=checks,
        ok=not any(c.status == "fail" for c in checks),
    )
    if rundir is not None:
        write_model(rundir.server_preflight, report)
    if not report.ok:
        fails = report.failures
        first = fails[0].message
        more = f" (+{len(fails) - 1} more)" if len(fails) > 1 else ""
        raise PreflightRefused(
            f"preflight: {first}{more}", details=[c.message for c in fails[1:]], report=report
        )
    return report


def preflight_for(
    cfg: RunConfig,
    variant: str | None = None,
    *,
    kinds: Mapping[str, Kind],
    punkt_needed: str | None,
    rundir: RunDir | None = None,
) -> PreflightReport:
    """Convenience for the CLI: effective server for ``variant``, its kind from ``kinds`` (the resolved run's:
    every kind a server of the run may be); ``punkt_needed`` as ``run_preflight`` takes it (the caller reads
    it from the run's benchmarks, the server package does not)."""
    server = effective_server(cfg, variant)
    try:
        return run_preflight(
            cfg, server, punkt_needed=punkt_needed, variant=variant, rundir=rundir, kind=kinds[server.kind]
        )
    except ConfigError as exc:  # e.g. the API key variable missing while building the argv
        raise PreflightError(exc.message, details=exc.details) from None
