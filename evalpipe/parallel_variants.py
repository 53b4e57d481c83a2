"""Paired variants at the same time (``parallel_variants: true``), each on servers of its own.

A paired sign-off on a fleet runs each variant on its own worker set (e.g. one router per variant, or two
8-GPU servers on one 16-GPU host).  Run one after the other, the second variant waits for the first; run at
once, the pair takes the time of one.  That is only sound when the variants share nothing — no worker, no
port, no GPU — so :func:`check_disjoint` compares what each variant's server kind says it occupies
(``Kind.footprint``) and refuses, naming the shared thing, before anything is sampled.

Each variant then runs as a process of its own (``python -m evalpipe.parallel_variants``, its own process
group, its output in ``RUN/<variant>/logs/run.log``): exactly the run ``evalpipe run`` does for one variant —
its own server(s), recording proxy, EvalScope, audit — with its own signal handling, so a Ctrl-C or SIGTERM
to evalpipe stops every variant cleanly (each stops its own servers) and the run can be resumed.  The paired
comparison is made once both have finished, as for variants run in turn.
"""

from __future__ import annotations

import argparse
import itertools
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError, EvalpipeError, ExitCode, RunInterrupted, RunStopped

if TYPE_CHECKING:
    from rich.progress import Progress

    from evalpipe.config.models import RunConfig
    from evalpipe.pipeline import RunResult, Spine
    from evalpipe.rundir import RunDir

RUN_LOG = "run.log"
_POLL_S = 0.2
#: Exit codes of a variant process that ended its run part-way (resumable): the server, Ctrl-C, SIGTERM.
_STOPPED = (int(ExitCode.SERVER), int(ExitCode.INTERRUPTED), int(ExitCode.TERMINATED))


def check_disjoint(cfg: RunConfig) -> None:
    """ConfigError naming the first resource two variants would share (a worker URL, a port, a GPU)."""
    from evalpipe.server.kinds.registry import server_kind
    from evalpipe.server.variants import effective_server

    footprints = {}
    for v in cfg.variants:
        server = effective_server(cfg, v.name)
        footprints[v.name] = server_kind(server.kind).footprint(cfg, server)
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
    root: Spine,
    dirs: dict[str, RunDir],
    *,
    dataset_root: Path | None,
    progress: Progress | None,
) -> dict[str, RunResult]:
    """Run every variant in its own process at the same time; their results, read from their directories.

    A variant that could not finish raises once all have ended: RunStopped (resumable: the server, an
    interrupt) with the run's root directory, else an EvalpipeError with the variant's exit code.
    """
    from evalpipe.process_group import spawn, stop_group

    if cfg.config_path is None:
        raise ConfigError("parallel_variants: the config must come from a file (each variant re-reads it)")
    procs: dict[str, subprocess.Popen[bytes]] = {}
    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    console = progress.console if progress is not None else None
    # a variant's own stop (its servers' SIGTERM grace) must fit inside ours
    grace = cfg.server.stop_timeout_s * 4 + 60
    try:
        for name, sub in dirs.items():
            sub.logs_dir.mkdir(parents=True, exist_ok=True)
            argv = [
                sys.executable,
                "-m",
                "evalpipe.parallel_variants",
                str(cfg.config_path),
                name,
                str(sub.root),
            ]
            if dataset_root is not None:
                argv += ["--dataset-root", str(dataset_root)]
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
                    if console is not None:
                        console.print(
                            f"variant {name}: finished (exit {proc.returncode}) after "
                            f"{ended[name] - started[name]:.1f} s"
                        )
            time.sleep(_POLL_S)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated): each variant stops its own servers
        from evalpipe.server.lifecycle import Terminated

        for proc in procs.values():
            stop_group(proc, grace)
        raise RunInterrupted(str(root.rundir.root), terminated=isinstance(exc, Terminated)) from None
    failed = {name: proc.returncode for name, proc in procs.items() if proc.returncode != 0}
    if failed:
        name, code = next(iter(failed.items()))
        log = dirs[name].logs_dir / RUN_LOG
        last = _last_line(log)
        message = f"variant {name} did not finish (exit {code}: {last}; log {log})"
        if code in _STOPPED:
            stopped = RunStopped(message, str(root.rundir.root))
            stopped.exit_code = ExitCode(code)
            raise stopped
        error = EvalpipeError(message)
        error.exit_code = ExitCode(code) if code in {int(c) for c in ExitCode} else ExitCode.USAGE
        raise error
    return {name: _result(dirs[name], root) for name in dirs}


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return "no log"
    errors = [ln for ln in lines if ln.startswith("error:") or "resume with:" in ln]
    return (errors or [ln for ln in lines if ln] or ["no output"])[-1]


