"""What every config model shares: unknown keys are errors (a typo names its field, never passes silently)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)
