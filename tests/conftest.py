"""Shared fixtures: the real benchmark files live beside the checkout in ../shared/datasets.

A test that reads them says so by requesting the ``shared_datasets`` fixture (as a parameter or through
another fixture); it is the only way a test gets the folder's path (helpers such as
``evalscope_helpers.picked_run`` take it as an argument), so a test cannot read the files without saying so.
Each such test carries the ``shared_datasets`` marker (so ``-m "not shared_datasets"`` runs the rest), and
when the folder is missing the session stops once, before any test runs, with one line naming the folder and
how to get it — instead of one error per test.

Every test is in one of two tiers, decided from what it uses (``helpers.tiers`` says how): ``integration``
(it starts a process: a server, the EvalScope worker, a sandbox, the router, a nested pytest…) or the unit
tier (everything else; ``make test-fast`` runs ``-m "not integration"``).  A unit-tier test that starts a
process anyway fails with one line naming the entry point to add.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.tiers import classify, install_guard, recall_scans, remembered_scans, sources_digest

if TYPE_CHECKING:
    from helpers.paired_demo import PairedDemo
    from helpers.registry_controls import RegistryControls

# which tests share a pytest-xdist worker: a module stays together, the readers of a shared run join it
# the integration tier's EvalScope workers: forked by one fork server per pytest process
pytest_plugins = ("helpers.worker_groups", "helpers.worker_forkserver")

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
    recalled = _recall_scans(config)
    for item in items:
        if _needs_shared_datasets(item):
            item.add_marker(pytest.mark.shared_datasets)
        if "registry_controls" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.timeout(900))
        _mark_tier(item)
    config.stash[_COLLECTED] = _tier_counts(items)
    _remember_scans(config, recalled)


#: pytest's cache key of the tier scans (``.pytest_cache``; absent with ``-p no:cacheprovider``)
_SCANS_KEY = "evalpipe/tier-scans"


def _recall_scans(config: pytest.Config) -> tuple[str, int] | None:
    """The scans of an earlier session over the same test sources, from pytest's cache: every xdist worker
    and every later run (``make test-fast`` after ``make test``) would otherwise walk the same trees.
    Returns (the sources' digest, how many scans were recalled), or None without a cache."""
    cache = getattr(config, "cache", None)
    if cache is None:
        return None
    digest = sources_digest()
    saved = cache.get(_SCANS_KEY, None)
    if isinstance(saved, dict) and saved.get("digest") == digest and isinstance(saved.get("scans"), dict):
        recall_scans(saved["scans"])
        return digest, len(saved["scans"])
    return digest, 0


def _remember_scans(config: pytest.Config, recalled: tuple[str, int] | None) -> None:
    """Saves the scans when this session made any the cache did not hold."""
    cache = getattr(config, "cache", None)
    if cache is None or recalled is None:
        return
    scans = remembered_scans()
    if len(scans) > recalled[1]:
        cache.set(_SCANS_KEY, {"digest": recalled[0], "scans": scans})


_TIER = pytest.StashKey[str]()  # "scan" / "fixture" / "manual" for integration, "unit" otherwise
_VIOLATIONS = pytest.StashKey[list[str]]()


def _fixture_functions(item: pytest.Item) -> dict[str, Callable[..., Any] | None]:
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) if info is not None else {}
    return {
        name: (defs[name][-1].func if defs.get(name) else None) for name in getattr(item, "fixturenames", ())
    }


def _mark_tier(item: pytest.Item) -> None:
    """``integration`` from the test's own code or its fixtures (``helpers.tiers.classify``), or by hand."""
    if item.get_closest_marker("integration") is not None:
        item.stash[_TIER] = "manual"
        return
    finding = classify(getattr(item, "function", None), _fixture_functions(item))
    if finding is None:
        item.stash[_TIER] = "unit"
        return
    item.stash[_TIER] = finding.source
    item.add_marker(pytest.mark.integration(why=finding.describe()))


_COLLECTED = pytest.StashKey[str]()


def _tier_counts(items: list[pytest.Item]) -> str:
    tiers = [item.stash.get(_TIER, "unit") for item in items]
    integration = len(tiers) - tiers.count("unit")
    return (
        f"{tiers.count('unit')} unit, {integration} integration ({tiers.count('scan')} by the scan of the "
        f"test's code, {tiers.count('fixture')} by a fixture, {tiers.count('manual')} marked by hand)"
    )


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> str:
    """The tier counts of the collected tests, and of the selected ones when ``-m``/``-k`` deselected some."""
    collected = config.stash.get(_COLLECTED, "")
    selected = _tier_counts(items)
    return f"tiers: {collected}" + (f"; selected: {selected}" if selected != collected else "")


def _guarded(item: pytest.Item) -> Generator[None, object, object]:
    if item.get_closest_marker("integration") is not None:
        return (yield)
    violations = item.stash.setdefault(_VIOLATIONS, [])
    with install_guard(item.nodeid, violations):
        return (yield)


# A unit-tier test may not start a process, in its set-up or its call (``helpers.tiers``).  Not in its
# tear-down: that is where pytest also ends the module and session fixtures of the tests before it.
@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    """A unit-tier test that started a process fails even when it caught the error the guard raised."""
    report = yield
    violations = item.stash.get(_VIOLATIONS, [])
    if violations and report.when in ("setup", "call") and not report.skipped:
        report.outcome = "failed"
        report.longrepr = violations[0]  # the one line, not the traceback through the guard
    return report


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
