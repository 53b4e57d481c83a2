"""``provenance.json`` — what software and hardware produced the run."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalpipe.artifacts.schema.base import Artifact, Row


class PackageVersion(Row):
    name: str
    version: str | None = Field(
        default=None, description="None when not installed (never a placeholder string)."
    )
    error: str | None = None
    environment: Literal["server", "evalpipe"] | None = Field(
        default=None,
        description="Whose environment it was read in: the serving engine's (its server.env, e.g. its own "
        "PYTHONPATH) or evalpipe's own process; None in files written before this was recorded.",
    )


class GitInfo(Row):
    path: str
    commit: str | None = None
    dirty: bool | None = None
    diff_sha256: str | None = Field(default=None, description="sha256 of `git diff HEAD` when dirty.")
    source: str | None = Field(
        default=None, description="'git' (read from the work tree) or 'direct_url' (pip's PEP 610 record)."
    )


class GpuInfo(Row):
    index: int
    name: str
    driver_version: str | None = None
    memory_total_mib: int | None = None
    compute_capability: str | None = None


class ComponentTestResult(Row):
    name: str
    command: list[str]
    exit_code: int | None
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    junit_path: str | None = None
    required: bool = False
    log_path: str | None = Field(default=None, description="pytest output, relative to the run directory.")
    duration_s: float | None = None


class Provenance(Artifact):
    schema_version: int = 2  # 2: packages[].environment
    evalpipe_version: str
    evalpipe_git: GitInfo | None = None
    packages: list[PackageVersion] = Field(default_factory=list)
    sglang_git: GitInfo | None = Field(
        default=None, description="SGLang source checkout (runtime base + patch)."
    )
    gpus: list[GpuInfo] = Field(default_factory=list)
    cuda_version: str | None = None
    host: str
    python: str
    platform: str
    started_at: str
    finished_at: str | None = None
    component_tests: list[ComponentTestResult] = Field(default_factory=list)
