"""What the stages ask of a progress display, so that either kind fits: rich's ``Progress`` (bars on a
terminal) or ``evalpipe.cli.console.LineProgress`` (one line per benchmark in a log).

A leaf at the top of the package: the stages (``evalscope_bridge``, ``run``, ``replay``, ``selftest``) name it
in their signatures, and from ``run/`` it made the EvalScope stage import the package that runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID


class ProgressDisplay(Protocol):
    """One task per benchmark: added with its total, advanced per sample, printed beside."""

    @property
    def console(self) -> Console: ...

    def add_task(self, description: str, *, total: float | None = ...) -> TaskID: ...

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = ...,
        completed: float | None = ...,
        advance: float | None = ...,
        description: str | None = ...,
    ) -> None: ...
