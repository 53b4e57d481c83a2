"""What a stage declares: its name, the run-directory files it reads and writes, what it does, and how a
resume keeps it.

The declarations are what the runner (``evalpipe.run.runner``) acts on — a resume keeps a stage whose
:class:`Reuse` rule finds its outputs complete, and each stage's wall time is saved under its name in
``timings.json`` — and what ``tests/run/test_run_stages.py`` holds against a real run directory: every declared
output a stage always writes is there, and every file there is declared.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.timings import StageName

if TYPE_CHECKING:
    from evalpipe.run.stages.state import RunState

#: A run directory at ``.``: its paths, relative, are the names declarations use (``RunDir`` spells them).
AT = RunDir(Path("."))


@dataclass(frozen=True)
class RunFile:
    """One file of a run directory, or every file under a folder (``tree``), relative to the directory; a
    ``*`` in a part matches any name there (``server/workers/*``).  ``only`` says when the file is written
    if not on every run of its stage (``--extend`` only, behind a router only …); None: always."""

    path: PurePosixPath
    tree: bool = False
    only: str | None = None

    def covers(self, rel: PurePosixPath) -> bool:
        """Whether the file at ``rel`` (relative to the run directory) is this one, or under this folder."""
        parts = self.path.parts
        if self.tree:
            head = rel.parts[: len(parts)]
            return len(rel.parts) > len(parts) and all(
                fnmatchcase(a, b) for a, b in zip(head, parts, strict=True)
            )
        return len(rel.parts) == len(parts) and all(
            fnmatchcase(a, b) for a, b in zip(rel.parts, parts, strict=True)
        )


def file(path: Path | str, *, only: str | None = None) -> RunFile:
    """A file at ``path`` (a path of :data:`AT`, or a name its own module spells)."""
    return RunFile(PurePosixPath(Path(path).as_posix()), only=only)


def tree(path: Path | str, *, only: str | None = None) -> RunFile:
    """Every file under the folder at ``path``."""
    return RunFile(PurePosixPath(Path(path).as_posix()), tree=True, only=only)


@dataclass(frozen=True)
class Reuse:
    """How a resume keeps a stage instead of running it again.

    ``complete``: the stage's outputs are already complete and valid for this run (each stage's own rule: a
    manifest that reloads, a ``speed.json`` holding every round of this config).  ``keep``: what the kept
    stage does instead — load its outputs for the stages after it, or say they were kept.  A stage without a
    ``Reuse`` runs again on every resume (EvalScope's cache makes that cheap where it can be trusted)."""

    complete: Callable[[RunState], bool]
    keep: Callable[[RunState], None]


@dataclass(frozen=True)
class Stage:
    """One step of a run: ``run`` reads ``inputs`` (run-directory files earlier stages wrote) and writes
    ``outputs``; what it hands on in memory (the loaded manifest, the server's handle) goes through the
    :class:`~evalpipe.run.stages.state.RunState`.

    ``wall_time`` False: the stage times itself through ``state.clock`` (waiting at the speed barrier is
    not measuring), and the runner adds nothing under its name."""

    name: StageName
    inputs: tuple[RunFile, ...]
    outputs: tuple[RunFile, ...]
    run: Callable[[RunState], None]
    reuse: Reuse | None = None
    wall_time: bool = True

    def writes(self, rel: PurePosixPath) -> bool:
        """Whether ``rel`` is one of this stage's declared outputs."""
        return any(f.covers(rel) for f in self.outputs)
