"""The code sandbox of a run: resolved once at preflight, recorded in ``code_sandbox.json``, used everywhere.

A run whose benchmarks execute model-written code (``BenchmarkMeta.executes_code``) resolves
``code_execution`` before any server is launched: which sandbox (``probe.resolve``: a requested one that
does not work here is refused with one line, exit 2), how the process count is limited, and what one
sandboxed program costs to start on this host (``measure_startup``).  The record is written into the
run directory; the EvalScope worker (the review) and the outcome stage (the re-check) build their
``ProgramLauncher`` from it, so every program of the run runs in the sandbox the preflight announced,
and the audit reports it from the same file.  A run without such a benchmark probes nothing.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evalpipe.artifacts import read_model, write_model
from evalpipe.artifacts.schema.sandbox import SandboxRecord, SandboxStartup
from evalpipe.config.code_execution import CodeExecutionConfig
from evalpipe.errors import ConfigError
from evalpipe.sandbox.launcher import ProgramLauncher
from evalpipe.sandbox.probe import probe, resolve
from evalpipe.sandbox.run import process_limit_mechanism
from evalpipe.stats.descriptive import median

if TYPE_CHECKING:
    from evalpipe.artifacts import RunDir

#: Interleaved rounds of the start-up measurement (≈ 0.1–0.3 s each on an idle host).
STARTUP_ROUNDS = 5
TRIVIAL_PROGRAM = (sys.executable, "-c", "pass")


def _bare_ms() -> float:
    t0 = time.perf_counter()
    subprocess.run(TRIVIAL_PROGRAM, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def _sandboxed_ms(launcher: ProgramLauncher) -> float:
    t0 = time.perf_counter()
    with launcher.start(TRIVIAL_PROGRAM, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) as program:
        program.proc.wait()
    return (time.perf_counter() - t0) * 1000


def measure_startup(launcher: ProgramLauncher, rounds: int = STARTUP_ROUNDS) -> SandboxStartup:
    """Median wall time of a trivial program started bare and through ``launcher``, interleaved in a
    shuffled order per round (both sides see the same host load); the difference is the sandbox's cost."""
    bare: list[float] = []
    boxed: list[float] = []
    rng = random.Random(0)
    for _ in range(rounds):
        order: list[Callable[[], None]] = [
            lambda: bare.append(_bare_ms()),
            lambda: boxed.append(_sandboxed_ms(launcher)),
        ]
        rng.shuffle(order)
        for step in order:
            step()
    b, s = median(bare), median(boxed)
    return SandboxStartup(
        rounds=rounds,
        bare_ms=round(b, 1),
        sandboxed_ms=round(s, 1),
        added_ms=round(s - b, 1),
        load_1min=round(os.getloadavg()[0], 2),
    )


def prepare(config: CodeExecutionConfig, benchmarks: Sequence[str]) -> SandboxRecord:
    """Resolve the sandbox for ``benchmarks`` (``SandboxUnavailable``, exit 2, when it cannot be had) and
    measure its start-up cost."""
    kind = resolve(config)
    record_version = probe(kind).detail if kind != "none" else "no sandbox"
    launcher = ProgramLauncher.for_sandbox(kind, config.limits)
    return SandboxRecord(
        requested=config.sandbox,
        sandbox=kind,
        version=record_version,
        process_limit=process_limit_mechanism(),
        allow_unsandboxed=config.allow_unsandboxed,
        allow_unlimited_processes=config.allow_unlimited_processes,
        limits=config.limits,
        startup=measure_startup(launcher),
        benchmarks=list(benchmarks),
        resolved_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def launcher_for(record: SandboxRecord) -> ProgramLauncher:
    """The launcher every program of the run starts through."""
    return ProgramLauncher.for_sandbox(record.sandbox, record.limits)


def sandbox_line(record: SandboxRecord) -> str:
    """One line: where model-written code runs (preflight, terminal summary)."""
    limits = record.limits
    processes = {
        "rlimit": f"{limits.processes} processes (RLIMIT_NPROC)",
        "cgroup": f"{limits.processes} processes (pids cgroup)",
        "not_enforced": "process count NOT limited (root without a writable pids cgroup)",
    }[record.process_limit]
    cost = f"+{record.startup.added_ms:.0f} ms start-up per program"
    if record.sandbox == "none":
        return (
            "model-written code runs UNSANDBOXED on this host (code_execution.sandbox: none, "
            f"allow_unsandboxed: true): environment allow-list, private tmp and rlimits only; {processes}; {cost}"
        )
    return (
        f"model-written code runs in {record.sandbox} ({record.version}): no network, read-only interpreter "
        f"view, private tmp, environment allow-list; {limits.address_space_mb} MiB address space, {processes}, "
        f"{limits.file_size_mb} MiB files, {limits.cpu_s} s CPU; {cost}"
    )


def for_run(
    config: CodeExecutionConfig,
    rundir: RunDir,
    benchmarks: Sequence[str],
    *,
    fresh: bool = False,
    say: Callable[[str], None] | None = None,
) -> SandboxRecord | None:
    """The run's sandbox record: None when ``benchmarks`` (the run's benchmarks that execute model-written code:
    read by the caller from its resolved plugins, so that the sandbox needs no registry) is
    empty; else the one in the run
    directory (unless ``fresh``: resolve again, as the preflight of a run or a resume does) or a new one,
    written there.  A resumed run whose host now resolves to another sandbox is refused: its programs
    would not all have run in the sandbox its report names."""
    names = list(benchmarks)
    if not names:
        return None
    recorded = read_model(rundir.code_sandbox, SandboxRecord) if rundir.code_sandbox.is_file() else None
    if recorded is not None and not fresh:
        return recorded
    record = prepare(config, names)
    if recorded is not None and recorded.sandbox != record.sandbox:
        raise ConfigError(
            f"{rundir.code_sandbox}: this run's model-written code ran in {recorded.sandbox}; on this host "
            f"code_execution.sandbox: {config.sandbox} resolves to {record.sandbox} — resume where "
            f"{recorded.sandbox} is available, or start a new run"
        )
    write_model(rundir.code_sandbox, record)
    if say is not None:
        say(sandbox_line(record))
    return record