def _result(rd: RunDir, root: Spine) -> RunResult:
    """A finished variant's RunResult from the files its process wrote."""
    from evalpipe.evalscope_bridge.stage import StageResult
    from evalpipe.io import read_jsonl, read_model
    from evalpipe.pipeline import RunResult
    from evalpipe.schema.evalscope import IndexMap
    from evalpipe.schema.outcomes import CacheRepair, OutcomeRow
    from evalpipe.schema.summary import Summary
    from evalpipe.schema.timings import StageTimings

    outcomes = [r for r in read_jsonl(rd.outcomes, OutcomeRow) if isinstance(r, OutcomeRow)]
    repairs = [r for r in read_jsonl(rd.cache_repairs, CacheRepair) if isinstance(r, CacheRepair)]
    return RunResult(
        rundir=rd,
        manifest=root.manifest,
        index_map=read_model(rd.index_map, IndexMap),
        evalscope=StageResult(repairs=repairs),
        outcomes=outcomes,
        resumed=bool(repairs),
        summary=read_model(rd.summary, Summary) if rd.summary.is_file() else None,
        timings=read_model(rd.timings, StageTimings).stages if rd.timings.is_file() else [],
    )


def main(argv: list[str] | None = None) -> int:
    """One variant's run in its own process: ``python -m evalpipe.parallel_variants CONFIG VARIANT DIR``.

    ``DIR`` already holds the variant's spine (manifest, config copy, run record); a directory with
    EvalScope outputs is resumed.  Exit code: 0 once the run is audited (the parent decides the verdict from
    ``summary.json``), else the error's own code after one line on stderr.
    """
    parser = argparse.ArgumentParser(description="one variant of a run with parallel_variants")
    parser.add_argument("config")
    parser.add_argument("variant")
    parser.add_argument("dir")
    parser.add_argument("--dataset-root", default=None)
    args = parser.parse_args(argv)

    from evalpipe.cli.console import LineProgress, err
    from evalpipe.cli.run_cmd import sigterm_interrupts

    try:
        with sigterm_interrupts():
            _run_variant(args, LineProgress(err))
    except RunStopped as exc:
        err.print(exc.resume_line(), markup=False, highlight=False, soft_wrap=True)
        return int(exc.exit_code)
    except EvalpipeError as exc:
        err.print(f"error: {exc.message}", markup=False, highlight=False, soft_wrap=True)
        for line in exc.details:
            err.print(f"  {line}", markup=False, soft_wrap=True)
        return int(exc.exit_code)
    return 0


def _run_variant(args: argparse.Namespace, progress: object) -> None:
    from evalpipe import pipeline
    from evalpipe.config.loader import load_config
    from evalpipe.io import read_model
    from evalpipe.rundir import RunDir
    from evalpipe.schema.manifest import Manifest
    from evalpipe.schema.run import RunRecord

    cfg = load_config(Path(args.config))
    rd = RunDir(Path(args.dir))
    dataset_root = Path(args.dataset_root) if args.dataset_root else None
    manifest = read_model(rd.manifest, Manifest)
    record = read_model(rd.run_record, RunRecord) if rd.run_record.is_file() else None
    datasets = pipeline.load_manifest_datasets(cfg, manifest, record, dataset_root=dataset_root)
    resuming = rd.evalscope_dir.exists() or rd.outcomes.exists()
    pipeline.run(
        cfg,
        dataset_root=dataset_root,
        resume=rd.root if resuming else None,
        progress=progress,  # type: ignore[arg-type]  # LineProgress: the part of rich's Progress runs use
        variant=args.variant,
        spine=pipeline.Spine(rd, manifest, datasets),
    )


if __name__ == "__main__":
    sys.exit(main())
