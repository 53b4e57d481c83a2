"""Before a resume appends to a run directory: cut every log back to its last whole record.

evalpipe's own writers never leave a partial record (``artifacts.disk``: a refused write is cut back), but a
crash mid-write (``kill -9``, power loss) can, and an append after a torn line would bury it mid-file where
every reader refuses it.  So ``--resume`` first cuts the torn tail of each of evalpipe's logs —
``requests.jsonl``, ``responses.jsonl.gz`` (to its last complete gzip member) and the run's other ``*.jsonl``
— and logs each cut (``logs/torn_repairs.jsonl`` and one notice line).  EvalScope's prediction and review
caches are not cut here: the cache-identity check of the resume drops an unreadable row there and records it
(``cache_repairs.jsonl``, reason ``unreadable``), and the sample is asked again.  Damage before the last
record is not repaired: the readers refuse it with a line naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path

from evalpipe.artifacts import JsonlAppender, RunDir
from evalpipe.artifacts.disk import repair_torn_tail
from evalpipe.clock import utc_now
from evalpipe.recording.responses import complete_members_end


def repair_torn_files(rd: RunDir) -> list[str]:
    """Cut torn tails (see the module docstring); one sentence per file cut."""
    cuts: list[tuple[Path, int]] = []
    for path in sorted(p for p in rd.root.glob("*.jsonl") if p.is_file()):
        removed = repair_torn_tail(path)
        if removed:
            cuts.append((path, removed))
    gz = rd.responses_log
    if gz.is_file():
        end, size = complete_members_end(gz), gz.stat().st_size
        if end < size:
            with open(gz, "rb+") as fh:
                fh.truncate(end)
                os.fsync(fh.fileno())
            cuts.append((gz, size - end))
    if not cuts:
        return []
    said = []
    with JsonlAppender(rd.torn_repairs) as log:
        for path, removed in cuts:
            rel = path.relative_to(rd.root)
            log.append({"at": utc_now(), "file": str(rel), "bytes_removed": removed})
            said.append(
                f"resume: cut a torn last record from {rel} ({removed} bytes; written when the run stopped)"
            )
    return said
