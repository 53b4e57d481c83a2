"""Shared fixtures: the real benchmark files live beside the checkout in ../shared/datasets."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from helpers.registry_controls import RegistryControls

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


@pytest.fixture(scope="session")
def registry_controls(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> RegistryControls:
    """The self-test's positive and negative controls through the whole pipeline, once per session, on the
    benchmarks the selected tests need: each test using this fixture that is parametrised by a benchmark
    ``name`` needs that one, any other needs every registered benchmark.  So ``-k <benchmark>`` on the
    contract test runs the pipeline for that benchmark alone."""
    from helpers.registry_controls import run_registry_controls

    from evalpipe.benchmarks import names

    wanted: set[str] = set()
    for item in request.session.items:
        if "registry_controls" not in getattr(item, "fixturenames", ()):
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        if "name" not in params:
            wanted = set(names())
            break
        wanted.add(params["name"])
    chosen = [n for n in names() if n in wanted] or list(names())
    return run_registry_controls(tmp_path_factory.mktemp("registry-controls"), chosen)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test using ``registry_controls`` may pay for the session's two pipeline runs over every registered
    benchmark (minutes on a busy host): it gets 15 minutes instead of the suite's 5 (pyproject timeout)."""
    for item in items:
        if "registry_controls" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(900))
