"""The console script's end (``evalpipe.cli.entry.entry``): it skips the interpreter's teardown with
``os._exit``, so these check from outside that nothing is lost on the way — the exit code of every outcome,
stdout written in full, the error line on stderr — and that the installed script is this entry."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env=env,
    )


def test_the_console_script_is_the_entry_that_exits_fast() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["evalpipe"] == "evalpipe.cli.entry:entry"


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


def test_a_refused_run_ends_the_worker_it_started_first(tmp_path: Path) -> None:
    """``evalpipe run`` starts its EvalScope worker before reading the config (``prestart``): a config it
    refuses exits 2 with its line, and the worker and its temporary home are gone with it."""
    import os

    bad = tmp_path / "bad.yaml"
    bad.write_text("schema_version: 1\nname: x\nunknown_field: 1\n", encoding="utf-8")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = _cli("run", str(bad), cwd=tmp_path, env={**os.environ, "TMPDIR": str(tmp)})
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "bad.yaml" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp.iterdir()) == []  # its home (evalpipe-worker-*) was made there, and removed
    workers = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = status.read_bytes().split(b"\0")
            env = (status.parent / "environ").read_bytes()
        except OSError:
            continue
        if b"evalpipe.evalscope_bridge.worker" in argv and str(tmp).encode() in env:
            workers.append(status.parent.name)
    assert workers == []
