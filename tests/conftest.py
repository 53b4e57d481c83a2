"""Shared fixtures: the real benchmark files live beside the checkout in ../shared/datasets.

A test that reads them says so by requesting the ``shared_datasets`` fixture (as a parameter or through
another fixture); it is the only way a test gets the folder's path (helpers such as
``evalscope_helpers.picked_run`` take it as an argument), so a test cannot read the files without saying so.
Each such test carries the ``shared_datasets`` marker (so ``-m "not shared_datasets"`` runs the rest), and
when the folder is missing the session stops once, before any test runs, with one line naming the folder and
how to get it — instead of one error per test.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from helpers.paired_demo import PairedDemo
    from helpers.registry_controls import RegistryControls

# which tests share a pytest-xdist worker: a module stays together, the readers of a shared run join it
pytest_plugins = ("helpers.worker_groups",)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO.parent / "shared" / "datasets"


def shared_datasets_present() -> bool:
    return (SHARED_DATASETS / "gsm8k" / "test.jsonl").is_file()


def _needs_shared_datasets(item: pytest.Item) -> bool:
    return "shared_datasets" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before -m deselects, so "-m 'not shared_datasets'" sees the marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Markers from the fixtures a test uses: ``shared_datasets`` for a test that reads the real files; a
    15-minute timeout instead of the suite's 5 (pyproject) for a test using ``registry_controls``, which may
    pay for the session's two pipeline runs over every registered benchmark (minutes on a busy host)."""
    for item in items:
        if _needs_shared_datasets(item):
            item.add_marker(pytest.mark.shared_datasets)
        if "registry_controls" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(900))


def pytest_collection_finish(session: pytest.Session) -> None:
    if shared_datasets_present():
        return
    needing = sum(1 for item in session.items if _needs_shared_datasets(item))
    if needing:
        raise pytest.UsageError(
            f"{needing} of the {len(session.items)} selected tests read the real benchmark files, expected "
            f"beside the checkout at {SHARED_DATASETS} (not found): put the benchmark mirror there (layout and "
            "public sources: README, 'Tests and ../shared/datasets'), or run the others with "
            "-m 'not shared_datasets'"
        )


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not shared_datasets_present():
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


@pytest.fixture(scope="session")
def paired_demo(tmp_path_factory: pytest.TempPathFactory) -> PairedDemo:
    """The demo's GSM8K and C-Eval through the variants faults / clean / clean_again (with the speed stand-in),
    once per session, shared by the modules that only read it (``tests/helpers/paired_demo.py``)."""
    from helpers.paired_demo import run_paired_demo

    return run_paired_demo(tmp_path_factory.mktemp("paired-demo") / "run")
