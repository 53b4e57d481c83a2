"""``run.json`` — identity of a run directory: which config, which datasets, when."""

from __future__ import annotations

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact


class RunRecord(Artifact):
    schema_version: int = 3  # 2: no_speed, speed_gate_waived; 3: benchmark_versions
    run_id: str
    config_name: str
    config_path: str = Field(description="Absolute path of the config file the run was started from.")
    config_sha256: str = Field(description="sha256 of the config file bytes (copied as config.yaml).")
    created_at: str
    evalpipe_version: str
    dataset_locations: dict[str, str] = Field(description="Benchmark → local directory or hub location read.")
    benchmark_versions: dict[str, str] = Field(
        default_factory=dict,
        description="Benchmark → the version its module declared (BenchmarkMeta.version: bumped when its "
        "prompt, scoring or selection changes).  Empty in a run written before benchmarks declared one: "
        "unknown, not unchanged.",
    )
    allow_dataset_drift: bool = False
    variant: str | None = Field(
        default=None, description="Server variant this run directory holds (paired runs)."
    )
    variant_label: str | None = None
    no_speed: bool = Field(
        default=False,
        description="Started with --no-speed: the config's speed section was not run (accuracy only); "
        "config.yaml is the config without it.",
    )
    speed_gate_waived: bool = Field(
        default=False,
        description="--waive-speed-gate (with --no-speed): gates.min_output_throughput_ratio is reported as "
        "not measured but does not decide the verdict.",
    )


class ExtensionRecord(Artifact):
    """``extension.json``: this run grew from ``extended_from`` (same seed, the old selection contained).

    ``prior_generations`` is what keeps the sequential rule's order across extensions
    (``evalpipe.hashing.block_order``): the entries of every earlier run of the chain, oldest first, each
    under the generation that first selected it; this run's own new entries are the next generation.  A
    version-1 file has none: its run is read as one generation (as those runs were judged)."""

    schema_version: int = 2  # 2: prior_generations
    extended_from: str
    old_samples: int
    new_samples: int
    reused: int = Field(description="Old manifest entries whose answered predictions were carried over.")
    added: int = Field(description="Entries new in this selection: the only ones sent to the server.")
    floor_notes: list[str] = Field(
        default_factory=list, description="Strata kept at the old run's n_h above the larger plan's."
    )
    statement: str
    prior_generations: list[dict[str, list[str]]] = Field(
        default_factory=list,
        description="Per earlier generation (oldest first; the old run's own is last): benchmark → source_ids "
        "first selected in that generation.  Entries not named are this run's generation.  Empty (a "
        "version-1 file): one generation.",
    )

    def generation_of(self) -> dict[tuple[str, str], int]:
        """``(benchmark, source_id)`` → generation (0 the oldest) for every entry of an earlier generation."""
        out: dict[tuple[str, str], int] = {}
        for number, generation in enumerate(self.prior_generations):
            for benchmark, source_ids in generation.items():
                for source_id in source_ids:
                    out.setdefault((benchmark, source_id), number)
        return out
