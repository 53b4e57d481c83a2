"""``evalpipe sample`` and ``evalpipe verify-sample`` (filled in with the sampler)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    return None
