"""Which tests share a pytest-xdist worker (``make test`` runs ``pytest -n 3``, ``make test-fast`` ``-n 2``).

A module's tests stay on one worker, so its module-scoped fixtures (a pipeline run, a real engine) are built
once; the modules reading one of the session's shared runs (``READERS``: a session fixture in conftest that
builds whole pipeline runs) share one worker, so that run is built once and every reader finds it there.

The scheduler sees test ids only, never fixtures, so the readers are listed here; collection checks the
list against the fixtures the tests request (a new reader that is not listed stops the session with one
line), with or without xdist.  (xdist's own ``--dist loadgroup`` marks do not group under pytest 9, whose
node ids are no longer the attribute that xdist 3.8 rewrites.)
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from xdist.scheduler import LoadScopeScheduling

#: shared session run (conftest fixture) -> the modules that read it
READERS: dict[str, tuple[str, ...]] = {
    "registry_controls": (
        "tests/benchmarks/test_benchmark_contract.py",
        "tests/benchmarks/test_gpqa_diamond.py",
        "tests/benchmarks/test_math_500.py",
        "tests/selftest/test_selftest_controls.py",
    ),
    "paired_demo": (
        "tests/run/test_aa_control_e2e.py",
        "tests/explore/test_explorer_browser.py",
        "tests/replay/test_paired_replay_e2e.py",
        "tests/speed/test_speed_pipeline.py",
    ),
}
GROUP_OF = {module: run for run, modules in READERS.items() for module in modules}

#: the slowest groups (the suite's durations on 2026-12-04, 150-435 s each on a loaded 2-core host): under
#: xdist they start first, so that no worker is left alone with a long module at the end.  Order only: which
#: tests run, and on which worker they share fixtures, never depends on it.
SLOW_FIRST = (
    "tests/engines/test_real_model.py",
    "tests/benchmarks/test_code_recheck.py",
    "registry_controls",
    "tests/benchmarks/test_live_code_bench.py",
    "paired_demo",
    "tests/speed/test_speed_parallel.py",
    "tests/cli/test_run_cli.py",
    "tests/engines/test_real_model_own_files.py",
    "tests/speed/test_speed_real.py",
    # added 2026-12-05 (20-45 s each: a real router with two llama.cpp workers, three answer-key servers)
    "tests/server/test_fleet_watch.py",
    "tests/run/test_sequential_demo.py",
    "tests/server/test_fleet_run.py",
    "tests/recording/test_admission.py",
    # the pilot's end-to-end test (40-57 s in the suite on 2026-12-06: four passes of EvalScope's forked math scoring)
    "tests/run/test_pilot_e2e.py",
    # a piloted three-arm run interrupted at every phase and resumed, twice, beside its baseline (2026-12-07)
    "tests/run/test_run_faults.py",
    # the unit tier's largest modules (the plan's simulations ~10 s of CPU, the others 3-5 s, 2026-12-06):
    # first among the unit tier, so that make test-fast's two workers finish together instead of one waiting
    # on a late heavy module
    "tests/plan/test_plan_operating.py",
    "tests/samplers/test_sampling.py",
    "tests/stats/test_stats_paired.py",
    "tests/repo/test_layers.py",
)


def group_of(nodeid: str) -> str:
    """A test's worker group: the shared run its module reads, else its module."""
    module = nodeid.split("::")[0]
    return GROUP_OF.get(module, module)


def slow_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with the groups of ``SLOW_FIRST`` first, in its order; otherwise in collection order."""
    rank = {group: i for i, group in enumerate(SLOW_FIRST)}
    return sorted(items, key=lambda item: rank.get(group_of(item.nodeid), len(rank)))


def unlisted_readers(items: list[pytest.Item]) -> list[str]:
    """``module: fixture`` for every module using a shared run without being listed in ``READERS``."""
    found = {
        (item.nodeid.split("::")[0], run)
        for item in items
        for run in READERS
        if run in getattr(item, "fixturenames", ())
    }
    return sorted(f"{module}: {run}" for module, run in found if module not in READERS[run])


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """In an xdist worker, the slow groups first (the scheduler hands out groups in this order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = slow_first(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    unlisted = unlisted_readers(session.items)
    if unlisted:
        raise pytest.UsageError(
            f"{', '.join(unlisted)}: reads a shared session run without being listed in "
            "tests/helpers/worker_groups.py READERS (under xdist the run would be built on several workers)"
        )


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it, never called
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> LoadScopeScheduling | None:
    """Whole groups (``group_of``) to whichever worker is free, in the workers' collection order (slow groups
    first), for xdist's default distribution (and ``loadscope``/``loadfile``); any other ``--dist`` as asked."""
    if config.getvalue("dist") not in ("load", "loadscope", "loadfile"):
        return None
    config.option.loadscopereorder = False  # xdist would order the groups by their number of tests
    from xdist.scheduler import LoadScopeScheduling

    class ModuleOrSharedRun(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return ModuleOrSharedRun(config, log)
