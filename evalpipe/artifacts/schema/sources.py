"""``sources.json`` — where the sampled records were read from (files, bytes, rows).

Unlike the manifest this is layout-specific read provenance, kept for humans and for re-finding a
record in its file: ``row`` is the 0-based data row in ``file``.
"""

from __future__ import annotations

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row


class SourceFile(Row):
    path: str
    bytes: int
    sha256: str


class EntryLocation(Row):
    benchmark: str
    source_id: str
    file: str
    row: int = Field(description="0-based data row in the file (header excluded).")


class BenchmarkSources(Row):
    benchmark: str
    kind: str
    location: str = Field(description="Local directory or hub id (with revision).")
    files: list[SourceFile]


class SourcesRecord(Artifact):
    schema_version: int = 1
    benchmarks: list[BenchmarkSources]
    locations: list[EntryLocation]
