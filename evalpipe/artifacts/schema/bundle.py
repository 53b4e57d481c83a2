"""``bundle.json`` — index of a published sign-off bundle (``evalpipe publish``)."""

from __future__ import annotations

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row


class BundleFile(Row):
    path: str = Field(description="Relative to the bundle directory (run-directory names).")
    bytes: int
    sha256: str


class BundleIndex(Artifact):
    schema_version: int = 1
    run_id: str
    published_at: str
    evalpipe_version: str
    files: list[BundleFile]
    total_bytes: int
    cap_bytes: int
    responses: int = Field(description="Recorded response bodies available for replay.")
