"""The messages each manifest entry was sent with, as EvalScope's predictions recorded them.

The explorer shows a sample's prompt exactly as sent; only EvalScope's prediction rows hold the messages
(the proxy keeps their hash, not their text), and only this package knows where those rows live.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.evalscope import EvalscopeTasks, IndexMap
from evalpipe.evalscope_bridge.layout import predictions_file, prompt_part, read_lines, row_messages
from evalpipe.evalscope_bridge.task import evalscope_index, task_repeats
from evalpipe.hashing import message_text

#: (benchmark, source_id) → [(role, text)] of the first attempt's prompt
SentPrompts = dict[tuple[str, str], list[tuple[str, str]]]


def sent_prompts(rundir: RunDir) -> SentPrompts:
    """The prompt of each entry's first attempt (the last prediction line of its index, as the outcomes
    stage reads it); entries without a prediction are absent."""
    if not rundir.evalscope_tasks.is_file() or not rundir.index_map.is_file():
        return {}
    tasks = read_model(rundir.evalscope_tasks, EvalscopeTasks)
    index_map = read_model(rundir.index_map, IndexMap)
    rows: dict[Path, dict[int, dict[str, Any]]] = {}
    out: SentPrompts = {}
    for entry in index_map.entries:
        task = tasks.task_for(entry.benchmark)
        if task is None:
            continue
        path = predictions_file(rundir.root / task.work_dir, task.model_id, entry.benchmark, entry.subset)
        if path not in rows:
            by_index: dict[int, dict[str, Any]] = {}
            for line in read_lines(path):
                if line.data is not None and isinstance(line.data.get("index"), int):
                    by_index[line.data["index"]] = line.data
            rows[path] = by_index
        pred = rows[path].get(evalscope_index(entry.index, 0, task_repeats(task.task)))
        if pred is None:
            continue
        out[(entry.benchmark, entry.source_id)] = [
            (str(m.get("role")), message_text(m.get("content"))) for m in prompt_part(row_messages(pred))
        ]
    return out
