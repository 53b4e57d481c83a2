"""Shared rich consoles (stdout for results, stderr for diagnostics)."""

from __future__ import annotations

from rich.console import Console

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)
