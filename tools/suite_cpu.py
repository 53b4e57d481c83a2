"""Where the test suite's CPU time goes, by kind of process: ``python tools/suite_cpu.py [pytest args]``.

Runs ``python -m pytest`` with the given arguments (default: ``-q -n 3``, as ``make test``) and samples
``/proc`` every 0.3 s: every process descended from that pytest (found through the parent pid, each process
known by its pid and start time, so a reused pid is another process) is charged its user + system CPU time
as last seen, under a kind read from its command line (the EvalScope worker, llama.cpp, the recorder, a
sandboxed test process, ...).  A process that lives less than a sample is missed and a process's last 0.3 s
may be; forked children carry their parent's command line (EvalScope's scoring forks count as the worker's).

The suite's cost centres are process start-ups more than test bodies: this says which.  Linux only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE_S = 0.3
TICK = os.sysconf("SC_CLK_TCK")
#: substring of a command line -> the kind it is charged to (first match wins)
KINDS = (
    ("pytest-xdist", "pytest worker: tests run in-process"),
    ("exec(eval(sys.stdin.readline()))", "pytest worker: tests run in-process"),
    ("-m pytest", "pytest (controller or nested)"),
    ("evalscope_bridge.worker", "EvalScope worker (and its forks)"),
    ("evalscope_bridge.forkserver", "EvalScope fork server and the workers it forked"),
    ("evalpipe.engines.llamacpp", "llama.cpp engine (SmolLM2)"),
    ("evalscope.cli.cli perf", "evalscope perf client"),
    ("recording.recorder", "recorder"),
    ("answer_key", "answer-key server"),
    ("variant_process", "variant process"),
    ("live_code_bench.test_process", "LiveCodeBench test process (sandboxed)"),
    ("bwrap", "LiveCodeBench test process (sandboxed)"),
    ("evalpipe.cli", "evalpipe CLI"),
    ("bin/evalpipe", "evalpipe CLI"),
    ("router", "sglang-router"),
    ("fake_sglang", "SGLang test double"),
    ("chrom", "chromium"),
    ("scripted_server", "scripted server"),
    ("while True", "busy process (load test)"),
)


def kind_of(cmdline: str) -> str:
    return next((kind for needle, kind in KINDS if needle in cmdline), "other")


def _stat(pid: int) -> tuple[int, float, str]:
    """(parent pid, user + system CPU seconds, start time) from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
        text = fh.read()
    fields = text[text.rindex(")") + 2 :].split()
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK, fields[19]


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


#: the command lines of the costliest processes of no known kind are listed (up to this many)
OTHER_LISTED = 10


def watch(
    root: subprocess.Popen[bytes], commands: dict[tuple[int, str], str]
) -> dict[tuple[int, str], tuple[str, float]]:
    """Every descendant of ``root`` -> (kind, CPU seconds), until ``root`` exits; ``commands`` gets the command
    line of each one of no known kind."""
    seen: dict[tuple[int, str], tuple[str, float]] = {}
    family: set[tuple[int, str]] = set()
    while root.poll() is None:
        procs: dict[int, tuple[int, float, str]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    procs[int(entry)] = _stat(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        if root.pid in procs:
            family.add((root.pid, procs[root.pid][2]))
        grown = True
        while grown:
            grown = False
            for pid, (ppid, _, start) in procs.items():
                parent = procs.get(ppid)
                if (pid, start) not in family and parent is not None and (ppid, parent[2]) in family:
                    family.add((pid, start))
                    grown = True
        for pid, (_, cpu, start) in procs.items():
            key = (pid, start)
            if key in family:
                if key in seen:
                    kind = seen[key][0]
                else:
                    command = _cmdline(pid)
                    kind = kind_of(command)
                    if kind == "other":
                        commands[key] = command
                seen[key] = (kind, max(cpu, seen.get(key, ("", 0.0))[1]))
        time.sleep(SAMPLE_S)
    return seen


def main(argv: list[str]) -> int:
    args = argv or ["-q", "-n", "3"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": ""}
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=REPO, env=env)
    commands: dict[tuple[int, str], str] = {}
    seen = watch(proc, commands)
    wall = time.monotonic() - started
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for kind, seconds in seen.values():
        cpu[kind] += seconds
        if seconds >= 0.05:  # a fork that did next to nothing is not a start-up
            count[kind] += 1
    total = sum(cpu.values())
    print(
        f"\npytest {' '.join(args)}: exit {proc.returncode}, {wall:.0f} s wall, {total:.0f} s CPU seen "
        f"({total / wall:.2f} cores on average, {os.cpu_count()} here)"
    )
    print(f"{'CPU s':>8} {'share':>6} {'procs':>6}  kind (processes with >= 0.05 s CPU)")
    for kind, seconds in cpu.most_common():
        print(f"{seconds:8.1f} {seconds / total:6.1%} {count[kind]:6d}  {kind}")
    others = sorted(((seen[key][1], command) for key, command in commands.items()), reverse=True)
    if others:
        print(f"the costliest processes of no known kind (of {len(others)}):")
        for seconds, command in others[:OTHER_LISTED]:
            print(f"{seconds:8.1f}  {command[:150]}")
    return proc.returncode or 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
