"""The one module that reads and writes run-directory files.

* whole-file artifacts are written atomically: temp file in the same directory, fsync, rename;
* logs (``*.jsonl``) are append-only, one JSON object per line, flushed per line; a torn last line
  (crash mid-write) is tolerated by the reader and reported, never silently merged;
* versioned models are refused when they come from a newer schema than this code knows, and an older
  version is lifted to the current one in memory before validation (``evalpipe.artifacts.migrations``;
  the file is never rewritten);
* a write the file system refuses (full, over quota, read-only) is ``DiskFull`` naming the file, the stage and
  the free space, and leaves the file as it was (``evalpipe.artifacts.disk``).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, ValidationError

from evalpipe.artifacts.disk import append_whole, disk_errors
from evalpipe.artifacts.migrations import upgrade
from evalpipe.errors import ArtifactError

M = TypeVar("M", bound=BaseModel)
#: A row of a JSONL log: a dict, or the model it was validated into.
R = TypeVar("R")


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    with disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, value: Any) -> None:
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def write_model(path: Path, model: BaseModel) -> None:
    """Atomically write a pydantic artifact as indented JSON."""
    atomic_write_text(path, model.model_dump_json(indent=2) + "\n")


def write_jsonl_atomic(path: Path, rows: Iterable[BaseModel | dict[str, Any]]) -> None:
    """Write a whole JSONL table atomically (derived tables such as outcomes.jsonl)."""
    lines = []
    for row in rows:
        if isinstance(row, BaseModel):
            lines.append(row.model_dump_json())
        else:
            lines.append(json.dumps(row, ensure_ascii=False))
    atomic_write_text(path, "".join(line + "\n" for line in lines))


def read_model(path: Path, model: type[M]) -> M:
    """Read a versioned artifact; refuse a newer ``schema_version`` than the model's, lift an older one."""
    path = Path(path)
    if not path.is_file():
        raise ArtifactError(f"{path}: missing")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ArtifactError(f"{path}: unreadable JSON ({exc})") from None
    raw = upgraded(path, raw, model)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise ArtifactError(f"{path}: does not match {model.__name__}", details=_errors(exc)) from None


def check_schema_version(path: Path, raw: Any, model: type[BaseModel]) -> None:
    field = model.model_fields.get("schema_version")
    if field is None or not isinstance(raw, dict):
        return
    current = field.default
    found = raw.get("schema_version")
    if "schema_version" in raw and (not isinstance(found, int) or isinstance(found, bool)):
        raise ArtifactError(f"{path}: field schema_version: {found!r} is not an integer version")
    if isinstance(found, int) and isinstance(current, int) and found > current:
        raise ArtifactError(
            f"{path}: schema_version {found} is newer than this evalpipe understands ({current}); upgrade evalpipe"
        )


def upgraded(path: Path, raw: Any, model: type[BaseModel]) -> Any:
    """``raw`` checked (a newer version is refused) and lifted to ``model``'s current version."""
    check_schema_version(path, raw, model)
    field = model.model_fields.get("schema_version")
    if field is None or not isinstance(field.default, int):
        return raw
    return upgrade(path, raw, model.__name__, field.default)


def _errors(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        out.append(f"{loc}: {err['msg']}")
    return out


class JsonlAppender:
    """Append-only JSON-lines log; each line is written whole (one ``write`` per line, unbuffered) or —
    when the file system refuses it part-way — not at all (``DiskFull``)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        with disk_errors(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def append(self, row: BaseModel | dict[str, Any]) -> None:
        assert self._fd is not None, "appending to a closed log"
        line = row.model_dump_json() if isinstance(row, BaseModel) else json.dumps(row, ensure_ascii=False)
        with disk_errors(self.path):
            append_whole(self._fd, (line + "\n").encode("utf-8"))

    def fsync(self) -> None:
        if self._fd is not None:
            with disk_errors(self.path):
                os.fsync(self._fd)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> JsonlAppender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class JsonlReadResult(list[R], Generic[R]):
    """Rows of a JSONL log plus whether its last line was torn (crash mid-write)."""

    torn_last_line: bool = False


@overload
def read_jsonl(path: Path, model: None = None) -> JsonlReadResult[dict[str, Any]]: ...
@overload
def read_jsonl(path: Path, model: type[M]) -> JsonlReadResult[M]: ...
def read_jsonl(path: Path, model: type[M] | None = None) -> JsonlReadResult[Any]:
    """Read a JSONL log into dicts (or models); a torn final line is skipped and flagged."""
    path = Path(path)
    result: JsonlReadResult[Any] = JsonlReadResult()
    if not path.is_file():
        return result
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    torn = bool(lines and lines[-1].strip())
    n = 0
    for i, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        n += 1
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if i == len(lines) and torn:
                result.torn_last_line = True
                break
            raise ArtifactError(f"{path}:{i}: malformed JSON line") from None
        if model is not None:
            obj = upgraded(Path(f"{path}:{i}"), obj, model)
            try:
                obj = model.model_validate(obj)
            except ValidationError as exc:
                raise ArtifactError(
                    f"{path}:{i}: does not match {model.__name__}", details=_errors(exc)
                ) from None
        result.append(obj)
    return result
