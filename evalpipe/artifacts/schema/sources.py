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


class GeneratedItem(Row):
    """How a generated record was made (a KV-cache probe item): enough to regenerate it byte for byte from
    the generator's spec — its seed, task, length, placement and the token offsets its evidence got."""

    seed: int
    task: str
    length: int = Field(description="Context length asked for (tokens).")
    placement: str = Field(description="dNN (a depth in percent), page_before, page_after or beyond_top_k.")
    depth: float | None
    index: int
    targets: list[int] = Field(description="Token positions in the served prompt asked for, per evidence.")
    offsets: list[int] = Field(description="Token positions each evidence's first token got (measured).")
    context_start: int = Field(description="Token position of the context's first token.")
    context_tokens: int
    page_size: int | None
    tokenizer: str = Field(description="sha256 of the tokenizer.json used, or 'words'.")
    context_sha256: str


class BenchmarkSources(Row):
    benchmark: str
    kind: str
    location: str = Field(description="Local directory or hub id (with revision).")
    files: list[SourceFile]


class SourcesRecord(Artifact):
    schema_version: int = 1
    benchmarks: list[BenchmarkSources]
    locations: list[EntryLocation]
