"""Shared rich consoles (stdout for results, stderr for diagnostics).

When output is not a terminal (CI logs, pipes) rich would wrap tables at 80 columns; 120 keeps the
results table readable there.  ``COLUMNS`` still wins when set.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from rich.console import Console


def _width(stream: TextIO) -> int | None:
    if os.environ.get("COLUMNS") or stream.isatty():
        return None
    return 120


out = Console(highlight=False, width=_width(sys.stdout))
err = Console(stderr=True, highlight=False, width=_width(sys.stderr))
