"""``evalpipe replay`` and ``evalpipe reproduce``: re-run the evaluation of a bundle without a GPU.

The recorded responses are served by the replay server through the normal launcher and recording
proxy; EvalScope re-renders the prompts from the pinned datasets and re-scores; the audit runs again.
Then every sample's score and failure class, and every benchmark's correct/scored, are compared with the
bundle's.  Identical → exit 0; otherwise exit 1 with a per-sample diff.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evalpipe.artifacts import RunDir, read_jsonl, read_model, write_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.config.models import ReplayConfig, RunConfig
from evalpipe.errors import ArtifactError

if TYPE_CHECKING:
    from evalpipe.progress import ProgressDisplay

REQUIRED = ("manifest", "run_record", "config_copy", "outcomes", "requests_log", "responses_log", "summary")


@dataclass
class ReplayResult:
    rundir: RunDir
    identical: bool
    differences: list[str]
    bundle_problems: list[str] = field(default_factory=list)
    summary: Summary | None = None


def _check_source(src: RunDir) -> None:
    missing = [getattr(src, name).name for name in REQUIRED if not getattr(src, name).is_file()]
    if missing:
        raise ArtifactError(f"{src.root}: not a run directory or bundle (missing {', '.join(missing)})")


def load_source_config(src: RunDir) -> tuple[RunConfig, RunRecord]:
    # import cost: the config loader and yaml (~21 modules), only on this path
    from evalpipe.config.loader import load_config

    run = read_model(src.run_record, RunRecord)
    cfg = load_config(src.config_copy, check_sampling=False)
    # relative paths in the copied config resolve against the original config's directory when it exists
    original = Path(run.config_path) if run.config_path else None
    cfg._config_path = original if original is not None and original.is_file() else src.config_copy.resolve()
    return cfg, run


def replay_config(cfg: RunConfig, run: RunRecord, src: RunDir, dest: RunDir) -> RunConfig:
    """The original config with the server replaced by the replay server (same verification targets), without
    its speed section."""
    # import cost: the server variants and process helpers (~16 modules), only on this path
    from evalpipe.server.variants import effective_server

    original = effective_server(cfg, run.variant)
    server = original.model_copy(
        update={
            "kind": "replay",
            "replay": ReplayConfig(
                bundle=str(src.root.resolve()), miss_log=str(dest.replay_misses.resolve())
            ),
            "host": "127.0.0.1",
            "port": 0,
            "endpoint": None,
            "env": {},
            "api_key_env": None,
            "launch_timeout_s": 120.0,
            "stop_timeout_s": 10.0,
            "on_mismatch": "warn",
        }
    )
    # no speed benchmark: the replay server answers from recorded responses, its speed says nothing
    out = cfg.model_copy(update={"server": server, "variants": [], "component_tests": [], "speed": None})
    out._config_path = cfg.config_path
    return out


def compare_outcomes(original: list[OutcomeRow], replayed: list[OutcomeRow]) -> list[str]:
    a = {(r.benchmark, r.source_id): r for r in original}
    b = {(r.benchmark, r.source_id): r for r in replayed}
    diffs = []
    for key in sorted(a.keys() | b.keys()):
        x, y = a.get(key), b.get(key)
        if x is None or y is None:
            diffs.append(f"{key[0]} {key[1]}: only in the {'original' if y is None else 'replay'}")
            continue
        fields = []
        if x.score != y.score:
            fields.append(f"score {x.score} → {y.score}")
        if x.failure_label != y.failure_label:
            fields.append(f"class {x.failure_label} → {y.failure_label}")
        if x.scores != y.scores:
            fields.append(f"metrics {x.scores} → {y.scores}")
        if x.response_sha256 != y.response_sha256:
            fields.append("response text differs")
        if fields:
            diffs.append(f"{key[0]} {key[1]}: " + "; ".join(fields))
    return diffs


def compare_summaries(original: Summary, replayed: Summary) -> list[str]:
    a = {b.benchmark: b for b in original.benchmarks}
    diffs = []
    for b in replayed.benchmarks:
        x = a.get(b.benchmark)
        if x is None:
            diffs.append(f"{b.benchmark}: not in the original summary")
            continue
        if (x.correct, x.scored, x.score) != (b.correct, b.scored, b.score):
            diffs.append(
                f"{b.benchmark}: {x.correct}/{x.scored} (original) vs {b.correct}/{b.scored} (replay)"
            )
    return diffs


def replay(
    source: Path,
    *,
    dataset_root: Path | None = None,
    out: Path | None = None,
    progress: ProgressDisplay | None = None,
) -> ReplayResult:
    # import cost: the pipeline behind a replay (~208 modules), loaded when a replay runs
    from evalpipe.replay.publish import check_bundle
    from evalpipe.resolve import resolve
    from evalpipe.run import pipeline
    from evalpipe.run.options import SampledRun
    from evalpipe.run.sample import Spine, load_manifest_datasets
    from evalpipe.run.spec import RunSpec

    src = RunDir(Path(source))
    _check_source(src)
    bundle_problems = check_bundle(src.root)
    cfg, run = load_source_config(src)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    dest = RunDir(Path(out) if out else cfg.resolve_path(cfg.output_root) / f"replay-{src.root.name}-{stamp}")
    dest.root.mkdir(parents=True, exist_ok=True)
    for name in ("manifest", "sampled_ids", "config_copy"):
        s, d = getattr(src, name), getattr(dest, name)
        if s.is_file():
            shutil.copyfile(s, d)
    write_model(dest.run_record, run.model_copy(update={"run_id": f"replay-{run.run_id}"}))
    rcfg = replay_config(cfg, run, src, dest)
    manifest = read_model(dest.manifest, Manifest)
    datasets = load_manifest_datasets(rcfg, manifest, run, dataset_root=dataset_root)
    plan = RunSpec(resolve(rcfg, check_sampling=False), SampledRun(Spine(dest, manifest, datasets)))
    result = pipeline.run(plan, progress)
    original = list(read_jsonl(src.outcomes, OutcomeRow))
    diffs = compare_outcomes(original, result.outcomes)
    if result.summary is not None:
        diffs += compare_summaries(read_model(src.summary, Summary), result.summary)
    return ReplayResult(dest, not diffs, diffs, bundle_problems, result.summary)
