"""What one run is asked to do, in three typed parts that a :class:`~evalpipe.run.spec.RunSpec` holds.

* the **origin** — where the run directory and its manifest come from: sampled afresh (:class:`FreshRun`),
  continued (:class:`ResumedRun`), grown from a smaller run (:class:`ExtendedRun`), or handed over already
  sampled by a caller that shares one manifest between several runs (:class:`SampledRun`: a variant, a
  replay);
* the **server target** — which server the run talks to (:class:`ServerTarget`);
* the **coordination** with the other variants of a paired run (:class:`Coordination`): who measures the
  speed benchmark, and the sequential rule's arm.

Each part is a value a caller builds from its own flags; the combinations a union cannot express (``--out``
beside ``--resume``) are refused where the origin is built (:func:`origin_from_flags`), before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir
from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.errors import ConfigError
from evalpipe.resolve import ATTACHED_KIND
from evalpipe.run.extend import Extension
from evalpipe.run.sample import Spine
from evalpipe.server.variants import effective_server

if TYPE_CHECKING:
    from evalpipe.run.sequential_stop import SequentialArm
    from evalpipe.speed.barrier import VariantBarrier


@dataclass(frozen=True)
class FreshRun:
    """Sample a new manifest into ``out`` (None: a new directory under the config's ``output_root``)."""

    out: Path | None = None
    dataset_root: Path | None = None
    allow_drift: bool = False


@dataclass(frozen=True)
class ResumedRun:
    """Continue ``run_dir``: its manifest is reloaded, never re-sampled, and its cached answers are
    identity-checked before they are reused."""

    run_dir: Path
    dataset_root: Path | None = None


@dataclass(frozen=True)
class ExtendedRun:
    """``--extend``: a larger selection that contains ``old_run``'s, whose answers seed this run's cache."""

    old_run: Path
    out: Path | None = None
    dataset_root: Path | None = None
    allow_drift: bool = False


@dataclass(frozen=True)
class SampledRun:
    """A spine the caller sampled (the variants of a paired run share one manifest; a replay copies one): the
    run has no sampling stage.  ``resuming``: the directory already holds this run's EvalScope outputs, which
    a resume continues; ``extension``: what ``--extend`` reuses from this variant's arm of the old run."""

    spine: Spine
    resuming: bool = False
    extension: Extension | None = None


Origin = FreshRun | ResumedRun | ExtendedRun | SampledRun


def resuming(origin: Origin) -> bool:
    """Whether the run continues a directory that already holds its outputs (stages whose outputs are
    complete are then kept, ``evalpipe.run.runner``)."""
    if isinstance(origin, ResumedRun):
        return True
    return isinstance(origin, SampledRun) and origin.resuming


def origin_from_flags(
    *,
    out: Path | None,
    resume: Path | None,
    extend: Path | None,
    dataset_root: Path | None,
    allow_drift: bool,
) -> Origin:
    """The origin ``evalpipe run``'s flags name; ``--out`` and ``--resume`` naming different directories is
    a usage error (``--extend`` with ``--resume`` is refused by the command before the config loads)."""
    if resume is not None:
        if out is not None and Path(out).resolve() != Path(resume).resolve():
            raise ConfigError("--out and --resume name different run directories")
        return ResumedRun(Path(resume), dataset_root)
    if extend is not None:
        return ExtendedRun(Path(extend), out, dataset_root, allow_drift)
    return FreshRun(out, dataset_root, allow_drift)


def known_rundir(origin: Origin) -> RunDir | None:
    """The run directory before any stage ran: a resumed one, a caller's spine; None until sampling names it."""
    if isinstance(origin, ResumedRun):
        return RunDir(origin.run_dir)
    if isinstance(origin, SampledRun):
        return origin.spine.rundir
    return None


@dataclass(frozen=True)
class ServerTarget:
    """The server this run talks to: ``variant``'s launch settings (None: the config's own server), or, with
    ``endpoint``, an attachment to a server already running there."""

    endpoint: str | None = None
    variant: str | None = None

    def server(self, cfg: RunConfig) -> ServerConfig:
        """The (variant's) launch config, or an attachment to ``endpoint``; attached, the config's server
        settings are still what ``/server_info`` is verified against."""
        server = effective_server(cfg, self.variant)
        if self.endpoint:
            return server.model_copy(update={"kind": ATTACHED_KIND, "endpoint": self.endpoint})
        return server


@dataclass(frozen=True)
class ParentSpeed:
    """A variant of ``parallel_variants`` whose speed benchmark is the parent's: with ``barrier`` its server
    waits, up, at the barrier for the alternating rounds (``evalpipe.speed.barrier``); without, the rounds are
    already in the run (a resume) and nothing is measured."""

    barrier: VariantBarrier | None = None


@dataclass(frozen=True)
class Coordination:
    """How this run shares work with the other variants of a paired run.

    ``parent_speed``: None when the run measures its own speed benchmark (a single run, a variant run in
    turn).  ``sequential_arm``: with ``generation.sequential.in_run``, the rule stops this variant's gated
    benchmarks inside its EvalScope stage (``evalpipe.run.sequential_stop``)."""

    parent_speed: ParentSpeed | None = None
    sequential_arm: SequentialArm | None = None
