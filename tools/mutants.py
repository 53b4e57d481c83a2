"""Mutation testing on a fixed list: every mutant in ``tools/mutants.toml`` must be killed by the tests it names.

A mutant is a bug someone could plausibly write (judging units in arrival order, tuning the bet to the units
seen so far, scoring a failed attempt as right, …), written down as data: an id, a one-line description, the
file, the exact original text (it must occur exactly once there, or the run fails before any test runs: a
refactor that moves the text makes the mutant stale, never silently harmless), the replacement, and the fast
unit-tier tests that must fail under it.  ``make mutants`` runs them all and exits non-zero unless every
mutant is killed: the tests guarding the sequential rule's guarantees can fail.

Why a fixed list and a runner of our own rather than mutmut or cosmic-ray: those generate thousands of
syntactic mutants (``<`` → ``<=``, constant + 1) across a module and run the suite against each; on a 2-core
machine that takes hours, and most of what survives is noise (equivalent mutants, log text).  The bugs worth
guarding against here are semantic — a guarantee of ``evalpipe.stats.sequential`` broken in a way no
operator swap produces — and each is chosen by a person who knows which test should catch it.  The list is
the record of those choices; adding one is an edit of the TOML file, no code.

For each mutant the runner copies the working tree (without ``.venv``, ``.git``, ``results`` and caches) into a
temporary directory, applies the replacement, and runs ``sys.executable -m pytest -q -x -p no:cacheprovider
<tests>`` there with ``PYTHONPATH`` set to the copy (so the copy's ``evalpipe`` wins over an editable install
of the checkout) and a timeout.  A mutant is **killed** only when pytest exits 1 (tests ran and failed): exit
2–5 (interrupted, internal or usage error, no tests collected) and a timeout are runner errors, since a typo
in a test id must not pass for a kill.  Before any mutant, the union of the listed tests runs on an unmutated
copy and must pass.  Mutants run ``--jobs`` at a time (2 by default).

    python tools/mutants.py [--list tools/mutants.toml] [--jobs 2] [--timeout 120] [--only ID ...]
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
import tomllib
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parents[1]
DEFAULT_LIST = REPO / "tools" / "mutants.toml"

#: Never copied: the environment, history, run outputs and caches (none of them is code under test).
SKIPPED = (".venv", ".git", "results", "__pycache__", ".pytest_cache", ".ruff_cache", ".mypy_cache")

FIELDS = ("id", "description", "file", "original", "replacement", "tests")

Status = Literal["killed", "survived", "error"]


class MutantListError(Exception):
    """The mutant list cannot be run as written: a malformed entry, or a stale original text."""


@dataclass(frozen=True)
class Mutant:
    """One planted bug: ``original`` (exactly once in ``file``) becomes ``replacement``; ``tests`` must fail."""

    id: str
    description: str
    file: str
    original: str
    replacement: str
    tests: tuple[str, ...]


@dataclass(frozen=True)
class TestRun:
    """What one pytest run under a copy said: its exit code (``None``: timed out), the first failing test."""

    returncode: int | None
    first_failure: str | None
    seconds: float
    output: str


@dataclass(frozen=True)
class MutantResult:
    mutant: Mutant
    status: Status
    run: TestRun

    @property
    def killed(self) -> bool:
        return self.status == "killed"


TestRunner = Callable[[Path, Sequence[str], float], TestRun]
"""Runs the given tests in a copy of the tree (``copy``, ``tests``, ``timeout_s``)."""


def load_mutants(path: Path) -> list[Mutant]:
    """The ``[[mutant]]`` tables of a TOML file, every field required and no other allowed, ids unique."""
    with path.open("rb") as fh:
        data = tomllib.load(fh)
    extra = set(data) - {"mutant"}
    if extra:
        raise MutantListError(f"{path}: unknown top-level keys {sorted(extra)}")
    out: list[Mutant] = []
    for number, entry in enumerate(data.get("mutant", []), start=1):
        where = f"{path}: mutant #{number} ({entry.get('id', '?')})"
        missing = [f for f in FIELDS if f not in entry]
        unknown = sorted(set(entry) - set(FIELDS))
        if missing or unknown:
            raise MutantListError(f"{where}: missing {missing}, unknown {unknown}")
        tests = entry["tests"]
        if not isinstance(tests, list) or not tests or not all(isinstance(t, str) and t for t in tests):
            raise MutantListError(f"{where}: tests must be a non-empty list of test ids")
        strings = [entry[f] for f in FIELDS if f != "tests"]
        if not all(isinstance(s, str) and s for s in strings):
            raise MutantListError(
                f"{where}: id, description, file, original, replacement must be non-empty text"
            )
        if entry["original"] == entry["replacement"]:
            raise MutantListError(f"{where}: the replacement equals the original")
        out.append(
            Mutant(
                id=entry["id"],
                description=entry["description"],
                file=entry["file"],
                original=entry["original"],
                replacement=entry["replacement"],
                tests=tuple(tests),
            )
        )
    ids = [m.id for m in out]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise MutantListError(f"{path}: duplicate mutant ids {duplicates}")
    if not out:
        raise MutantListError(f"{path}: no [[mutant]] entries")
    return out


def stale(root: Path, mutants: Iterable[Mutant]) -> list[str]:
    """One line per mutant whose original text does not occur exactly once in its file under ``root``."""
    problems = []
    for m in mutants:
        path = root / m.file
        if not path.is_file():
            problems.append(f"{m.id}: {m.file} does not exist")
            continue
        count = path.read_text(encoding="utf-8").count(m.original)
        if count != 1:
            problems.append(
                f"{m.id}: its original text occurs {count} times in {m.file} (must be exactly once)"
            )
    return problems


def copy_tree(root: Path, dest: Path) -> Path:
    """The working tree under ``dest`` (links copied as links, so a symlinked ``.venv`` would not be followed)."""
    shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(*SKIPPED))
    return dest


def apply(copy: Path, mutant: Mutant) -> None:
    """Plants the mutant in the copy (its original occurs exactly once: checked before any run)."""
    path = copy / mutant.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.original) != 1:
        raise MutantListError(f"{mutant.id}: its original text is not exactly once in {mutant.file}")
    path.write_text(text.replace(mutant.original, mutant.replacement), encoding="utf-8")


_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def run_pytest(copy: Path, tests: Sequence[str], timeout_s: float) -> TestRun:
    """``sys.executable -m pytest -q -x`` on ``tests`` in ``copy``, whose own ``evalpipe`` is imported
    (``PYTHONPATH`` = the copy, ahead of an editable install of the checkout)."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-rfE", *tests]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=copy, env=env, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return TestRun(None, None, time.monotonic() - start, out)
    output = proc.stdout + proc.stderr
    found = _FAILED.search(output)
    return TestRun(proc.returncode, found.group(1) if found else None, time.monotonic() - start, output)


