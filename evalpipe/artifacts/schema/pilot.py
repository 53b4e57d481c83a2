"""``pilot.json``: what the internal pilot measured and the attempts it chose for the remaining units.

Written once, at the paired run's root and copied into every variant's directory, after every arm sent the pilot
units (``generation.sequential.pilot``; the rule in ``evalpipe.stats.pilot``) and before any remaining unit is sent.
A resumed run reads it back instead of deciding again: the decision is made once, on the pilot's answers only.
"""

from __future__ import annotations

from functools import cached_property

from pydantic import BaseModel, ConfigDict, Field

from evalpipe.artifacts.schema.base import Artifact


class PilotBlock(BaseModel):
    """One gated block's pilot."""

    model_config = ConfigDict(extra="forbid")

    block: str
    members: list[str]
    units: int = Field(description="The block's units in its seeded order, less those dropped before generation.")
    pilot_units: int = Field(description="K: its first units that form the pilot (round(share x units), >= 1).")
    judged: int = Field(
        description="Pilot units judged: complete in the test and control arms, before a crossing if the "
        "e-processes crossed inside the pilot."
    )
    discordant: int = Field(description="Judged pilot units whose paired difference is not 0.")
    accuracy: float = Field(description="The design accuracy p of the block (design:).")
    crossed: str | None = Field(
        default=None, description="The verdict of a crossing inside the pilot (the block then sends nothing more)."
    )
    entries: list[str] = Field(description="The pilot's entries, '<benchmark>/<source_id>', one attempt each.")


class PilotDecision(Artifact):
    """The pooled pilot and the attempts every remaining unit of the gated blocks gets."""

    schema_version: int = 1
    test: str
    control: str
    share: float
    threshold: float
    attempts_if_above: int
    blocks: list[PilotBlock]
    discordant: int = Field(description="Sum over the blocks of the judged pilot units that differ.")
    expected: float = Field(description="Sum over the blocks of judged x 2p(1-p) at the design accuracy.")
    ratio: float | None = Field(description="discordant / expected (None: no pilot unit judged).")
    attempts: int = Field(description="Attempts per remaining unit of every gated block, in every arm.")
    statement: str
    decided_at: str = Field(description="UTC, ISO 8601.")

    def attempts_for(self, benchmark: str, source_id: str) -> int:
        """The attempts an entry of a gated block is asked: one in the pilot, ``attempts`` after it; an entry
        of a benchmark no block gates is not this decision's (1)."""
        members = {m for b in self.blocks for m in b.members}
        if benchmark not in members:
            return 1
        return 1 if f"{benchmark}/{source_id}" in self._pilot_entries else self.attempts

    @cached_property
    def _pilot_entries(self) -> frozenset[str]:
        return frozenset(e for b in self.blocks for e in b.entries)
