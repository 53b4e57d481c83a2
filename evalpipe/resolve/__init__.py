"""The resolve step: a plain-data run config, its plugins looked up — a frozen :class:`ResolvedRun`.

``evalpipe.config`` reads YAML into models that depend on nothing but ``errors``: a benchmark, a
stratification and a server kind are strings there.  This step, one layer above the plugins, asks the
registries what those strings name (a speed client's too) and runs the checks only a plugin can answer — a benchmark whose review
runs no code takes no ``review_timeout_s``, a benchmark with a fixed schema names no columns, each kind's own
section of ``server:`` (``Kind.check_config``), ``server.settings`` against the kind's settings model
(``Kind.settings_errors``) and each variant's overrides applied to it, a command naming the module an engine was started by before it
moved (``evalpipe.engines.FORMER_MODULES``) — and reports every failure as one line naming the YAML file,
line and field, like a validation error of the models (the same ``ConfigError``, exit code 2).

The resolved run is what a run carries (``evalpipe.run.spec.RunSpec``): its stages take each benchmark's
plugin and the server's kind from it and look nothing up again.  Every command that acts on a config goes
through :func:`load_run`; reading a recorded run's ``config.yaml``
for its numbers (audit, compare) needs only :func:`evalpipe.config.loader.load_config`, so a run whose
benchmark plugin is not installed here can still be audited.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from evalpipe.benchmarks import REGISTRY as BENCHMARKS
from evalpipe.benchmarks import Benchmark, stratifications
from evalpipe.config.loader import (
    YamlLines,
    format_loc,
    load_config_lines,
    moved_settings_notice,
    resolve_sampling_rule,
)
from evalpipe.config.models import BenchmarkConfig, RunConfig, SamplingRule
from evalpipe.engines import FORMER_MODULES
from evalpipe.errors import ConfigError
from evalpipe.server.kinds.registry import Kind, kinds, server_kind
from evalpipe.server.overrides import with_overrides
from evalpipe.server.variants import effective_server
from evalpipe.speed.clients.registry import clients as speed_clients

__all__ = ["ATTACHED_KIND", "ResolvedRun", "load_run", "resolve"]


#: The kind a run attached to a running server (``evalpipe run --endpoint``) talks through.
ATTACHED_KIND = "endpoint"


@dataclass(frozen=True)
class ResolvedRun:
    """A run config whose names were found: each configured benchmark's plugin, the server's kind, and
    ``kinds``: every kind a server of this run may be — the server's, each variant's (its overrides
    applied), and :data:`ATTACHED_KIND` for an attachment — so the stages never look one up by name."""

    config: RunConfig
    benchmarks: Mapping[str, Benchmark]
    kind: Kind
    kinds: Mapping[str, Kind]

    def benchmark(self, name: str) -> Benchmark:
        return self.benchmarks[name]

    def derived(self, cfg: RunConfig) -> ResolvedRun:
        """A config made from this one in code (the speed section waived, a control's answer key, a
        replay's server), resolved: its plans were checked with this one's."""
        return resolve(cfg, check_sampling=False)


def one_of(names: tuple[str, ...], got: str) -> str:
    """The message a validation error gives for a value outside a fixed set (the models' literal wording)."""
    quoted = [repr(n) for n in names]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f"must be one of {listed} (got {got!r})"


class _Findings:
    """Failures of the resolve step, each placed on its YAML line."""

    def __init__(self, lines: YamlLines | None) -> None:
        self.lines = lines
        self.found: list[str] = []

    def add(self, loc: tuple[Any, ...], message: str, *, lines: YamlLines | None = None) -> None:
        where = lines or self.lines
        self.found.append(where.line(loc, message) if where is not None else f"{format_loc(loc)}: {message}")


def _check_benchmark(i: int, bench: BenchmarkConfig, spec: Benchmark, findings: _Findings) -> None:
    """The checks of a configured benchmark that only its plugin can answer."""
    meta = spec.meta
    at = ("benchmarks", i)
    if bench.review_timeout_s is not None and not meta.executes_code:
        findings.add(at, f"review_timeout_s: {bench.name} runs no code in its review (no per-test limit)")
    src = bench.source
    if not meta.user_files:
        for key in ("id_column", "stratify_column"):
            if getattr(src, key) is not None:
                findings.add(
                    at,
                    f"source.{key}: {bench.name} has a fixed schema; columns are named only for a benchmark "
                    "that reads your own files (general_mcq, general_qa)",
                )
        return
    if src.hub is not None:
        findings.add(at, f"source.hub: {bench.name} reads your own files; there is no hub copy")
    plan = bench.sampling
    if isinstance(plan, SamplingRule) and plan.stratify_by == "column" and src.stratify_column is None:
        findings.add(at, "sampling.stratify_by is 'column' but source.stratify_column names no column")


def _check_sampling_rule(cfg: RunConfig, i: int, bench: BenchmarkConfig, findings: _Findings) -> None:
    """The plan's stratification is one some benchmark offers (inline: on the config's line; a plan file:
    on the plan file's)."""
    known = stratifications()
    if isinstance(bench.sampling, SamplingRule):
        if bench.sampling.stratify_by not in known:
            findings.add(
                ("benchmarks", i, "sampling", "stratify_by"), one_of(known, bench.sampling.stratify_by)
            )
        return
    plan = resolve_sampling_rule(cfg, bench.name)
    if plan.stratify_by not in known:
        path = cfg.resolve_path(bench.sampling)
        findings.add(("stratify_by",), one_of(known, plan.stratify_by), lines=YamlLines.of(path))


def _check_engine_paths(cfg: RunConfig, findings: _Findings) -> None:
    """A server command naming a module an engine was started by before it moved (``FORMER_MODULES``)."""
    argvs: list[tuple[tuple[Any, ...], object]] = [(("server", "command"), cfg.server.command)]
    argvs += [
        (("variants", i, "overrides", "command"), v.overrides.get("command"))
        for i, v in enumerate(cfg.variants)
    ]
    for at, argv in argvs:
        if not isinstance(argv, list):
            continue
        for k, arg in enumerate(argv):
            if isinstance(arg, str) and arg in FORMER_MODULES:
                findings.add(
                    (*at, k), f"{arg!r} is now {FORMER_MODULES[arg]!r} (python -m {FORMER_MODULES[arg]})"
                )


def _check_server(cfg: RunConfig, findings: _Findings) -> Kind | None:
    server = cfg.server
    names = tuple(k.name for k in kinds())
    if server.kind not in names:
        findings.add(("server", "kind"), one_of(names, server.kind))
        return None
    if server.router is not None:
        unknown = [
            (j, w.kind)
            for j, w in enumerate(server.router.workers)
            if w.kind is not None and w.kind not in names
        ]
        for j, name in unknown:
            findings.add(("server", "router", "workers", j, "kind"), one_of(names, name))
        if unknown:  # the router's own check looks its workers' kinds up
            return None
    kind = server_kind(server.kind)
    try:
        kind.check_config(server)
    except ValueError as exc:
        findings.add(("server",), str(exc))
    for loc, message in kind.settings_errors(server):
        findings.add(("server", "settings", *loc), message)
    return kind


def _check_variants(cfg: RunConfig, findings: _Findings) -> None:
    """Each variant's server (its overrides applied, settings included) is one its kind accepts."""
    for i, variant in enumerate(cfg.variants):
        if variant.repeat_of is not None or not variant.overrides:
            continue
        try:
            with_overrides(cfg.server, variant.overrides, f"{variant.name}.overrides", variant.name, server_kind)
        except ConfigError as exc:
            for detail in exc.details or [exc.message]:
                findings.add(("variants", i, "overrides"), detail)


def resolve(cfg: RunConfig, lines: YamlLines | None = None, *, check_sampling: bool = True) -> ResolvedRun:
    """``cfg`` with its plugins looked up; ConfigError listing every failure on its line otherwise.

    ``check_sampling``: also check the stratification of plans kept in their own files (loading them)."""
    findings = _Findings(lines)
    found: dict[str, Benchmark] = {}
    registered = tuple(BENCHMARKS)
    for i, bench in enumerate(cfg.benchmarks):
        spec = BENCHMARKS.get(bench.name)
        if spec is None:
            findings.add(("benchmarks", i, "name"), one_of(registered, bench.name))
            continue
        found[bench.name] = spec
        _check_benchmark(i, bench, spec, findings)
        if check_sampling or isinstance(bench.sampling, SamplingRule):
            _check_sampling_rule(cfg, i, bench, findings)
    _check_engine_paths(cfg, findings)
    if cfg.speed is not None:
        registered_clients = tuple(c.name for c in speed_clients())
        if cfg.speed.client not in registered_clients:
            findings.add(("speed", "client"), one_of(registered_clients, cfg.speed.client))
    kind = _check_server(cfg, findings)
    if kind is not None and not findings.found:
        _check_variants(cfg, findings)
    if findings.found or kind is None:
        where = lines.path if lines is not None else cfg.config_path or "config"
        raise ConfigError(f"{where}: {len(findings.found)} error(s)", details=findings.found)
    return ResolvedRun(config=cfg, benchmarks=MappingProxyType(found), kind=kind, kinds=_kinds(cfg, kind))


def _kinds(cfg: RunConfig, kind: Kind) -> Mapping[str, Kind]:
    """The kinds of the config's server, of each variant's server and of an attachment (every variant's
    overrides were checked by ``_check_variants`` before this is called)."""
    names = {ATTACHED_KIND} | {effective_server(cfg, v.name).kind for v in cfg.variants}
    return MappingProxyType({kind.name: kind, **{n: server_kind(n) for n in sorted(names - {kind.name})}})


def load_run(path: Path, *, check_sampling: bool = True, notice: bool = True) -> ResolvedRun:
    """Read a run config (``evalpipe.config.loader``) and resolve it; a kind setting written at its old place
    (``server.tp_size``) is read under ``server.settings`` and named in one notice line on stderr
    (``notice=False``: a variant's process, whose parent said it already)."""
    cfg, lines = load_config_lines(path, check_sampling=check_sampling)
    resolved = resolve(cfg, lines, check_sampling=check_sampling)
    moved = moved_settings_notice(lines) if notice else None
    if moved is not None:
        print(moved, file=sys.stderr)
    return resolved
