"""``evalpipe.processes.group``: what "stopped" means for a server, the EvalScope worker and a test process.

Each case starts a real process group — a leader and a child that stays in its group — and checks the
stop method reported and that nothing of the group is left.
"""

from __future__ import annotations

import _thread
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.server_process import assert_group_gone

from evalpipe.processes.group import (
    group_alive,
    kill_group,
    signal_group,
    spawn,
    stop_group,
    wait_group_gone,
)

# A leader that starts a child in its own group, prints READY, and then sleeps; each may ignore SIGTERM.
_FAMILY = r"""
import signal, subprocess, sys, time
leader_ignores, child_ignores = sys.argv[1] == "1", sys.argv[2] == "1"
child = "import signal, time\n" + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if child_ignores else "") + (
    "print('child up', flush=True)\nwhile True: time.sleep(1)\n")
subprocess.Popen([sys.executable, "-c", child], stdout=sys.stdout)
if leader_ignores:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(0.3)
print("READY", flush=True)
while True:
    time.sleep(1)
"""


def _family(
    tmp_path: Path, *, leader_ignores: bool = False, child_ignores: bool = False
) -> subprocess.Popen[bytes]:
    log = tmp_path / f"family-{time.monotonic_ns()}.log"
    argv = [sys.executable, "-c", _FAMILY, str(int(leader_ignores)), str(int(child_ignores))]
    with log.open("wb") as fh:
        proc = spawn(argv, stdout=fh, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while "READY" not in log.read_text() or "child up" not in log.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return proc


def test_spawn_leads_a_new_group_and_sigterm_stops_all_of_it(tmp_path: Path) -> None:
    proc = _family(tmp_path)
    try:
        assert group_alive(proc.pid)  # pgid == pid: the leader of its own session
        assert stop_group(proc, 10.0) == "sigterm"
        assert not group_alive(proc.pid) and proc.returncode == -signal.SIGTERM
        assert stop_group(proc, 10.0) == "exited"  # nothing left: no signal sent
    finally:
        assert_group_gone(proc.pid)


def test_a_child_ignoring_sigterm_escalates_to_sigkill_of_the_group(tmp_path: Path) -> None:
    proc = _family(tmp_path, child_ignores=True)
    t0 = time.monotonic()
    try:
        assert stop_group(proc, 1.0) == "sigkill"  # the leader exited, its child did not: waited, then killed
        assert time.monotonic() - t0 >= 1.0 and not group_alive(proc.pid)
    finally:
        assert_group_gone(proc.pid)


def test_leader_only_waits_for_the_leader_and_kills_what_it_leaves(tmp_path: Path) -> None:
    proc = _family(tmp_path, child_ignores=True)
    t0 = time.monotonic()
    try:
        assert stop_group(proc, 30.0, leader_only=True) == "sigterm"  # the leader obeyed
        assert time.monotonic() - t0 < 15  # the straggler was killed at once, not after the grace time
        assert not group_alive(proc.pid)
    finally:
        assert_group_gone(proc.pid)


def test_hurry_escalates_at_once(tmp_path: Path) -> None:
    proc = _family(tmp_path, leader_ignores=True)
    hurry = threading.Event()
    threading.Timer(0.5, hurry.set).start()
    t0 = time.monotonic()
    try:
        assert stop_group(proc, 60.0, hurry=hurry) == "sigkill"
        assert time.monotonic() - t0 < 30 and proc.returncode == -signal.SIGKILL
    finally:
        assert_group_gone(proc.pid)


def test_ctrl_c_during_the_wait_kills_the_group_then_is_re_raised(tmp_path: Path) -> None:
    proc = _family(tmp_path, leader_ignores=True)
    # interrupt_main does nothing while SIGINT is ignored, as it is when pytest runs as a background job
    # (``make test &``, nohup): this test sets the disposition it relies on, Python's Ctrl-C handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            stop_group(proc, 60.0)
        assert proc.returncode == -signal.SIGKILL and not group_alive(proc.pid)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
        assert_group_gone(proc.pid)


def test_kill_group_is_immediate(tmp_path: Path) -> None:
    proc = _family(tmp_path, leader_ignores=True, child_ignores=True)
    try:
        kill_group(proc)
        assert proc.returncode == -signal.SIGKILL
        assert wait_group_gone(proc.pid, 10.0)
    finally:
        assert_group_gone(proc.pid)


# A parent that spawns a sleeping child (its own session) with or without die_with_parent, prints the
# child's pid, and sleeps until it is SIGKILLed.
_PARENT = r"""
import signal, sys, time
from evalpipe.processes.group import spawn
sig = {"none": None, "kill": signal.SIGKILL, "term": signal.SIGTERM}[sys.argv[1]]
child = spawn([sys.executable, "-c", "import time; time.sleep(60)"], die_with_parent=sig)
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("how", ["kill", "term", "none"])
def test_die_with_parent_ends_the_child_when_its_parent_is_killed(how: str) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, how], stdout=subprocess.PIPE, text=True)
    child = 0
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        assert group_alive(child)
        parent.kill()
        parent.wait(timeout=10)
        gone = wait_group_gone(child, 1.0 if how == "none" else 10.0)
        assert gone is (how != "none")  # without it the child outlives a SIGKILLed parent
    finally:
        parent.kill()
        if child:
            signal_group(child, signal.SIGKILL)
