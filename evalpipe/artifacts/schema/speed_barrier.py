"""The speed barrier's files (``RUN/speed_barrier/``, ``evalpipe.speed.barrier``), one model each.

* ``Arrival`` — ``<variant>.arrived.json``: the variant's evaluation is done and its server waits, up;
* ``RoundsStarted`` — ``started.json``: the parent runs the alternating rounds;
* ``Release`` — ``release.json``: the end of the barrier and how it ended.

Only the parent and its variant processes read them, while the run lasts; they are versioned like every
other run-directory file, so a resumed run reads them through the same reader.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact

ReleaseOutcome = Literal["measured", "not_run", "abandoned"]


class Arrival(Artifact):
    """A variant whose evaluation is done and whose server waits, up, for the speed rounds."""

    schema_version: int = 1
    variant: str
    base_url: str
    arrived_at: str = Field(description="UTC, ISO 8601.")


class RoundsStarted(Artifact):
    """The parent has every arrival and is running the rounds; a waiting variant bounds its wait from here."""

    schema_version: int = 1
    started_at: str = Field(description="UTC, ISO 8601.")
    bound_s: float


class Release(Artifact):
    """The end of the barrier: the rounds ran (``measured``), could not run (``not_run``: the reason is in
    every variant's ``speed_error.txt``), or were given up because a variant ended first (``abandoned``)."""

    schema_version: int = 1
    outcome: ReleaseOutcome
    message: str
    released_at: str = Field(description="UTC, ISO 8601.")
