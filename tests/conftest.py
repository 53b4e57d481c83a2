"""Shared fixtures: the real benchmark files live beside the checkout in ../shared/datasets."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not (SHARED_DATASETS / "gsm8k" / "test.jsonl").is_file():
        pytest.fail(f"real benchmark files not found at {SHARED_DATASETS} (expected beside the checkout)")
    return SHARED_DATASETS


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO
