"""Fault injection for ``evalpipe run``: start it as the leader of its own process group, wait for a phase of
a piloted paired run (read from the files it writes), signal it, list what of its process tree outlived it, and
resume it; then read what the run ended with (exit code, verdicts, requests per sample, audit findings).

Every signal goes to the process group this module started (``os.killpg(run.pid, …)``), never to a process
found by name.  The process tree is read from ``/proc`` (parent links) just before the signal, so a child
that left the group (a server, the EvalScope worker: their own sessions) is still known and checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EVALPIPE = (sys.executable, "-m", "evalpipe.cli.entry")
ARMS = ("candidate", "reference", "reference_again")
#: how often a phase's condition is polled (the answer-key server answers a request in a few milliseconds)
POLL_S = 0.01


def _stat(pid: int) -> tuple[int, str] | None:
    """``(ppid, start time)`` of a live, non-zombie process; None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] == "Z":
        return None
    return int(fields[1]), fields[19]


def process_tree(root: int) -> dict[int, str]:
    """``pid → start time`` of ``root`` and every live descendant (by parent links in ``/proc``)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parents[int(entry)] = st
    tree = {root: parents[root][1]} if root in parents else {}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, start) in parents.items():
            if ppid in tree and pid not in tree:
                tree[pid] = start
                grew = True
    return tree


def survivors(tree: dict[int, str]) -> list[str]:
    """The processes of ``tree`` still alive (the same pid with the same start time), as ``pid: cmdline``."""
    out = []
    for pid, start in tree.items():
        st = _stat(pid)
        if st is not None and st[1] == start:
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append(f"{pid}: {cmd.strip()}")
    return out


def start(config: Path, out: Path, *, resume: bool = False) -> subprocess.Popen[str]:
    args = ["run", str(config), "--resume" if resume else "--out", str(out)]
    return subprocess.Popen(
        [*EVALPIPE, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )


def lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


@dataclass(frozen=True)
class Phase:
    """A moment of a piloted three-arm run in turn (the control first, then the test, then the A/A arm; the
    pilot pass, the decision, the second pass, the comparison), as its files show it."""

    name: str
    reached: Callable[[Path], bool]


def _after_decision(root: Path, arm: str, beyond: int) -> bool:
    return (
        (root / "pilot.json").is_file()
        and (root / arm / "pilot.json").is_file()
        and lines(root / arm / "requests.jsonl") > beyond
    )


def phases(pilot_units: int) -> dict[str, Phase]:
    """The phases of the issue's table; ``pilot_units``: the requests an arm sends in its pilot pass."""
    half = max(1, pilot_units // 2)
    return {
        p.name: p
        for p in (
            Phase("pilot pass, first arm", lambda r: lines(r / "reference" / "requests.jsonl") >= half),
            Phase("pilot pass, later arm", lambda r: lines(r / "candidate" / "requests.jsonl") >= half),
            Phase("after the decision", lambda r: (r / "pilot.json").is_file()),
            Phase("second pass, control", lambda r: _after_decision(r, "reference", pilot_units + half)),
            Phase("second pass, test", lambda r: _after_decision(r, "candidate", pilot_units + half)),
            Phase(
                "second pass, A/A arm", lambda r: _after_decision(r, "reference_again", pilot_units + half)
            ),
            Phase("compare", _comparing),
        )
    }


def _comparing(root: Path) -> bool:
    """Every arm's second pass has written its outcomes; the comparison is not written yet."""
    pilot = root / "pilot.json"
    if not pilot.is_file() or (root / "compare.json").exists():
        return False
    decided = pilot.stat().st_mtime
    outcomes = [root / arm / "outcomes.jsonl" for arm in ARMS]
    return all(p.is_file() and p.stat().st_mtime > decided for p in outcomes)


@dataclass
class Interrupted:
    """A run signalled at a phase: whether the phase was reached, what it printed, what outlived it."""

    phase: str
    reached: bool
    returncode: int | None
    output: str
    leftovers: list[str] = field(default_factory=list)


def interrupt(
    run: subprocess.Popen[str], root: Path, phase: Phase, sig: int, *, timeout: float = 120
) -> Interrupted:
    """Wait until ``phase`` is reached (or the run ends), then send ``sig`` to the run's process group; the
    processes of its tree still alive one second after the signal (after a SIGTERM: once the run has ended)."""
    deadline = time.monotonic() + timeout
    reached = False
    while time.monotonic() < deadline and run.poll() is None:
        if phase.reached(root):
            reached = True
            break
        time.sleep(POLL_S)
    tree = process_tree(run.pid)
    if run.poll() is None:
        os.killpg(run.pid, sig)
    if sig != signal.SIGKILL:
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
    output, _ = run.communicate(timeout=60)
    time.sleep(1.0)
    left = survivors(tree) + forked_workers(root)
    return Interrupted(phase.name, reached, run.returncode, output, left)


def forked_workers(root: Path) -> list[str]:
    """EvalScope workers the run's arms recorded (``evalscope_tasks.json``: ``worker_pid``) that are still alive:
    a worker forked by a fork server (the test suite's) is that server's child, outside the run's tree."""
    out = []
    for tasks in root.glob("*/evalscope_tasks.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            for task in json.loads(tasks.read_text())["tasks"]:
                pid = task.get("worker_pid")
                if pid is None or _stat(pid) is None:
                    continue
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if "evalscope_bridge" in cmd:
                    out.append(f"{pid}: {cmd.strip()} (EvalScope worker of {tasks.parent.name})")
    return out


def finish(config: Path, root: Path, *, timeout: float = 300) -> tuple[int, str]:
    """``evalpipe run --resume`` to its end: exit code and output."""
    run = start(config, root, resume=True)
    try:
        output, _ = run.communicate(timeout=timeout)
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    return run.returncode, output


@dataclass(frozen=True)
class Ending:
    """What a finished paired run says: its exit code, each arm's and each comparison's verdicts, how many
    requests each sample's prompt got per arm, and the findings of its audits by code."""

    exit_code: int
    verdicts: dict[str, str]
    requests_per_sample: dict[str, dict[int, int]]
    findings: dict[str, int]


def ending(root: Path, exit_code: int) -> Ending:
    verdicts: dict[str, str] = {}
    requests: dict[str, dict[int, int]] = {}
    findings: Counter[str] = Counter()
    for arm in ARMS:
        summary = json.loads((root / arm / "summary.json").read_text())
        verdicts[arm] = f"{summary['verdict']} ({summary['exit_code']})"
        for finding in summary["findings"]:
            findings[f"{finding['severity']} {finding['code']}"] += 1
        per_prompt = Counter(
            json.loads(line)["messages_sha256"]
            for line in (root / arm / "requests.jsonl").read_text().splitlines()
            if line.strip()
        )
        requests[arm] = dict(sorted(Counter(per_prompt.values()).items()))
    compare = json.loads((root / "compare.json").read_text())
    for bench in compare["benchmarks"]:
        seq = bench.get("sequential") or {}
        verdicts[f"compare {bench['benchmark']}"] = (
            f"{seq.get('verdict')} after {seq.get('units_used')} units, {seq.get('units_by_attempts')}"
        )
    return Ending(exit_code, verdicts, requests, dict(findings))


def stop_states(root: Path) -> dict[str, str]:
    """Each arm's ``sequential_stop.json`` as written (for a comparison: did a resume rewrite one)."""
    return {
        arm: (root / arm / "sequential_stop.json").read_text()
        for arm in ARMS
        if (root / arm / "sequential_stop.json").is_file()
    }
