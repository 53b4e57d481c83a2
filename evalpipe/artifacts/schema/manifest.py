"""``manifest.json`` — the spine every later stage keys on.

It depends only on dataset *content*, the plan and the seed: no paths, file rows, timestamps or host
facts, so shuffling a dataset file's rows or reading it from another format gives a byte-identical
manifest.  Where each selected record sat in which file is read provenance and lives in
``sources.json`` (``evalpipe.artifacts.schema.sources``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.artifacts.schema.sources import GeneratedItem
from evalpipe.config.models import SamplingRule

SELECTION_RULE = (
    "Within each stratum, sort records ascending by "
    'sha256(f"{seed}:{benchmark}:{source_id}".encode()).hexdigest() and take the first n_h '
    "(without replacement)."
)


class StratumAllocation(Row):
    stratum: str
    population: int = Field(description="N_h: records in the stratum after filtering.")
    allocated: int = Field(description="n_h the plan asked for.")
    selected: int = Field(description="Records actually taken (< allocated only with allow_short).")
    shortfall: int = 0


class DatasetIdentity(Row):
    """Content identity of a benchmark's splits (format- and order-independent)."""

    kind: Literal["local", "hub"]
    hub_id: str | None = None
    revision: str | None = None
    eval_split: str
    eval_records: int
    fingerprint: str = Field(description="sha256 over sorted record hashes of the evaluation split.")
    fewshot_split: str | None = None
    fewshot_records: int | None = None
    fewshot_fingerprint: str | None = None
    pinned_fingerprint: str | None = None
    drift_allowed: bool = Field(
        default=False, description="Pin mismatched and --allow-dataset-drift was given."
    )

    @property
    def is_local(self) -> bool:
        """Read from a local mirror (not the hub): a resume can reload it from the recorded directory."""
        match self.kind:
            case "local":
                return True
            case "hub":
                return False


class BenchmarkSampling(Row):
    benchmark: str
    subsets: list[str] = Field(
        description="EvalScope subsets the selected entries fall in, in manifest order."
    )
    few_shot: int
    plan: SamplingRule
    plan_sha256: str
    dataset: DatasetIdentity
    filtered_population: int = Field(description="Records left after the plan's filter (N).")
    strata: list[StratumAllocation]
    sample_size: int


class ManifestEntry(Row):
    benchmark: str
    subset: str
    stratum: str
    source_id: str
    record_sha256: str
    rank_key: str
    stratum_population: int = Field(description="N_h")
    stratum_selected: int = Field(description="n_h")
    weight: float = Field(description="N_h / n_h: the design weight for population-weighted estimates.")
    generated: GeneratedItem | None = Field(
        default=None,
        # Written only when set: read records' entries keep the bytes they had before generated benchmarks
        # existed, so every earlier manifest.json (and the manifest_sha256 that compare.json, reviews and the
        # explorer pin) is unchanged by this field.
        exclude_if=lambda v: v is None,
        description="A generated record's parameters (KV-cache probe); absent for read records.",
    )


class Manifest(Artifact):
    schema_version: int = 1
    seed: int
    selection_rule: str = SELECTION_RULE
    benchmarks: list[BenchmarkSampling]
    entries: list[ManifestEntry]

    def entries_for(self, benchmark: str) -> list[ManifestEntry]:
        return [e for e in self.entries if e.benchmark == benchmark]

    def sampling_for(self, benchmark: str) -> BenchmarkSampling:
        for b in self.benchmarks:
            if b.benchmark == benchmark:
                return b
        raise KeyError(benchmark)
