"""``evalpipe run``: one run directory, its stages in order, each talking to the next through its files.

    sample → preflight → launch/attach + verify → materialize → EvalScope through the recording proxy
      → speed → stop → outcomes, provenance → audit

What runs is a :class:`~evalpipe.run.spec.RunSpec` (its stages are declared in ``evalpipe.run.stages``);
the runner (``evalpipe.run.runner``) keeps on a resume the stages whose outputs are complete and saves each
stage's wall time in ``timings.json``.  With ``variants:`` every variant runs this sequence on the same
manifest in ``RUN/<variant>/`` (audited once the first is compared with the others: ``evalpipe.run.variants``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.timings import StageName, StageTime
from evalpipe.evalscope_bridge.stage import StageResult
from evalpipe.run.runner import execute
from evalpipe.run.spec import RunSpec

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.summary import Summary
    from evalpipe.progress import ProgressDisplay


@dataclass
class RunResult:
    """What a finished run hands its caller; ``kept``: the stages a resume kept, their outputs complete."""

    rundir: RunDir
    manifest: Manifest
    index_map: IndexMap
    evalscope: StageResult
    outcomes: list[OutcomeRow]
    resumed: bool
    summary: Summary | None = None
    timings: list[StageTime] = field(default_factory=list)
    kept: list[StageName] = field(default_factory=list)


def run(plan: RunSpec, progress: ProgressDisplay | None = None) -> RunResult:
    """Execute ``plan``; the audit's verdict is raised by the caller (``summary.exit_code``)."""
    state = execute(plan, progress)
    return RunResult(
        state.rundir,
        state.spine.manifest,
        state.index_map,
        state.evalscope,
        state.outcomes,
        state.resuming,
        state.summary,
        timings=state.clock.stages,
        kept=state.kept,
    )
