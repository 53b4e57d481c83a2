"""What the EvalScope fork server saves per run: ``evalpipe demo`` with spawned workers vs forked ones, interleaved.

Each round runs the demo (two variants on answer-key servers: two EvalScope workers) once with its workers
spawned (the default) and once with ``EVALPIPE_WORKER_FORKSERVER`` naming a fork server started at the
beginning, in a shuffled order.  Per arm: wall time, and CPU time of everything the run used — the demo's
process tree (``RUSAGE_CHILDREN``) plus, for forked workers, what the server's children used
(``/proc/<server>/stat`` ``cutime``/``cstime``: the server reaps them).  The server's own start-up (its one
EvalScope import) is reported apart.  On a shared host, compare within one run only.

    python perf/bench_forkserver.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from evalpipe.evalscope_bridge import forkserver
from evalpipe.processes.forkserver import FORKSERVER_ENV

EVALPIPE = [sys.executable, "-m", "evalpipe.cli.entry"]


def _children_cpu(pid: int) -> float:
    """CPU seconds of the children ``pid`` has reaped (``/proc/PID/stat`` fields 16-17)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _own_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _reaped_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_demo(out: Path, env: dict[str, str], server_pid: int | None) -> tuple[float, float]:
    """Wall and CPU seconds of one ``evalpipe demo``."""
    cpu0, server0 = _reaped_cpu(), (_children_cpu(server_pid) if server_pid else 0.0)
    t0 = time.perf_counter()
    done = subprocess.run([*EVALPIPE, "demo", "--out", str(out)], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode not in (0, 1):  # the demo's planted faults fail their gate: exit 1
        raise SystemExit(f"evalpipe demo exited {done.returncode}: {done.stderr[-2000:]}")
    log = (out / "faults" / "logs" / "evalscope.log").read_text(errors="replace")
    if ("forked by the fork server" in log) != (server_pid is not None):
        raise SystemExit(f"the worker did not come the way this arm asked for ({out})")
    cpu = _reaped_cpu() - cpu0 + ((_children_cpu(server_pid) - server0) if server_pid else 0.0)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-forkserver-") as tmp:
        address = str(Path(tmp) / "sock")
        t0 = time.perf_counter()
        server = forkserver.start(address)
        try:
            start_wall, start_cpu = time.perf_counter() - t0, _own_cpu(server.pid)
            plain = {k: v for k, v in os.environ.items() if k != FORKSERVER_ENV}
            arms = {"spawned": (plain, None), "forked": ({**plain, FORKSERVER_ENV: address}, server.pid)}
            seen: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
            for i in range(args.rounds):
                order = list(arms)
                random.shuffle(order)
                for name in order:
                    env, pid = arms[name]
                    seen[name].append(one_demo(Path(tmp) / f"{name}-{i}", env, pid))
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait()
    load = os.getloadavg()[0]
    print(f"evalpipe demo, {args.rounds} rounds interleaved, {os.cpu_count()} cores, load average {load:.2f}")
    print(f"fork server start-up (one EvalScope import): {start_wall:.1f} s wall, {start_cpu:.1f} s CPU")
    med = {name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
           for name, runs in seen.items()}  # fmt: skip
    for name, (wall, cpu) in med.items():
        print(f"{name:8s} workers: median {wall:5.1f} s wall, {cpu:5.1f} s CPU per demo (2 workers)")
    print(
        f"forked / spawned: wall ×{med['forked'][0] / med['spawned'][0]:.2f}, "
        f"CPU ×{med['forked'][1] / med['spawned'][1]:.2f}"
    )


if __name__ == "__main__":
    main()
