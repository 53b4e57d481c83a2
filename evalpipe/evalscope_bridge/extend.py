"""``evalpipe run --extend RUN``: the old run's answered samples become the new run's EvalScope cache.

The larger selection is materialized afresh, so an old sample usually sits at another position of its
subset; its cached predictions are copied into the new run's work directory with the ``index`` rewritten
to the new position (× repeats + attempt, ``evalscope_index``).  Reviews are not copied: EvalScope
re-reviews every reused prediction, so the new run's scores come from one review pass.  The copied rows
then go through the resume path unchanged — ``run_evalscope(resume=True)`` checks every cached row's
prompt against the new rendering (``identity.verify_and_repair``) before EvalScope may reuse it, and
EvalScope sends only the samples without a cached prediction.  The old request log is carried over so
the audit can link every reused response to the request that produced it.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from evalpipe.artifacts import RunDir, atomic_write_text, read_model
from evalpipe.artifacts.schema.evalscope import EvalscopeTasks, IndexMap
from evalpipe.errors import ConfigError
from evalpipe.evalscope_bridge.layout import predictions_file
from evalpipe.evalscope_bridge.task import evalscope_index, task_repeats


@dataclass(frozen=True)
class SeededCache:
    reused: int  # old manifest entries whose predictions were carried over
    predictions: int  # prediction rows copied


def seed_from_run(old: RunDir, new: RunDir, new_index_map: IndexMap, repeats: int) -> SeededCache:
    """Copy ``old``'s predictions into ``new``'s EvalScope work directories at the new indices."""
    tasks = read_model(old.evalscope_tasks, EvalscopeTasks)
    old_map = read_model(old.index_map, IndexMap)
    position = {(e.benchmark, e.source_id): (e.subset, e.index) for e in new_index_map.entries}
    reused = copied = 0
    for task in tasks.tasks:
        old_repeats = task_repeats(task.task)
        if old_repeats != repeats:
            raise ConfigError(
                f"--extend {old.root}: {task.benchmark} ran {old_repeats} attempt(s) per sample, the config "
                f"asks {repeats} (generation.repeats must stay the same)"
            )
        entries = old_map.for_benchmark(task.benchmark)
        by_old = {(e.subset, e.index): e for e in entries}
        work = new.evalscope_work_dir(task.benchmark)
        lines_by_file: dict[Path, list[str]] = {}
        for subset in sorted({e.subset for e in entries}):
            source = predictions_file(old.root / task.work_dir, task.model_id, task.benchmark, subset)
            if not source.is_file():
                continue
            for raw in source.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(raw)
                except json.JSONDecodeError:
                    continue  # a torn last line: the resume check would discard it anyway
                index = row.get("index") if isinstance(row, dict) else None
                if not isinstance(index, int):
                    continue
                entry = by_old.get((subset, index // repeats))
                target = position.get((task.benchmark, entry.source_id)) if entry is not None else None
                if target is None:
                    continue
                row["index"] = evalscope_index(target[1], index % repeats, repeats)
                dest = predictions_file(work, task.model_id, task.benchmark, target[0])
                lines_by_file.setdefault(dest, []).append(json.dumps(row, ensure_ascii=False))
                copied += 1
        for dest, lines in lines_by_file.items():
            dest.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(dest, "\n".join(lines) + "\n")
        reused += len(entries)
    for log in (old.requests_log, old.responses_log):
        if log.is_file():
            shutil.copyfile(log, new.root / log.name)
    return SeededCache(reused=reused, predictions=copied)
