"""What the stages ask of a progress display, so that either kind fits: rich's ``Progress`` (bars on a
terminal) or :class:`LineProgress` (one line per benchmark in a log; here because a variant's own process,
in ``run/``, prints its progress that way too).

A leaf at the top of the package: the stages (``evalscope_bridge``, ``run``, ``replay``, ``selftest``) name it
in their signatures, and from ``run/`` it made the EvalScope stage import the package that runs it."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

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


class LineProgress:
    """Progress for output that is not a terminal (``make demo > log 2>&1``, CI): no bars.

    rich cannot redraw bars in a file, so it prints their final state when the display stops — after the
    result tables.  This prints one line per benchmark when it completes instead, e.g.
    ``gsm8k (1 failed): 5/5 done in 3.2 s``.  It implements the part of ``rich.progress.Progress`` the
    stages use (``add_task``, ``update``, ``console``, context manager).
    """

    def __init__(self, console: Console) -> None:
        self.console = console
        self._tasks: list[dict[str, Any]] = []

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def add_task(self, description: str, total: float | None = None, **_: Any) -> TaskID:
        # import cost: rich, only on this path
        from rich.progress import TaskID

        self._tasks.append(
            {
                "description": description,
                "total": total,
                "completed": 0,
                "start": time.monotonic(),
                "done": False,
            }
        )
        return TaskID(len(self._tasks) - 1)

    def update(
        self,
        task_id: TaskID,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        **_: Any,
    ) -> None:
        t = self._tasks[task_id]
        if total is not None:
            t["total"] = total
        if completed is not None:
            t["completed"] = completed
        if advance is not None:
            t["completed"] += advance
        if description is not None:
            t["description"] = description
        if not t["done"] and t["total"] is not None and t["completed"] >= t["total"]:
            t["done"] = True
            elapsed = time.monotonic() - t["start"]
            self.console.print(
                f"{t['description']}: {t['completed']:g}/{t['total']:g} done in {elapsed:.1f} s",
                soft_wrap=True,
            )
