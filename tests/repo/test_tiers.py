"""The test tiers (``tests/helpers/tiers.py``, applied by ``tests/conftest.py``): what the static scan finds,
and the run-time guard that fails a unit-tier test which starts a process anyway."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.tiers import TESTS, Finding, classify, scan_def


def test_a_pure_test_is_unit() -> None:
    turns = TESTS / "evalscope_bridge" / "test_generation_turns.py"
    wilson = TESTS / "stats" / "test_stats_intervals.py"
    assert "def test_side_by_side_never_blocks(" in turns.read_text()  # the scan reads real tests
    assert "def test_wilson_known_values(" in wilson.read_text()
    assert scan_def(turns, "test_side_by_side_never_blocks") is None
    assert scan_def(wilson, "test_wilson_known_values") is None


def test_a_helper_of_the_test_module_is_followed_to_the_entry_point() -> None:
    # test -> _family (module helper) -> evalpipe.processes.group.spawn
    path = scan_def(TESTS / "core" / "test_process_group.py", "test_kill_group_is_immediate")
    assert path == (
        "core.test_process_group.test_kill_group_is_immediate",
        "core.test_process_group._family",
        "evalpipe.processes.group.spawn",
    )


def test_a_helper_module_class_is_followed_through_its_methods() -> None:
    # ServerProcess (tests/helpers/server_process.py) starts its argv with evalpipe.processes.group.spawn
    path = scan_def(TESTS / "helpers" / "server_process.py", "ServerProcess")
    assert path is not None and path[0].startswith("helpers.server_process.ServerProcess")
    assert path[-1] == "evalpipe.processes.group.spawn"


def test_an_in_process_cli_call_is_integration_only_for_a_command_that_starts_processes() -> None:
    path = scan_def(TESTS / "server" / "test_server_flags.py", "test_cli_server_command_prints_one_quoted_line")
    assert path is not None and path[-1] == "evalpipe server command"
    assert scan_def(TESTS / "config" / "test_config.py", "test_missing_config_file_exit_2") is None  # config validate


def test_a_fixture_that_starts_processes_makes_its_users_integration() -> None:
    import conftest

    finding = classify(None, {"tmp_path": None, "registry_controls": conftest.registry_controls})
    assert finding is not None and finding.source == "fixture"
    assert finding.path[0] == "fixture registry_controls" and finding.path[-1] == (
        "evalpipe.run.selftest.run_selftest"
    )
    assert classify(None, {"pytester": None}) == Finding("fixture", ("fixture pytester", "a nested pytest"))
    assert classify(None, {"tmp_path": None, "repo_root": conftest.repo_root}) is None


_TIERED = """
import subprocess, sys
import pytest

def _sneaky():  # the scan cannot see this file (outside tests/): only the guard can
    return getattr(subprocess, "check_output")([sys.executable, "-c", "print(1)"])

def test_swallows_the_error():
    try:
        _sneaky()
    except Exception:
        pass

def test_pure():
    assert sum([1, 1]) == 2

@pytest.mark.integration
def test_marked():
    assert _sneaky().strip() == b"1"
"""


def test_a_unit_tier_test_that_starts_a_process_fails_in_one_line(tmp_path: Path) -> None:
    """A nested pytest with this suite's conftest: the process start fails the test even though the test
    swallowed the error, with one line saying what to do; a test marked integration may start one."""
    (tmp_path / "test_tiered.py").write_text(textwrap.dedent(_TIERED), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)])}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-c", str(TESTS.parent / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-q", str(tmp_path / "test_tiered.py")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed, 2 passed" in out, out
    assert (
        "tiers: 2 unit, 1 integration (0 by the scan of the test's code, 0 by a fixture, 1 marked by hand)"
        in out
    )
    (line,) = [x for x in out.splitlines() if x.startswith("test_tiered.py::test_swallows_the_error started")]
    assert "(subprocess.Popen, from " in line and "(_sneaky)" in line, line
    assert line.endswith("but is in the unit tier: add the entry point it went through to "
                         "INTEGRATION_ENTRY_POINTS (tests/helpers/tiers.py), used by tests/conftest.py")  # fmt: skip
    assert "Traceback" not in out and "UnitTierProcessError" not in out, out


def test_every_entry_point_names_something_that_exists() -> None:
    """A package move (``evalpipe.run.pipeline`` into ``evalpipe.run``…) must update the list: a stale name
    would silently stop marking its tests (the guard would then fail them, one by one)."""
    import importlib

    from helpers.tiers import CLI_CALLS, INTEGRATION_ENTRY_POINTS

    missing = []
    for dotted in [*INTEGRATION_ENTRY_POINTS, *CLI_CALLS]:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            try:
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
            except AttributeError:
                missing.append(dotted)
            break
        else:
            missing.append(dotted)
    assert missing == [], f"INTEGRATION_ENTRY_POINTS names what no longer exists: {missing}"


def test_the_guard_refuses_every_way_to_start_a_process_and_restores_them() -> None:
    import asyncio
    import multiprocessing

    import pytest
    from helpers.tiers import UnitTierProcessError, install_guard

    def starters() -> tuple[object, ...]:
        popen = subprocess.Popen._execute_child  # type: ignore[attr-defined]  # private: what the guard patches
        return (popen, os.fork, multiprocessing.process.BaseProcess.start)

    originals = starters()
    violations: list[str] = []
    with install_guard("t::x", violations):
        with pytest.raises(UnitTierProcessError, match="t::x started a subprocess"):
            subprocess.run([sys.executable, "-c", "pass"], check=False)
        with pytest.raises(UnitTierProcessError):
            asyncio.run(asyncio.create_subprocess_exec(sys.executable, "-c", "pass"))
        with pytest.raises(UnitTierProcessError):
            if os.fork() == 0:  # only if the guard failed: the child leaves at once
                os._exit(0)
        with pytest.raises(UnitTierProcessError):
            multiprocessing.get_context("spawn").Process(target=print).start()
    assert [line.split("(")[1].split(",")[0] for line in violations] == [
        "subprocess.Popen", "subprocess.Popen", "os.fork", "multiprocessing",
    ]  # fmt: skip
    assert starters() == originals


def test_scans_recalled_from_pytests_cache_are_the_scans_a_fresh_walk_makes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What ``tests/conftest.py`` saves in pytest's cache and recalls in the next session (same sources)
    classifies exactly as walking the trees again does."""
    import json

    from helpers import tiers

    defs = [
        (TESTS / "core" / "test_process_group.py", "test_kill_group_is_immediate"),
        (TESTS / "stats" / "test_stats_intervals.py", "test_wilson_known_values"),
        (TESTS / "evalscope_bridge" / "test_generation_turns.py", "test_side_by_side_never_blocks"),
    ]
    monkeypatch.setattr(tiers, "_COMPLETE", {})
    walked = [scan_def(path, qualname) for path, qualname in defs]
    assert walked[0] is not None and walked[1] is None  # one integration, the others unit
    saved = json.loads(json.dumps(tiers.remembered_scans()))  # as pytest's cache stores it
    monkeypatch.setattr(tiers, "_COMPLETE", {})
    tiers.recall_scans(saved)
    monkeypatch.setattr(tiers, "_scan", lambda *a: pytest.fail(f"walked again: {a}"))
    assert [scan_def(path, qualname) for path, qualname in defs] == walked
    assert tiers.sources_digest() == tiers.sources_digest() and len(tiers.sources_digest()) == 64
