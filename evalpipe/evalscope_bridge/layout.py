"""EvalScope 1.14's output layout inside a task's ``work_dir`` and a tolerant reader for its JSONL caches.

``predictions/<model_id>/<benchmark>_<subset>.jsonl`` and ``reviews/<model_id>/<benchmark>_<subset>.jsonl``
hold one JSON object per sample (``index`` = positional index in the subset); ``configs/task_config.yaml``
is the task snapshot EvalScope compares on ``use_cache``.  EvalScope appends to the caches, so a crash
can leave a torn line in the *middle* of a file once a resumed run appends after it: the reader keeps
every line with its raw bytes and parses what it can.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_INDEX_RE = re.compile(rb'^\{"index":\s*(\d+)')


def predictions_file(work_dir: Path, model_id: str, benchmark: str, subset: str) -> Path:
    return Path(work_dir) / "predictions" / model_id / f"{benchmark}_{subset}.jsonl"


def reviews_file(work_dir: Path, model_id: str, benchmark: str, subset: str) -> Path:
    return Path(work_dir) / "reviews" / model_id / f"{benchmark}_{subset}.jsonl"


#: The task snapshot EvalScope writes before its first request, relative to the task's ``work_dir``.
SNAPSHOT_NAME = "configs/task_config.yaml"


def task_snapshot(work_dir: Path) -> Path:
    return Path(work_dir) / SNAPSHOT_NAME


def nothing_cached(work_dir: Path) -> bool:
    """No task snapshot and no prediction or review file: EvalScope never began this task (a run stopped
    before it did), so a resume has nothing of EvalScope's to restore."""
    if task_snapshot(work_dir).exists():
        return False
    folders = (Path(work_dir) / "predictions", Path(work_dir) / "reviews")
    return not any(path.is_file() for folder in folders for path in folder.rglob("*"))


def eval_log(work_dir: Path) -> Path:
    return Path(work_dir) / "logs" / "eval_log.log"


@dataclass
class CachedLine:
    """One line of an EvalScope cache file; ``data`` is None when the line is not a JSON object."""

    line_no: int
    raw: bytes
    data: dict[str, Any] | None

    @property
    def index(self) -> int | None:
        if self.data is not None:
            idx = self.data.get("index")
            return idx if isinstance(idx, int) else None
        m = _INDEX_RE.match(self.raw)
        return int(m.group(1)) if m else None


def read_lines(path: Path) -> list[CachedLine]:
    path = Path(path)
    if not path.is_file():
        return []
    out = []
    for i, raw in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            obj = None
        out.append(CachedLine(i, raw, obj if isinstance(obj, dict) else None))
    return out


# ---------------------------------------------------------------- fields of prediction / review rows


def row_messages(row: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = row.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def prompt_part(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages that were sent: everything before the trailing assistant reply(ies)."""
    end = len(messages)
    while end > 0 and messages[end - 1].get("role") == "assistant":
        end -= 1
    return messages[:end]


def final_user_content(messages: list[dict[str, Any]]) -> Any:
    for m in reversed(prompt_part(messages)):
        if m.get("role") == "user":
            return m.get("content")
    return None


def model_output(row: dict[str, Any]) -> dict[str, Any] | None:
    out = row.get("model_output")
    return out if isinstance(out, dict) else None


def first_choice(output: dict[str, Any] | None) -> dict[str, Any] | None:
    if not output:
        return None
    choices = output.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def sample_score(row: dict[str, Any]) -> dict[str, Any] | None:
    ss = row.get("sample_score")
    if not isinstance(ss, dict):
        return None
    score = ss.get("score")
    return score if isinstance(score, dict) else None
