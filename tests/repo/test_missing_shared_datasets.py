"""A clone without ../shared/datasets beside it: the test run stops once, with one line, before any test.

Runs pytest in a subprocess on a copy of ``tests/`` (and ``pyproject.toml``) in a temporary directory, so
the copy's ``../shared/datasets`` does not exist; only three test files are collected, to stay fast.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# test_stats_repeats reads no dataset; test_sampling asks for the fixture (also through its module fixture);
# test_run_resume passes it on to the helpers that read the files.
FILES = ["tests/stats/test_stats_repeats.py", "tests/samplers/test_sampling.py", "tests/run/test_run_resume.py"]


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory, repo_root: Path) -> Path:
    root = tmp_path_factory.mktemp("alone") / "evalpipe"
    shutil.copytree(repo_root / "tests", root / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(repo_root / "pyproject.toml", root / "pyproject.toml")
    assert not (root.parent / "shared").exists()
    return root


def _pytest(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_run_stops_once_naming_the_folder(clone: Path) -> None:
    proc = _pytest(clone, *FILES)
    folder = clone.parent / "shared" / "datasets"
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("ERROR: ") and str(folder) in lines[0] and "not found" in lines[0]
    assert "README, 'Tests and ../shared/datasets'" in lines[0] and "-m 'not shared_datasets'" in lines[0]
    assert "no tests ran" in proc.stdout and "passed" not in proc.stdout and "failed" not in proc.stdout
    assert "dataset directory not found" not in proc.stdout + proc.stderr


def test_the_tests_that_need_no_datasets_still_run(clone: Path) -> None:
    proc = _pytest(clone, *FILES, "-m", "not shared_datasets")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    assert " passed" in summary and " deselected" in summary, summary
    assert "failed" not in summary and "error" not in summary, summary
