"""The self-test's controls on every registered benchmark (or a chosen few): one config, two pipeline runs.

The config is the demo config (``configs/demo.yaml``: answer-key server, generation, thinking mode) with
one entry per benchmark: the demo's own entry where it has one, otherwise the benchmark's bundled
miniature sampled by ``samplers/demo/<name>.yaml`` — or, without that file, every bundled record.
Every benchmark gets a ``min_score`` gate of 0.5, so the negative control must fail the gates.
``evalpipe.run.selftest.run_selftest`` runs it: the positive control with every fault whose target
is among the benchmarks, then the negative control, one EvalScope worker for each run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.artifacts import RunDir, read_jsonl
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.benchmarks import benchmark
from evalpipe.run.selftest import run_selftest
from evalpipe.selftest.controls import ControlCheck, demo_config_path
from helpers.config import config_data, write_config

REPO = Path(__file__).resolve().parents[2]
GATE = 0.5


@dataclass(frozen=True)
class RegistryControls:
    benchmarks: tuple[str, ...]
    root: Path
    positive: ControlCheck
    negative: ControlCheck

    def rundir(self, mode: str) -> RunDir:
        return RunDir(self.root / mode)

    def outcomes(self, mode: str, name: str) -> list[OutcomeRow]:
        return [r for r in read_jsonl(self.rundir(mode).outcomes, OutcomeRow) if r.benchmark == name]


def _entry(name: str, demo: dict[str, dict[str, Any]]) -> dict[str, Any]:
    spec = benchmark(name)
    source = {"local": str(spec.bundled_dir())}
    if name in demo:
        entry = dict(demo[name])
        entry["sampling"] = str((demo_config_path().parent / entry["sampling"]).resolve())
        return {**entry, "source": source}
    plan = REPO / "samplers" / "demo" / f"{name}.yaml"
    if plan.is_file():
        sampling: str | dict[str, Any] = str(plan)
    else:
        n = len(spec.load_local(spec.bundled_dir(), None).eval.records)
        sampling = {"stratify_by": "none", "total": n, "allocation": "uniform"}
    return {"name": name, "few_shot": 0, "sampling": sampling, "source": source}


def controls_config(path: Path, names: Sequence[str]) -> Path:
    """The demo config with one entry per benchmark in ``names`` and a min_score gate on each."""
    demo = {b["name"]: b for b in config_data(base=demo_config_path())["benchmarks"]}
    return write_config(
        path,
        base=demo_config_path(),
        name="registry-controls",
        description="The demo's controls on every benchmark of the registry (tests/helpers/registry_controls.py).",
        benchmarks=[_entry(n, demo) for n in names],
        output_root=str(path.parent / "results"),
        gates={"min_score": dict.fromkeys(names, GATE)},
    )


def run_registry_controls(root: Path, names: Sequence[str]) -> RegistryControls:
    config = controls_config(root / "registry-controls.yaml", names)
    positive, negative = run_selftest(root, config=config)
    return RegistryControls(tuple(names), root, positive, negative)
