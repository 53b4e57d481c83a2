"""The run directory's files — one public face for reading and writing them.

Every stage reads and writes run-directory files through the names re-exported here: ``RunDir`` (and a
server's ``ServerFiles``) spell the file names (``rundir``), and the one reader/writer (``io``) writes whole
files atomically, appends logs line by line, refuses a schema version newer than the code and lifts an
older one in memory (``migrations``).  The versioned models those files hold are
``evalpipe.artifacts.schema.<file>``, imported from there by the stages that write or read them (re-exporting
every model here would make each writer import all of them).  Secrets are masked before
anything reaches a file (``redact``).
"""

from evalpipe.artifacts.io import (
    JsonlAppender,
    JsonlReadResult,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    check_schema_version,
    read_jsonl,
    read_model,
    upgraded,
    write_jsonl_atomic,
    write_model,
)
from evalpipe.artifacts.rundir import RunDir, ServerFiles, recorded_run

__all__ = [
    "JsonlAppender",
    "JsonlReadResult",
    "RunDir",
    "ServerFiles",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "check_schema_version",
    "read_jsonl",
    "read_model",
    "recorded_run",
    "upgraded",
    "write_jsonl_atomic",
    "write_model",
]
