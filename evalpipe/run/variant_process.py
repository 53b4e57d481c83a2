"""One variant of a run with ``parallel_variants``, in a process of its own (started by
``evalpipe.run.parallel_variants``): ``python -m evalpipe.run.variant_process CONFIG VARIANT DIR``.

Not a user command: the parent ``evalpipe run`` prepares ``DIR`` and reads it back once this process ends.
Kept apart from ``evalpipe.run.parallel_variants`` (which ``run.variants`` imports) because it imports the
pipeline.  In ``run/``, below the command line: the parent launches it by module name, and a launch is an
edge like an import (``tools/layers.py``); it prints its progress and errors on stderr itself (its output is
the variant's ``logs/run.log``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.errors import EvalpipeError, RunStopped

if TYPE_CHECKING:
    from rich.console import Console

    from evalpipe.progress import ProgressDisplay


def main(argv: list[str] | None = None) -> int:
    """One variant's run in its own process: ``python -m evalpipe.run.variant_process CONFIG VARIANT DIR``.

    ``DIR`` already holds the variant's spine (manifest, config copy, run record); a directory with
    EvalScope outputs is resumed.  Exit code: 0 once its outcomes and provenance are written (the parent
    compares the variants, then audits each once), else the error's own code after one line on stderr.
    """
    parser = argparse.ArgumentParser(description="one variant of a run with parallel_variants")
    parser.add_argument("config")
    parser.add_argument("variant")
    parser.add_argument("dir")
    parser.add_argument("--dataset-root", default=None)
    parser.add_argument(
        "--speed-by-parent",
        action="store_true",
        help="the speed benchmark is the parent's: wait at --speed-barrier, or (without) it is already measured",
    )
    parser.add_argument(
        "--speed-barrier", default=None, help="the barrier directory (evalpipe.speed.barrier)"
    )
    parser.add_argument("--no-speed", action="store_true", help="the run's --no-speed: no speed section")
    args = parser.parse_args(argv)
    parent_pid = os.getppid()  # the run that coordinates the barrier; a changed parent pid means it has gone

    # import cost: loaded after the arguments parse (6 modules: signal, progress)
    from evalpipe.processes.signals import sigterm_interrupts
    from evalpipe.progress import LineProgress

    err = _stderr()

    try:
        with sigterm_interrupts():
            _run_variant(args, LineProgress(err), parent_pid)
    except RunStopped as exc:
        err.print(exc.resume_line(), markup=False, highlight=False, soft_wrap=True)
        return int(exc.exit_code)
    except EvalpipeError as exc:
        err.print(f"error: {exc.message}", markup=False, highlight=False, soft_wrap=True)
        for line in exc.details:
            err.print(f"  {line}", markup=False, soft_wrap=True)
        return int(exc.exit_code)
    return 0


def _stderr() -> Console:
    """The variant's stderr: its ``logs/run.log``, so 120 columns rather than rich's 80 for a file."""
    # import cost: rich (~73 modules), loaded once the arguments parsed
    from rich.console import Console

    return Console(stderr=True, highlight=False, width=120)


def _run_variant(args: argparse.Namespace, progress: ProgressDisplay, parent_pid: int) -> None:
    # import cost: the pipeline (~394 modules), loaded once the arguments parsed
    from evalpipe.artifacts import RunDir, read_model
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.artifacts.schema.run import RunRecord
    from evalpipe.resolve import load_run
    from evalpipe.run import pipeline
    from evalpipe.run.options import Coordination, ParentSpeed, SampledRun, ServerTarget
    from evalpipe.run.sample import Spine, load_manifest_datasets
    from evalpipe.run.sequential_stop import arm_for
    from evalpipe.run.spec import RunSpec
    from evalpipe.speed.barrier import VariantBarrier

    resolved = load_run(Path(args.config), notice=False)
    if args.no_speed:  # the waiver only matters to the audit, which reads it from run.json
        resolved = resolved.derived(resolved.config.accuracy_only())
    cfg = resolved.config
    rd = RunDir(Path(args.dir))
    dataset_root = Path(args.dataset_root) if args.dataset_root else None
    manifest = read_model(rd.manifest, Manifest)
    record = read_model(rd.run_record, RunRecord) if rd.run_record.is_file() else None
    datasets = load_manifest_datasets(cfg, manifest, record, dataset_root=dataset_root)
    resuming = rd.evalscope_dir.exists() or rd.outcomes.exists()
    # the arms run at once: each advances with the others (evalpipe.run.sequential_stop)
    arm = arm_for(cfg, args.variant, rd.root.parent, together=True)
    if arm is not None:
        arm.begin()
    try:
        barrier = (
            VariantBarrier(Path(args.speed_barrier), args.variant, parent_pid) if args.speed_barrier else None
        )
        plan = RunSpec(
            resolved,
            SampledRun(Spine(rd, manifest, datasets), resuming=resuming),
            ServerTarget(variant=args.variant),
            Coordination(
                parent_speed=ParentSpeed(barrier) if args.speed_by_parent else None, sequential_arm=arm
            ),
            audit=False,  # the parent audits every variant once, after the comparison
        )
        pipeline.run(plan, progress)
    finally:
        if arm is not None:
            arm.end()


if __name__ == "__main__":
    sys.exit(main())
