"""The EvalScope worker writes into the run directory: it dies with the run that spawned it (``PR_SET_PDEATHSIG``),
within a second of a kill of the run's process group — never still writing while a resume starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from evalpipe.evalscope_bridge.prestart import FORKSERVER_ENV

#: A run in miniature: it spawns its worker (still importing EvalScope), then its process group is SIGKILLed
#: (by itself: the test signals no group it did not start).
RUN = textwrap.dedent(
    """
    import os, signal, sys
    from evalpipe.artifacts import RunDir
    from evalpipe.evalscope_bridge.runner import WorkerProcess

    worker = WorkerProcess(RunDir(sys.argv[1]))
    worker.spawn()
    print(worker.proc.pid, flush=True)
    os.killpg(0, signal.SIGKILL)
    """
)


@pytest.mark.skipif(sys.platform != "linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_spawned_worker_is_gone_a_second_after_the_run_is_killed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != FORKSERVER_ENV}  # spawned, not forked by a fork server
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    (tmp_path / "run").mkdir()
    run = subprocess.run(
        [sys.executable, "-c", RUN, str(tmp_path / "run")],
        stdout=subprocess.PIPE,
        text=True,
        timeout=60,
        start_new_session=True,
        env=env,
    )
    assert run.returncode == -signal.SIGKILL
    worker = int(run.stdout.split()[0])
    time.sleep(1.0)
    alive = _alive(worker)
    if alive:  # the test's own cleanup: the worker leads its own group (the one this test caused)
        os.killpg(worker, signal.SIGKILL)
    assert not alive, "the EvalScope worker outlived the killed run"


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
