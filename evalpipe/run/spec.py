"""``RunSpec``: what one run does — its resolved config, its origin, its server, its coordination with other
variants.  The ordered stages follow from it (``evalpipe.run.stages.declared_stages``).

A spec is a value: tests build one and read its stages without running anything; ``evalpipe.run.pipeline.run``
executes it.  It carries the :class:`~evalpipe.resolve.ResolvedRun` it was made from, so the stages take
the server's kind (``kind``) and the benchmarks' plugins (``benchmarks``) from it and look nothing up again.
It imports no stage: the stages read the spec, so a spec naming its stages made the two a cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalpipe.benchmarks import Benchmark
from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.resolve import ResolvedRun
from evalpipe.run.options import Coordination, Origin, ServerTarget
from evalpipe.server.kinds.base import Kind


@dataclass(frozen=True)
class RunSpec:
    """One run: ``run`` (the config as given, its plugins resolved), ``origin`` (fresh, resumed, extended or
    a caller's spine), ``target`` (the server), ``coordination`` (with the other variants of a paired run);
    ``audit`` False when the caller audits (the variants of a paired run, once, after their comparison).
    ``server`` (the target's launch settings) and ``kind`` (its kind) are derived from these, never given;
    so are its stages (``declared_stages``)."""

    run: ResolvedRun
    origin: Origin
    target: ServerTarget = field(default_factory=ServerTarget)
    coordination: Coordination = field(default_factory=Coordination)
    audit: bool = True
    server: ServerConfig = field(init=False)
    kind: Kind = field(init=False)

    def __post_init__(self) -> None:
        server = self.target.server(self.cfg)
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "kind", self.run.kinds[server.kind])

    @property
    def cfg(self) -> RunConfig:
        return self.run.config

    @property
    def benchmarks(self) -> Mapping[str, Benchmark]:
        """Each configured benchmark's plugin, by name."""
        return self.run.benchmarks
