"""What the stages of one run hand each other in memory.

The files are the run's record, and each stage declares the ones it reads and writes; this holds what is
not a file — the loaded datasets, the live server handle, the EvalScope worker — and the values a stage
would otherwise read back just after the stage before it wrote them.  Each value is set by the stage that
produces it; asking for one before then is an ordering mistake in the stage list, named as such.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.timings import StageName
from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.evalscope_bridge.runner import WorkerProcess
from evalpipe.evalscope_bridge.stage import StageResult
from evalpipe.run.extend import Extension
from evalpipe.run.options import resuming
from evalpipe.run.sample import Spine
from evalpipe.run.stage_clock import StageClock

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.context_fit import ContextFit
    from evalpipe.artifacts.schema.provenance import ComponentTestResult
    from evalpipe.artifacts.schema.summary import Summary
    from evalpipe.progress import ProgressDisplay
    from evalpipe.run.spec import RunSpec
    from evalpipe.server.kinds.base import Kind, ServerHandle

logger = logging.getLogger(__name__)

T = TypeVar("T")


def _handed_on(value: T | None, what: str) -> T:
    if value is None:
        raise RuntimeError(
            f"{what}: asked for before the stage that produces it ran (the stage order is wrong)"
        )
    return value


@dataclass
class RunState:
    """One run's hand-offs between stages (see the module docstring).

    ``server_scope`` holds the server's lifetime: the launch stage enters it, the stop stage closes it, and
    the runner closes it on the way out of a failed run, so what was launched is always stopped."""

    plan: RunSpec
    progress: ProgressDisplay | None
    upstream_path: str
    started_at: str
    clock: StageClock
    server_scope: ExitStack = field(default_factory=ExitStack)
    extension: Extension | None = None
    worker: WorkerProcess | None = None
    component_results: list[ComponentTestResult] = field(default_factory=list)
    kept: list[StageName] = field(default_factory=list)
    outcomes: list[OutcomeRow] = field(default_factory=list)
    summary: Summary | None = None
    _spine: Spine | None = None
    _fit: ContextFit | None = None
    _index_map: IndexMap | None = None
    _handle: ServerHandle | None = None
    _evalscope: StageResult | None = None

    @property
    def cfg(self) -> RunConfig:
        return self.plan.cfg

    @property
    def server(self) -> ServerConfig:
        return self.plan.server

    @property
    def kind(self) -> Kind:
        return self.plan.kind

    @property
    def variant(self) -> str | None:
        return self.plan.target.variant

    @property
    def resuming(self) -> bool:
        return resuming(self.plan.origin)

    @property
    def has_spine(self) -> bool:
        return self._spine is not None

    @property
    def spine(self) -> Spine:
        return _handed_on(self._spine, "the manifest")

    @spine.setter
    def spine(self, value: Spine) -> None:
        self._spine = value

    @property
    def rundir(self) -> RunDir:
        return self.spine.rundir

    @property
    def fit(self) -> ContextFit:
        return _handed_on(self._fit, "the context fit")

    @fit.setter
    def fit(self, value: ContextFit) -> None:
        self._fit = value

    @property
    def index_map(self) -> IndexMap:
        return _handed_on(self._index_map, "the index map")

    @index_map.setter
    def index_map(self, value: IndexMap) -> None:
        self._index_map = value

    @property
    def handle(self) -> ServerHandle:
        return _handed_on(self._handle, "the server")

    @handle.setter
    def handle(self, value: ServerHandle) -> None:
        self._handle = value

    @property
    def evalscope(self) -> StageResult:
        return _handed_on(self._evalscope, "the EvalScope stage's result")

    @evalscope.setter
    def evalscope(self, value: StageResult) -> None:
        self._evalscope = value

    def notice(self, line: str) -> None:
        """A stage's one-line notice: on the progress display's console, else in the log."""
        if self.progress is None:
            logger.info(line)
        else:
            self.progress.console.print(line, markup=False, soft_wrap=True)

    def say(self) -> Callable[[str], None]:
        """Where the speed rounds report, one line each: the progress display's console, else stderr."""
        progress = self.progress
        if progress is not None:
            return lambda line: progress.console.print(line, markup=False, highlight=False)
        return lambda line: print(line, file=sys.stderr, flush=True)
