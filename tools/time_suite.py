"""Time the README's test commands the way CI meets them: a fresh clone, nothing installed, optionally with the
host loaded by another job — and record what was measured.

    .venv/bin/python tools/time_suite.py                       # idle: writes perf/results/test_suite_idle.txt
    .venv/bin/python tools/time_suite.py --load 1              # one busy process beside it: …_loaded.txt

Steps, each timed by wall clock: ``git clone`` of this repository's HEAD into a temporary directory (with
``../shared`` linked beside it, as CI has it), ``.ci/run``'s two steps there, each timed (``make test`` from
nothing — venv, installs, ruff, mypy, pytest — then ``make mutants``), then ``make test-fast`` in the same clone (the venv now built: the
inner loop's time) and ``evalpipe demo`` (what ``make demo`` runs once installed).  pytest's own summary lines give the test counts and pytest's time.  ``--load N`` starts N
processes that spin on the CPU for the whole measurement (this script's children, stopped by PID at the end)
— "another job" on a shared host.  The result file holds the command, the host, the commit and each figure;
the README quotes it and ``tests/repo/test_doc_figures.py`` checks that it does.

The same commit measured at different hours of a shared host differs by up to ~40 % (2026-12-06/07), so the
file also records what the host gave: the time of one fixed pure-Python loop before and after (its speed),
and, over ``make test``, the share of the cores' time that was busy and the share a hypervisor took
(``steal`` in ``/proc/stat``).  Compare two measurements by these before comparing their minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SPIN = "while True:\n    pass\n"
#: the host-speed probe: 10⁷ additions in a fresh interpreter (~1.4 s on the 2-core host, 2026-12-07)
PROBE = "import time\nt = time.perf_counter()\ns = 0\nfor i in range(10_000_000):\n    s += i\nprint(time.perf_counter() - t)"


PROBE_LABEL = "10⁷ Python additions in"


def _probe_s() -> float:
    """The fastest of three runs of ``PROBE``: the host's single-core speed now (the fastest, as the least
    disturbed by whatever else runs)."""
    runs = [
        float(
            subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True).stdout
        )
        for _ in range(3)
    ]
    return min(runs)


def _cpu_ticks() -> list[int]:
    """The first line of ``/proc/stat``: user nice system idle iowait irq softirq steal (all cores), in ticks."""
    return [int(x) for x in Path("/proc/stat").read_text(encoding="ascii").splitlines()[0].split()[1:9]]


def _cpu_shares(before: list[int], after: list[int]) -> tuple[float, float]:
    """(busy, steal) as shares of all the cores' time between two ``_cpu_ticks`` readings."""
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = sum(delta) or 1
    idle, steal = delta[3] + delta[4], delta[7]
    return (total - idle - steal) / total, steal / total


def _timed(argv: list[str], cwd: Path, log: Path) -> tuple[int, float, str]:
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        code = subprocess.run(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    return code, time.monotonic() - started, log.read_text(encoding="utf-8", errors="replace")


def _pytest_summary(text: str) -> tuple[int, int, float]:
    """(passed, failed) and pytest's seconds from its last summary line ("1337 passed in 446.88s")."""
    lines = [line for line in text.splitlines() if re.search(r"\b(passed|failed)\b.* in [0-9.]+s", line)]
    if not lines:
        raise SystemExit("no pytest summary line in the output")
    last = lines[-1]
    passed = re.search(r"(\d+) passed", last)
    failed = re.search(r"(\d+) failed", last)
    seconds = re.search(r" in ([0-9.]+)s", last)
    assert seconds is not None
    return (
        int(passed.group(1)) if passed else 0,
        int(failed.group(1)) if failed else 0,
        float(seconds.group(1)),
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--load", type=int, default=0, help="busy processes to run beside the measurement")
    ap.add_argument(
        "--out", type=Path, default=None, help="result file (default perf/results/test_suite_*.txt)"
    )
    args = ap.parse_args(argv)
    kind = "loaded" if args.load else "idle"
    out = args.out or REPO / "perf" / "results" / f"test_suite_{kind}.txt"
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    probe_before = _probe_s()
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.load)]
    try:
        with tempfile.TemporaryDirectory(prefix="time-suite-") as tmp:
            root = Path(tmp)
            (root / "shared").symlink_to(SHARED)
            clone = root / "evalpipe"
            subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
            # .ci/run is `make test` then `make mutants`: timed apart, so make test's own time is on record
            ticks = _cpu_ticks()
            test_code, test_s, test_text = _timed(["make", "test"], clone, root / "test.log")
            busy, steal = _cpu_shares(ticks, _cpu_ticks())
            passed, failed, pytest_s = _pytest_summary(test_text)
            mutants_code, mutants_s, _ = (
                _timed(["make", "mutants"], clone, root / "mutants.log") if test_code == 0 else (1, 0.0, "")
            )
            code, ci_s = test_code or mutants_code, test_s + mutants_s
            fast_code, fast_s, fast_text = _timed(["make", "test-fast"], clone, root / "fast.log")
            fast_passed, fast_failed, fast_pytest_s = _pytest_summary(fast_text)
            demo_code, demo_s, _ = _timed([".venv/bin/evalpipe", "demo"], clone, root / "demo.log")
            failures = [x for t in (test_text, fast_text) for x in t.splitlines() if x.startswith(("FAILED ", "ERROR "))]
            if failures or test_code or mutants_code or fast_code or demo_code:
                # the clone goes with the temporary directory: a failing run's logs are kept, and named below
                kept = Path(tempfile.mkdtemp(prefix="time-suite-logs-"))
                for log in root.glob("*.log"):
                    shutil.copy(log, kept / log.name)
                failures.append(f"logs: {kept}")
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()
    probe_after = _probe_s()
    lines = [
        f"$ .venv/bin/python tools/time_suite.py{f' --load {args.load}' if args.load else ''}",
        f"when {datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC; commit {commit}; {os.cpu_count()} cores; "
        f"load beside it: {args.load} busy process(es)",
        f".ci/run (fresh clone, nothing installed): exit {code}, {ci_s / 60:.1f} min; pytest: {passed} passed, "
        f"{failed} failed in {pytest_s:.1f} s",
        f"  of which make test: exit {test_code}, {test_s / 60:.1f} min; make mutants: exit {mutants_code}, "
        f"{mutants_s / 60:.1f} min",
        f"  make test outside pytest (venv, installs, ruff, mypy): {test_s - pytest_s:.1f} s; over make test the "
        f"cores were {busy:.0%} busy, {steal:.0%} taken by the hypervisor (steal)",
        f"make test-fast (venv built): exit {fast_code}, {fast_s:.0f} s; pytest: {fast_passed} passed, "
        f"{fast_failed} failed in {fast_pytest_s:.1f} s",
        f"evalpipe demo (venv built): exit {demo_code}, {demo_s:.0f} s",
        f"host speed: {PROBE_LABEL} {probe_before:.2f} s before, {probe_after:.2f} s after",
    ]
    lines += [f"  {x}" for x in failures]  # a failing run names what failed (its logs go with the clone)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0 if code == fast_code == demo_code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
