"""``run.json`` — identity of a run directory: which config, which datasets, when."""

from __future__ import annotations

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact


class RunRecord(Artifact):
    schema_version: int = 2  # 2: no_speed, speed_gate_waived
    run_id: str
    config_name: str
    config_path: str = Field(description="Absolute path of the config file the run was started from.")
    config_sha256: str = Field(description="sha256 of the config file bytes (copied as config.yaml).")
    created_at: str
    evalpipe_version: str
    dataset_locations: dict[str, str] = Field(description="Benchmark → local directory or hub location read.")
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
    """``extension.json``: this run grew from ``extended_from`` (same seed, the old selection contained)."""

    schema_version: int = 1
    extended_from: str
    old_samples: int
    new_samples: int
    reused: int = Field(description="Old manifest entries whose answered predictions were carried over.")
    added: int = Field(description="Entries new in this selection: the only ones sent to the server.")
    floor_notes: list[str] = Field(
        default_factory=list, description="Strata kept at the old run's n_h above the larger plan's."
    )
    statement: str
