"""Shared base classes for artifact models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Artifact(BaseModel):
    """A whole-file artifact. Subclasses declare ``schema_version: int = N`` as their first field."""

    model_config = ConfigDict(extra="forbid")


class Row(BaseModel):
    """One line of a JSONL table or log."""

    model_config = ConfigDict(extra="forbid")
