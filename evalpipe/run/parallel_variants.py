"""Paired variants at the same time (``parallel_variants: true``), each on servers of its own.

A paired sign-off on a fleet runs each variant on its own worker set (e.g. one router per variant, or two
8-GPU servers on one 16-GPU host).  Run one after the other, the second variant waits for the first; run at
once, the pair takes the time of one.  That is only sound when the variants share nothing — no worker, no
port, no GPU — so :func:`check_disjoint` compares what each variant's server kind says it occupies
(``Kind.footprint``) and refuses, naming the shared thing, before anything is sampled.

Each variant then runs as a process of its own (``python -m evalpipe.run.variant_process``, its own process
group, its output in ``RUN/<variant>/logs/run.log``): exactly the run ``evalpipe run`` does for one variant —
its own server(s), recording proxy, EvalScope, outcomes — with its own signal handling, so a Ctrl-C or
SIGTERM to evalpipe stops every variant cleanly (each stops its own servers) and the run can be resumed.  The
paired comparison is made once both have finished, then each variant is audited, as for variants run in turn.

With a ``speed:`` section the serving benchmark is not each variant's own (it would overlap the other's
evaluation on the same host): each variant's server waits, up, at a barrier once its evaluation is done, and
this process runs the speed rounds alternating across every variant's server (``evalpipe.speed.barrier``),
then releases them.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError, EvalpipeError, ExitCode, RunInterrupted, RunStopped
from evalpipe.processes.group import spawn, stop_group
from evalpipe.processes.signals import Terminated
from evalpipe.run.sequential_stop import arm_for
from evalpipe.server.launch_env import api_key
from evalpipe.server.variants import effective_server
from evalpipe.speed.barrier import BARRIER_DIR, SpeedCoordinator, needs_barrier
from evalpipe.speed.stage import check_before_launch

if TYPE_CHECKING:
    from evalpipe.artifacts import RunDir
    from evalpipe.config.models import RunConfig
    from evalpipe.progress import ProgressDisplay
    from evalpipe.resolve import ResolvedRun
    from evalpipe.speed.barrier import SpeedCoordinator

RUN_LOG = "run.log"
#: The module each variant runs as (``python -m``); named, not imported: it imports the pipeline.
VARIANT_PROCESS = "evalpipe.run.variant_process"
_POLL_S = 0.2
#: Exit codes of a variant process that ended its run part-way (resumable): the server, Ctrl-C, SIGTERM.
_STOPPED = (int(ExitCode.SERVER), int(ExitCode.INTERRUPTED), int(ExitCode.TERMINATED))


def check_disjoint(run: ResolvedRun) -> None:
    """ConfigError naming the first resource two variants would share (a worker URL, a port, a GPU), as each
    variant's resolved kind states it."""
    cfg = run.config
    footprints = {}
    for v in cfg.variants:
        server = effective_server(cfg, v.name)
        footprints[v.name] = run.kinds[server.kind].footprint(cfg, server)
    for (a, fa), (b, fb) in itertools.combinations(footprints.items(), 2):
        shared = sorted(fa & fb)
        if shared:
            raise ConfigError(
                f"parallel_variants: variants {a} and {b} would share {shared[0]}"
                + (f" (+{len(shared) - 1} more)" if len(shared) > 1 else "")
                + "; give each variant its own workers, ports and GPUs (variants[*].overrides), or run them "
                "one after the other (parallel_variants: false)"
            )


