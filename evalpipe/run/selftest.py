"""The self-test's two controls, run through the real pipeline (``evalpipe selftest``).

What to plant and how to judge the results is ``evalpipe.selftest.controls`` (which imports no run); running
both controls is here, beside the pipeline they run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.resolve import ResolvedRun, load_run
from evalpipe.run import pipeline
from evalpipe.run.options import FreshRun
from evalpipe.run.spec import RunSpec
from evalpipe.selftest.controls import (
    FAULT_EXPECTATIONS,
    ControlCheck,
    check_negative,
    check_positive,
    control_config,
    demo_config_path,
    fault_targets,
)

if TYPE_CHECKING:
    from evalpipe.progress import ProgressDisplay


def run_selftest(
    out_root: Path,
    *,
    config: Path | None = None,
    run: ResolvedRun | None = None,
    progress: ProgressDisplay | None = None,
) -> list[ControlCheck]:
    """Both controls on ``run`` (else the config at ``config``, default: the demo config), in
    ``out_root/positive`` and ``out_root/negative``.  Every fault whose target benchmark the config runs is
    planted (all of them for the demo config)."""
    resolved = run if run is not None else load_run(config or demo_config_path())
    cfg = resolved.config
    configured = {b.name for b in cfg.benchmarks}
    targets = fault_targets()
    faults = [f for f in FAULT_EXPECTATIONS if targets[f][0] in configured]
    checks: list[ControlCheck] = []
    positive = control_config(cfg, mode="positive", faults=faults)
    pos = pipeline.run(RunSpec(resolved.derived(positive), FreshRun(out=out_root / "positive")), progress)
    assert pos.summary is not None
    checks.append(
        ControlCheck(
            "positive control + planted faults",
            pos.summary,
            check_positive(pos.summary, pos.outcomes, faults),
        )
    )
    negative = control_config(cfg, mode="negative", faults=[])
    neg = pipeline.run(RunSpec(resolved.derived(negative), FreshRun(out=out_root / "negative")), progress)
    assert neg.summary is not None
    checks.append(ControlCheck("negative control", neg.summary, check_negative(neg.summary)))
    return checks
