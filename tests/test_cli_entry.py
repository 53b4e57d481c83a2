"""The console script's end (``evalpipe.cli.main.entry``): it skips the interpreter's teardown with
``os._exit``, so these check from outside that nothing is lost on the way — the exit code of every outcome,
stdout written in full, the error line on stderr — and that the installed script is this entry."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_the_console_script_is_the_entry_that_exits_fast() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["evalpipe"] == "evalpipe.cli.main:entry"


def test_success_writes_all_of_stdout_and_exits_0(tmp_path: Path) -> None:
    done = _cli("benchmarks", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    from evalpipe.benchmarks import names

    rows = [json.loads(line) for line in done.stdout.splitlines()]  # every line arrived whole: each parses
    assert [r["name"] for r in rows] == list(names()) and done.stdout.endswith("\n")


def test_a_config_error_exits_2_with_its_line_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: x\nunknown_field: 1\n", encoding="utf-8")
    done = _cli("config", "validate", str(bad), cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "error:" in done.stderr and "bad.yaml" in done.stderr


def test_a_usage_error_exits_2(tmp_path: Path) -> None:
    done = _cli("no-such-command", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "No such command" in done.stderr and "Traceback" not in done.stderr
