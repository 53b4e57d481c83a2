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
    units: int = Field(
        description="The block's units in its seeded order, less those dropped before generation."
    )
    pilot_units: int = Field(
        description="K: its first units that form the pilot (round(share x units), >= 1)."
    )
    judged: int = Field(
        description="Pilot units judged: complete in the test and control arms, before a crossing if the "
        "e-processes crossed inside the pilot."
    )
    discordant: int = Field(description="Judged pilot units whose paired difference is not 0.")
    accuracy: float = Field(description="The design accuracy p of the block (design:).")
    crossed: str | None = Field(
        default=None,
        description="The verdict of a crossing inside the pilot (the block then sends nothing more).",
    )
    entries: list[str] = Field(
        description="The pilot's entries, '<benchmark>/<source_id>': one attempt each, two for agreement_entries."
    )
    agreement_entries: list[str] = Field(
        default_factory=list,
        description="The pilot's first entries asked twice in every arm (generation.sequential.pilot.agreement): "
        "their two attempts measure how far a unit's disagreement is within the unit.",
    )
    paired: int = Field(default=0, description="Judged pilot units asked twice (both attempts in both arms).")
    within: float = Field(
        default=0.0,
        description="Sum over the paired units of x = (d1 - d2)^2 / 2 (d: an attempt's paired difference).",
    )
    within_squares: float = Field(default=0.0, description="Sum over the paired units of x^2.")


class PilotDecision(Artifact):
    """The pooled pilot and the attempts every remaining unit of the gated blocks gets."""

    schema_version: int = 2
    test: str
    control: str
    share: float
    threshold: float
    attempts_if_above: int = Field(description="The most attempts per remaining unit the rule may choose.")
    agreement: float | None = Field(
        default=None,
        description="Share of each block's pilot units asked twice (None: a version-1 pilot, none).",
    )
    blocks: list[PilotBlock]
    discordant: int = Field(description="Sum over the blocks of the judged pilot units that differ.")
    expected: float = Field(description="Sum over the blocks of judged x 2p(1-p) at the design accuracy.")
    ratio: float | None = Field(description="discordant / expected (None: no pilot unit judged).")
    within_share: float | None = Field(
        default=None,
        description="w: the share of the one-attempt disagreement that is within a unit (attempts average it), "
        "pooled over the paired units (evalpipe.stats.pilot_rule); None: not measured.",
    )
    effective_ratio: float | None = Field(
        default=None,
        description="The block-average noise, as a multiple of the chance level, at the chosen attempts "
        "(R at one attempt); None: not measured.",
    )
    attempts: int = Field(description="Attempts per remaining unit of every gated block, in every arm.")
    statement: str
    decided_at: str = Field(description="UTC, ISO 8601.")

    def attempts_for(self, benchmark: str, source_id: str) -> int:
        """The attempts an entry of a gated block is asked: one in the pilot (two for its agreement entries),
        ``attempts`` after it; an entry of a benchmark no block gates is not this decision's (1)."""
        members = {m for b in self.blocks for m in b.members}
        if benchmark not in members:
            return 1
        entry = f"{benchmark}/{source_id}"
        if entry in self._agreement_entries:
            return 2
        return 1 if entry in self._pilot_entries else self.attempts

    @cached_property
    def _pilot_entries(self) -> frozenset[str]:
        return frozenset(e for b in self.blocks for e in b.entries)

    @cached_property
    def _agreement_entries(self) -> frozenset[str]:
        return frozenset(e for b in self.blocks for e in b.agreement_entries)
