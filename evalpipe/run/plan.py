"""``RunPlan``: what one run does — its config, its origin, its server, its coordination with other
variants — and the ordered stages that follow from them (``evalpipe.run.stages``).

A plan is a value: tests build one and read its stages without running anything; ``evalpipe.run.pipeline.run``
executes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalpipe.config.models import RunConfig
from evalpipe.run.options import Coordination, Origin, ServerTarget
from evalpipe.run.stages import Stage, declared_stages


@dataclass(frozen=True)
class RunPlan:
    """One run: ``cfg`` (the config as given), ``origin`` (fresh, resumed, extended or a caller's spine),
    ``target`` (the server), ``coordination`` (with the other variants of a paired run); ``audit`` False
    when the caller audits (the variants of a paired run are audited again beside their comparison).
    ``stages`` are derived from these, never given."""

    cfg: RunConfig
    origin: Origin
    target: ServerTarget = field(default_factory=ServerTarget)
    coordination: Coordination = field(default_factory=Coordination)
    audit: bool = True
    stages: tuple[Stage, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stages", declared_stages(self))