def classify(run: TestRun) -> Status:
    """Killed only when the tests ran and failed (pytest's exit 1); survived when they passed (0); anything
    else — a timeout, an interrupted or broken run, a usage error, no tests collected — is an error."""
    if run.returncode == 1:
        return "killed"
    if run.returncode == 0:
        return "survived"
    return "error"


def union_of_tests(mutants: Iterable[Mutant]) -> list[str]:
    """Every test id the list names, once each, in first-named order."""
    return list(dict.fromkeys(t for m in mutants for t in m.tests))


def run_mutant(root: Path, mutant: Mutant, runner: TestRunner, timeout_s: float) -> MutantResult:
    """One mutant on a fresh copy of ``root``, the copy removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutant.id}-") as tmp:
        copy = copy_tree(root, Path(tmp) / "tree")
        apply(copy, mutant)
        run = runner(copy, mutant.tests, timeout_s)
    return MutantResult(mutant, classify(run), run)


def run_baseline(root: Path, mutants: Sequence[Mutant], runner: TestRunner, timeout_s: float) -> TestRun:
    """The union of the listed tests on an unmutated copy (a kill means nothing if they fail anyway)."""
    with tempfile.TemporaryDirectory(prefix="mutant-baseline-") as tmp:
        return runner(copy_tree(root, Path(tmp) / "tree"), union_of_tests(mutants), timeout_s)


def table(results: Sequence[MutantResult]) -> str:
    """The report: one line per mutant (killed yes/no, the first failing test or why not, seconds)."""
    rows = [("mutant", "killed", "first failing test", "s")]
    for r in results:
        if r.status == "error":
            why = "timed out" if r.run.returncode is None else f"runner error: pytest exit {r.run.returncode}"
        else:
            why = r.run.first_failure or "-"
        rows.append((r.mutant.id, "yes" if r.killed else "NO", why, f"{r.run.seconds:.1f}"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(f"{a:<{widths[0]}}  {b:<{widths[1]}}  {c:<{widths[2]}}  {d:>5}" for a, b, c, d in rows)


def main(argv: Sequence[str] | None = None, *, root: Path = REPO, runner: TestRunner = run_pytest) -> int:
    """Exit 0 when every mutant was killed; 1 when one survived or errored; 2 when the list cannot run
    (stale or malformed) or the tests fail unmutated."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--list", type=Path, default=None, help="the mutant list (default tools/mutants.toml)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="mutants run at a time")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per pytest run")
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run only these mutants")
    args = parser.parse_args(argv)
    list_path: Path = args.list if args.list is not None else root / "tools" / "mutants.toml"
    started = time.monotonic()
    try:
        mutants = load_mutants(list_path)
    except (MutantListError, tomllib.TOMLDecodeError, OSError) as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2
    if args.only:
        unknown = sorted(set(args.only) - {m.id for m in mutants})
        if unknown:
            print(f"mutants: no mutant named {unknown}", file=sys.stderr)
            return 2
        mutants = [m for m in mutants if m.id in args.only]
    problems = stale(root, mutants)
    if problems:
        print("mutants: stale mutant list:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 2
    baseline = run_baseline(root, mutants, runner, args.timeout)
    if baseline.returncode != 0:
        print(
            f"mutants: the listed tests do not pass unmutated (pytest exit {baseline.returncode}, "
            f"first failure {baseline.first_failure}):\n{baseline.output[-4000:]}",
            file=sys.stderr,
        )
        return 2
    print(f"baseline: {len(union_of_tests(mutants))} test ids pass unmutated ({baseline.seconds:.1f} s)")
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda m: run_mutant(root, m, runner, args.timeout), mutants))
    print(table(results))
    for r in results:
        if r.status == "error":
            print(f"\n--- {r.mutant.id}: runner error, pytest said:\n{r.run.output[-2000:]}", file=sys.stderr)
    killed = sum(r.killed for r in results)
    print(f"{killed}/{len(results)} mutants killed in {time.monotonic() - started:.1f} s")
    return 0 if killed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
