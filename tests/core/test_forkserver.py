"""The fork server (``evalpipe.processes.forkserver``): a forked child is seen as a spawned one would be.

A small server runs a child program given here (no EvalScope): what the child reports on its extra
descriptor shows its streams, descriptor numbers, environment, working directory and process group; its
exit code and signals come back as ``Popen.returncode`` gives them; the parent hanging up ends its group.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets.config
import pytest

from evalpipe.evalscope_bridge import forkserver as evalscope_forkserver
from evalpipe.evalscope_bridge.prestart import launch
from evalpipe.processes import forkserver
from evalpipe.processes.forkserver import FORKSERVER_ENV, ForkedChild, ForkRefused, fork_child
from evalpipe.processes.group import group_alive, stop_group

SERVER = """
import json, os, resource, subprocess, sys, time
from evalpipe.processes.forkserver import serve

def child(request):
    out = os.fdopen(request.fds[0], "w")
    line = sys.stdin.readline()
    print("to stdout", flush=True)
    print("to stderr", file=sys.stderr, flush=True)
    if os.environ.get("GRANDCHILD"):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    out.write(json.dumps({
        "stdin": line, "x": os.environ.get("X"), "env": sorted(os.environ), "cwd": os.getcwd(),
        "pgid": os.getpgid(0), "pid": os.getpid(), "channel": request.fds[0],
        "affinity": sorted(os.sched_getaffinity(0)), "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "umask": os.umask(0), "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)), "fds": sorted(int(f) for f in os.listdir("/proc/self/fd")),
    }) + "\\n")
    out.flush()
    if os.environ.get("SLEEP"):
        time.sleep(float(os.environ["SLEEP"]))
    return int(os.environ.get("EXIT", "0"))

serve(sys.argv[1], child, ready=lambda: print("ready", flush=True),
      refuse=lambda request: "X says no" if request.env.get("X") == "no" else None)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[str]:
    address = str(tmp_path / "sock")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, address], stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        yield address
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def _fork(address: str, tmp_path: Path, **env: str) -> tuple[ForkedChild, int, Path]:
    """A child with stdout and stderr in ``tmp_path/out.log`` and its report on the descriptor numbered as
    ``write_fd`` here."""
    read_fd, write_fd = os.pipe()
    log = tmp_path / "out.log"
    with open(log, "ab") as out:
        child = fork_child(
            address, ["child"], stdout=out.fileno(), stderr=out.fileno(), env=env, cwd=str(tmp_path),
            pass_fds=(write_fd,),
        )  # fmt: skip
    os.close(write_fd)
    assert child.args == ["child"]
    assert os.getpgid(child.pid) == child.pid  # its process group exists once the server names it
    return child, read_fd, log


def _report(read_fd: int) -> dict[str, Any]:
    with os.fdopen(read_fd) as report:
        found: dict[str, Any] = json.loads(report.readline())
    return found


def test_a_forked_child_has_the_requests_streams_descriptors_environment_and_exit_code(
    server: str, tmp_path: Path
) -> None:
    child, read_fd, log = _fork(server, tmp_path, X="y", EXIT="3")
    assert child.stdin is not None
    child.stdin.write(b"hello\n")
    child.stdin.close()
    report = _report(read_fd)
    assert child.wait(timeout=30) == 3
    assert child.returncode == 3 and child.poll() == 3
    assert report["stdin"] == "hello\n"
    assert report["x"] == "y" and report["env"] == ["EXIT", "X"]  # the request's environment, nothing else
    assert report["cwd"] == str(tmp_path)
    assert report["pgid"] == report["pid"] == child.pid  # a process group of its own, led by it
    assert report["channel"] in report["fds"]  # under the number it had here
    others = [fd for fd in report["fds"] if fd not in (0, 1, 2, report["channel"])]
    assert len(report["fds"]) == 5 and len(others) == 1, report["fds"]  # the other: listing /proc/self/fd
    assert log.read_text().splitlines() == ["to stdout", "to stderr"]


def test_a_signal_to_its_group_is_its_returncode_and_stop_group_ends_it(server: str, tmp_path: Path) -> None:
    child, read_fd, _ = _fork(server, tmp_path, SLEEP="60")
    assert child.stdin is not None
    child.stdin.close()
    _report(read_fd)
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.1)
    assert stop_group(child, 10.0, leader_only=True) == "sigterm"
    assert child.returncode == -signal.SIGTERM
    assert not group_alive(child.pid)


