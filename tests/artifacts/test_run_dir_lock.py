"""``RUN/run.lock``: while a run's process holds its directory, another run there (a ``--resume`` started too
early) is refused in one line naming the holder's PID and the lock file; once it is gone the next one runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.lock import hold_run_dir
from evalpipe.errors import ConfigError, ExitCode

HOLD = textwrap.dedent(
    """
    import sys
    from evalpipe.artifacts import RunDir
    from evalpipe.artifacts.lock import hold_run_dir

    with hold_run_dir(RunDir(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.read()
    """
)


def test_a_second_run_is_refused_while_the_first_holds_the_directory(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(rd.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(ConfigError) as refused, hold_run_dir(rd):
            pass
        assert refused.value.exit_code == ExitCode.USAGE
        assert f"in use by evalpipe process {holder.pid}" in str(refused.value)
        assert str(rd.lock) in str(refused.value)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=30)
    with hold_run_dir(rd):  # the holder is gone: the directory is this process's
        assert rd.lock.read_text().split() == [str(os.getpid())]
