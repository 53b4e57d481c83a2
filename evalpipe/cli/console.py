"""Shared rich consoles (stdout for results, stderr for diagnostics).

When output is not a terminal (CI logs, pipes) rich would wrap tables at 80 columns; 120 keeps the
results table readable there.  ``COLUMNS`` still wins when set.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import TaskID


def _width(stream: TextIO) -> int | None:
    if os.environ.get("COLUMNS") or stream.isatty():
        return None
    return 120


out = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, width=_width(sys.stderr))


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
