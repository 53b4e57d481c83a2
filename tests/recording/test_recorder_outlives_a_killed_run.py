"""A kill of the run's whole process group loses no answer the proxy handed to the recorder: the recorder leads a
session of its own, writes everything the pipe holds, then exits (end of input) — and holds the run directory's
lock until it has, so a resume started at once waits for it instead of reading half a log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.lock import hold_run_dir

FRAMES = 200

#: A run in miniature: it holds the directory, starts the recorder, hands it FRAMES attempts, then its whole
#: process group is SIGKILLed (by itself: the test signals no group it did not start).
RUN = textwrap.dedent(
    """
    import os, signal, sys
    from evalpipe.artifacts import RunDir
    from evalpipe.artifacts.lock import hold_run_dir
    from evalpipe.recording.proxy import _RecorderPipe
    from evalpipe.recording.recorder import encode_frame

    rd = RunDir(sys.argv[1])
    with hold_run_dir(rd):
        pipe = _RecorderPipe(rd)
        for i in range(int(sys.argv[2])):
            meta = [f"a-{i:06d}", i, 0.0, 0.1, 0.1, "POST", "/v1/chat/completions", 200, "application/json",
                    None, False, None, False, None, 0.0, 0.0, None]
            body = b'{"model":"m","messages":[{"role":"user","content":"q%d"}],"seed":%d}' % (i, i)
            answer = b'{"id":"r%d","choices":[{"message":{"content":"a"},"finish_reason":"stop"}]}' % i
            pipe.submit(encode_frame(meta, body, answer))
        assert not pipe._pending, "the pipe took every frame"
        print(pipe.proc.pid, flush=True)
        os.killpg(0, signal.SIGKILL)
    """
)


def test_the_recorder_writes_every_answer_it_was_handed_after_the_group_is_killed(tmp_path: Path) -> None:
    rd = RunDir(tmp_path / "run")
    run = subprocess.run(
        [sys.executable, "-c", RUN, str(rd.root), str(FRAMES)],
        stdout=subprocess.PIPE,
        text=True,
        timeout=60,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert run.returncode == -signal.SIGKILL
    recorder = int(run.stdout.split()[0])
    with hold_run_dir(rd):  # waits (bounded) while the recorder, alone, still holds the directory
        assert not _alive(recorder), "the recorder ended with its input"
        assert rd.requests_log.read_bytes().count(b"\n") == FRAMES
    deadline = time.monotonic() + 5
    while _alive(recorder) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(recorder)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
