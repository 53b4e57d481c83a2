"""Wall-clock timestamps as artifacts record them (ISO 8601, UTC).

Kept apart from ``evalpipe.run.provenance`` (which imports the config models) so that server and fleet modules
can stamp their records without importing the configuration: the import graph stays acyclic.
"""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now, in UTC, as an ISO 8601 string with offset (what every artifact's ``*_at`` field holds)."""
    return datetime.now(UTC).isoformat()
