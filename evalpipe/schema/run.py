"""``run.json`` — identity of a run directory: which config, which datasets, when."""

from __future__ import annotations

from pydantic import Field

from evalpipe.schema.base import Artifact


class RunRecord(Artifact):
    schema_version: int = 1
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