def run_at_once(
    cfg: RunConfig,
    root: Path,
    dirs: dict[str, RunDir],
    *,
    dataset_root: Path | None,
    progress: ProgressDisplay | None,
    finished: set[str],
) -> None:
    """Run every variant in its own process at the same time (``root``: the run's directory); each leaves
    its results in its own directory, which the pipeline reads as for a variant run in turn.  ``finished``
    gains each variant whose process ended with exit 0 (its outcomes written).

    A variant that could not finish raises once all have ended: RunStopped (resumable: the server, an
    interrupt) with the run's root directory, else an EvalpipeError with the variant's exit code.
    """
    if cfg.config_path is None:
        raise ConfigError("parallel_variants: the config must come from a file (each variant re-reads it)")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    console = progress.console if progress is not None else None
    speed = _speed_coordinator(cfg, root, dirs, progress)
    # the sequential rule stopping inside the run: a variant process that ends without saying so (killed)
    # must not leave the others waiting for its units (evalpipe.run.sequential_stop)
    arms = {name: arm_for(cfg, name, root, together=True) for name in dirs}
    # a variant's own stop (its servers' SIGTERM grace) must fit inside ours
    grace = cfg.server.stop_timeout_s * 4 + 60
    try:
        for name, sub in dirs.items():
            sub.logs_dir.mkdir(parents=True, exist_ok=True)
            argv = _variant_argv(cfg, name, sub, dataset_root, speed.directory if speed is not None else None)
            with open(sub.logs_dir / RUN_LOG, "ab") as out:
                # SIGTERM if we are killed: the variant then stops its own servers
                procs[name] = spawn(
                    argv, stdout=out, stderr=subprocess.STDOUT, die_with_parent=signal.SIGTERM
                )
            started[name] = time.monotonic()
            if console is not None:
                console.print(f"variant {name}: started (log {sub.logs_dir / RUN_LOG})")
        while len(ended) < len(procs):
            for name, proc in procs.items():
                if name not in ended and proc.poll() is not None:
                    ended[name] = time.monotonic()
                    if proc.returncode == 0:
                        finished.add(name)
                    arm = arms[name]
                    if arm is not None:  # however it ended (killed too): no arm waits for it any longer
                        arm.end()
                    if console is not None:
                        console.print(
                            f"variant {name}: finished (exit {proc.returncode}) after "
                            f"{ended[name] - started[name]:.1f} s"
                        )
            if speed is not None:  # every variant at the barrier: the alternating rounds (blocks)
                speed.step({name: procs[name].returncode for name in ended})
            time.sleep(_POLL_S)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): each variant stops its own servers
        for proc in procs.values():
            stop_group(proc, grace)
        raise RunInterrupted(str(root), terminated=isinstance(exc, Terminated)) from None
    failed = {name: proc.returncode for name, proc in procs.items() if proc.returncode != 0}
    if failed:
        _raise_first_failure(failed, dirs, root)


def _variant_argv(
    cfg: RunConfig, name: str, sub: RunDir, dataset_root: Path | None, barrier: Path | None
) -> list[str]:
    """The command line of one variant's own process (``evalpipe.run.variant_process``)."""
    assert cfg.config_path is not None
    argv = [sys.executable, "-m", VARIANT_PROCESS, str(cfg.config_path), name, str(sub.root)]
    if dataset_root is not None:
        argv += ["--dataset-root", str(dataset_root)]
    if cfg.no_speed:  # the variant reloads the config file: it drops the speed section itself
        argv.append("--no-speed")
    if cfg.speed is not None:  # the parent runs the speed rounds (or they are all in the run already)
        argv.append("--speed-by-parent")
    if barrier is not None:
        argv += ["--speed-barrier", str(barrier)]
    return argv


def _raise_first_failure(failed: dict[str, int], dirs: dict[str, RunDir], root: Path) -> None:
    """The first variant that could not finish, as the run's error: RunStopped (resumable) for a stop, else an
    EvalpipeError carrying its exit code."""
    name, code = next(iter(failed.items()))
    log = dirs[name].logs_dir / RUN_LOG
    message = f"variant {name} did not finish (exit {code}: {_last_line(log)}; log {log})"
    if code in _STOPPED:
        stopped = RunStopped(message, str(root))
        stopped.exit_code = ExitCode(code)
        raise stopped
    error = EvalpipeError(message)
    error.exit_code = ExitCode(code) if code in {int(c) for c in ExitCode} else ExitCode.USAGE
    raise error


def _speed_coordinator(
    cfg: RunConfig, root: Path, dirs: dict[str, RunDir], progress: ProgressDisplay | None
) -> SpeedCoordinator | None:
    """The barrier for the speed rounds (``evalpipe.speed.barrier``), reset, when the run has a speed section
    whose alternating rounds are not all in the run yet; the client and tokenizer are checked here, once,
    before any variant launches a server (one line, exit 2)."""
    # only runs with ``speed:`` need the speed stage and its barrier (~0.3 s of imports)

    if cfg.speed is None or not needs_barrier(cfg.speed, [d.root for d in dirs.values()]):
        return None
    check_before_launch(cfg.speed, cfg.base_dir(), client_env=cfg.server.env)
    if progress is not None:
        console = progress.console

        def say(line: str) -> None:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    else:

        def say(line: str) -> None:
            print(line, file=sys.stderr, flush=True)

    coordinator = SpeedCoordinator(
        directory=root / BARRIER_DIR,
        cfg=cfg.speed,
        out_dirs={name: d.root for name, d in dirs.items()},
        api_keys={name: api_key(effective_server(cfg, name)) for name in dirs},
        served_model=cfg.model.served_name,
        base_dir=cfg.base_dir(),
        say=say,
        client_env=cfg.server.env,
    )
    coordinator.reset()
    return coordinator


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return "no log"
    errors = [ln for ln in lines if ln.startswith("error:") or "resume with:" in ln]
    return (errors or [ln for ln in lines if ln] or ["no output"])[-1]
