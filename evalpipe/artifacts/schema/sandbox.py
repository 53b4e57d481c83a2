"""``code_sandbox.json``: the sandbox that ran the model-written code of a run, resolved at preflight; and what
a sandbox denied a program (``Denial``, recorded in outcome rows).  ``evalpipe.sandbox.run`` produces them and
re-exports them; they live here so that the artifact models need not import the sandbox."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalpipe.artifacts.schema.base import Artifact, Row
from evalpipe.config.code_execution import SandboxKind, SandboxLimits, SandboxRequest

DenialKind = Literal[
    "network",
    "filesystem",
    "environment",
    "processes",
    "address_space",
    "file_size",
    "cpu_time",
    "wall_time",
    "sandbox_setup",
]
ProcessLimit = Literal["rlimit", "cgroup", "not_enforced"]


class Denial(BaseModel):
    """One thing the sandbox refused the program, with the evidence (an exception line, a signal)."""

    model_config = ConfigDict(extra="forbid")

    kind: DenialKind
    detail: str


class SandboxStartup(Row):
    """Start-up cost of one sandboxed program, measured at preflight on this host.

    Interleaved rounds of a trivial program of the run's interpreter (``python -c pass``), started bare
    and through the run's ``ProgramLauncher``; medians of each and their difference (the cost the
    sandbox adds to every program the run executes).
    """

    rounds: int
    bare_ms: float
    sandboxed_ms: float
    added_ms: float
    load_1min: float | None = Field(description="The host's 1-minute load average when measured.")


class SandboxRecord(Artifact):
    schema_version: int = 1
    requested: SandboxRequest = Field(description="code_execution.sandbox as configured.")
    sandbox: SandboxKind = Field(description="The sandbox every model-written program ran in.")
    version: str = Field(description="The sandbox program's version (bwrap/unshare), or 'no sandbox'.")
    process_limit: ProcessLimit = Field(
        description="How the process count is limited: RLIMIT_NPROC, a pids cgroup (root), or not at all."
    )
    allow_unsandboxed: bool
    allow_unlimited_processes: bool
    limits: SandboxLimits
    startup: SandboxStartup
    benchmarks: list[str] = Field(description="The run's benchmarks that execute model-written code.")
    resolved_at: str = Field(description="UTC ISO-8601")
