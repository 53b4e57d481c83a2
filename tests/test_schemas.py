"""Every published JSON Schema in audits/ matches the model it is generated from."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.resolve.published import PUBLISHED, render


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_committed_schema_in_sync(name: str, repo_root: Path) -> None:
    committed = repo_root / "audits" / name
    assert committed.is_file(), f"audits/{name} missing: run `make schemas`"
    assert committed.read_text() == render(PUBLISHED[name]), f"audits/{name} is stale: run `make schemas`"