def test_the_parent_hanging_up_ends_the_childs_whole_group(server: str, tmp_path: Path) -> None:
    child, read_fd, _ = _fork(server, tmp_path, SLEEP="60", GRANDCHILD="1")
    assert child.stdin is not None
    child.stdin.close()
    report = _report(read_fd)
    assert group_alive(report["pgid"])
    del child  # the parent's end of the connection closes, as when the run dies
    deadline = time.monotonic() + 10
    while group_alive(report["pgid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_alive(report["pgid"])  # the worker and what it started


def test_no_server_at_the_address_is_a_refusal(tmp_path: Path) -> None:
    with pytest.raises(ForkRefused, match="fork server"):
        fork_child(str(tmp_path / "none"), ["child"], stdout=1, stderr=2, env={}, cwd=str(tmp_path))


def test_a_run_whose_fork_server_is_gone_spawns_its_worker_and_its_log_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FORKSERVER_ENV, str(tmp_path / "gone"))
    log_path = tmp_path / "evalscope.log"
    with open(log_path, "ab") as log:
        proc, _channel_fd, read_fd = launch(str(tmp_path / "cache"), cwd=str(tmp_path), log=log)
    try:
        assert isinstance(proc, subprocess.Popen)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # no spec: the worker ends once its import is done
        stop_group(proc, 30.0)
        os.close(read_fd)
    first = log_path.read_text().splitlines()[0]
    assert first.startswith(f"===== evalpipe: fork server {tmp_path / 'gone'}: ") and first.endswith(
        "; the worker is started instead ====="
    ), first


def test_a_forked_worker_writes_its_datasets_cache_where_its_request_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HF_DATASETS_CACHE", "DOWNLOADED_DATASETS_PATH", "EXTRACTED_DATASETS_PATH"):
        monkeypatch.setattr(datasets.config, name, getattr(datasets.config, name))
    evalscope_forkserver.point_datasets_cache(str(tmp_path / "mine"))
    assert datasets.config.HF_DATASETS_CACHE == tmp_path / "mine"
    assert datasets.config.DOWNLOADED_DATASETS_PATH == tmp_path / "mine" / "downloads"
    assert datasets.config.EXTRACTED_DATASETS_PATH == tmp_path / "mine" / "downloads" / "extracted"


def test_a_caller_in_another_mount_namespace_is_refused(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child forked outside the caller's mount namespace would write where the caller cannot see (a run
    inside ``unshare`` on its own tmpfs): the server refuses, and the run spawns its worker instead."""
    own = forkserver.namespaces()
    assert set(own) == set(forkserver.SHARED_NAMESPACES)
    monkeypatch.setattr(forkserver, "namespaces", lambda: {**own, "mnt": "mnt:[1]"})
    with pytest.raises(ForkRefused, match="the caller is in another mnt namespace than the fork server"):
        fork_child(server, ["child"], stdout=1, stderr=2, env={}, cwd=str(tmp_path))


def test_a_forked_child_has_its_callers_affinity_umask_nice_value_and_limits(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a spawned child inherits through fork and exec, a forked one is given from its caller's request."""
    own = forkserver.inherited()
    previous = os.umask(0o027)
    try:
        assert forkserver.inherited()["umask"] == 0o027  # read from /proc/self/status, not by setting it
    finally:
        os.umask(previous)
    soft, hard = own["rlimits"]["RLIMIT_NOFILE"]
    asked = {
        **own,
        "affinity": [max(own["affinity"])],
        "umask": 0o027,
        "nice": own["nice"] + 1,
        "rlimits": {**own["rlimits"], "RLIMIT_NOFILE": [min(soft, 512), hard]},
    }
    monkeypatch.setattr(forkserver, "inherited", lambda: asked)
    child, read_fd, _ = _fork(server, tmp_path)
    assert child.stdin is not None
    child.stdin.close()
    report = _report(read_fd)
    assert child.wait(timeout=30) == 0
    assert report["affinity"] == [max(own["affinity"])]
    assert (report["umask"], report["nice"]) == (0o027, own["nice"] + 1)
    assert report["nofile"] == [min(soft, 512), hard]


def test_what_the_server_prepared_may_refuse_a_request(server: str, tmp_path: Path) -> None:
    """A server's own refusal (``serve(refuse=...)``) reaches the caller as the others do; the run spawns."""
    with pytest.raises(ForkRefused, match="X says no"):
        fork_child(server, ["child"], stdout=1, stderr=2, env={"X": "no"}, cwd=str(tmp_path))
    child, read_fd, _ = _fork(server, tmp_path, X="yes")
    assert child.stdin is not None
    child.stdin.close()
    assert _report(read_fd)["x"] == "yes" and child.wait(timeout=30) == 0


@pytest.mark.parametrize("name", ["NLTK_DATA", "HOME"])
def test_the_evalscope_fork_server_refuses_a_worker_whose_nltk_paths_differ(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NLTK, imported by the server, read its data path from these at import: a worker asked for with other
    values would look for IFEval's punkt_tab where a spawned one would not."""
    monkeypatch.setenv("NLTK_DATA", "/data/nltk")
    monkeypatch.setenv("HOME", "/home/evalpipe")
    same = forkserver.ForkRequest(
        env={"NLTK_DATA": "/data/nltk", "HOME": "/home/evalpipe", "X": "1"}, cwd="/"
    )
    assert evalscope_forkserver.import_env_mismatch(same) is None
    other = forkserver.ForkRequest(env={**same.env, name: "/elsewhere"}, cwd="/")
    assert evalscope_forkserver.import_env_mismatch(other) == (
        f"{name} differ from the fork server's, which its imports read"
    )
    unset = forkserver.ForkRequest(env={k: v for k, v in same.env.items() if k != name}, cwd="/")
    assert evalscope_forkserver.import_env_mismatch(unset) is not None


def test_the_evalscope_fork_server_has_the_scoring_libraries_its_workers_would_import() -> None:
    """``preload_scoring`` leaves EvalScope's math parser warmed up (its own flag: a forked worker's first
    GSM8K or MATH-500 score skips the warm-up) and NLTK imported."""
    from evalscope.metrics.math import parser

    from evalpipe.evalscope_bridge.patches import preload_scoring

    preload_scoring()
    assert parser._warmed_up is True and "nltk" in sys.modules


def test_a_caller_in_another_cgroup_is_refused(server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = forkserver.inherited()
    monkeypatch.setattr(forkserver, "inherited", lambda: {**own, "cgroup": "0::/elsewhere\n"})
    with pytest.raises(ForkRefused, match="the caller is in another cgroup than the fork server"):
        fork_child(server, ["child"], stdout=1, stderr=2, env={}, cwd=str(tmp_path))
