"""The ``code_execution`` section of a run config: which sandbox runs model-written code, and its limits.

``sandbox: auto`` (the default) picks the strongest sandbox this host offers (``bwrap``, then
``unshare``); ``none`` runs model code directly on the host and is accepted only together with
``allow_unsandboxed: true``, so that running untrusted code unsandboxed is always a written decision.
Likewise a host where the process count cannot be limited (root without a writable pids cgroup) is
refused unless ``allow_unlimited_processes: true`` says so.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

SandboxKind = Literal["bwrap", "unshare", "none"]
SandboxRequest = Literal["auto", "bwrap", "unshare", "none"]

MIB = 1024 * 1024


class SandboxLimits(BaseModel):
    """Resource limits of one sandboxed program (and every process it starts).

    The defaults leave room for EvalScope's LiveCodeBench harness (an interpreter importing numpy plus a
    multiprocessing manager: 3 processes, ~1 GiB of address space) and stop a fork bomb, a 64 GB
    allocation or a 10 GB file long before the host notices.  RLIMIT_AS is per process, so the memory a
    sandbox can hold is bounded by ``processes × address_space_mb`` (64 GiB at the defaults) — a memory
    cgroup would bound the total; not used yet.
    """

    model_config = ConfigDict(extra="forbid")

    address_space_mb: Annotated[int, Field(gt=0)] = Field(
        default=4096, description="RLIMIT_AS of every process in the sandbox, MiB."
    )
    processes: Annotated[int, Field(gt=0)] = Field(
        default=16,
        description="Processes (and threads) the program may run at once: RLIMIT_NPROC inside the sandbox's "
        "user namespace, or a pids cgroup when evalpipe runs as root (root is exempt from RLIMIT_NPROC).",
    )
    open_files: Annotated[int, Field(gt=0)] = Field(default=256, description="RLIMIT_NOFILE.")
    file_size_mb: Annotated[int, Field(gt=0)] = Field(
        default=64, description="RLIMIT_FSIZE: the largest file the program may write, MiB."
    )
    tmp_size_mb: Annotated[int, Field(gt=0)] = Field(
        default=128, description="Size of the private tmpfs that is the program's cwd, $HOME and /tmp, MiB."
    )
    cpu_s: Annotated[int, Field(gt=0)] = Field(
        default=120,
        description="RLIMIT_CPU of each process, seconds: a backstop; the benchmark's own per-test limits "
        "are shorter and classify a slow program as a timeout first.",
    )
    wall_s: Annotated[float, Field(gt=0)] = Field(
        default=600.0,
        description="Wall-clock limit of the whole sandboxed process tree, seconds (killed as one).",
    )


class CodeExecutionConfig(BaseModel):
    """How evalpipe executes code a model wrote (LiveCodeBench's review and re-check)."""

    model_config = ConfigDict(extra="forbid")

    sandbox: SandboxRequest = Field(
        default="auto",
        description="auto = the strongest available (bwrap, then unshare); none = no sandbox (needs "
        "allow_unsandboxed: true).",
    )
    allow_unsandboxed: bool = Field(
        default=False,
        validate_default=True,
        description="Must be true for sandbox: none; the report then says in its first lines that model "
        "code ran unsandboxed.",
    )
    allow_unlimited_processes: bool = Field(
        default=False,
        description="Accept a sandbox that cannot limit the number of processes: evalpipe running as root "
        "without a writable pids cgroup (root is exempt from RLIMIT_NPROC, so a fork bomb is not stopped). "
        "Without it such a host is refused at preflight.",
    )
    limits: SandboxLimits = Field(default_factory=SandboxLimits)

    @field_validator("allow_unsandboxed")
    @classmethod
    def _none_needs_consent(cls, allowed: bool, info: ValidationInfo) -> bool:
        # a field validator (not a model validator) so that the error's location is this field
        if info.data.get("sandbox") == "none" and not allowed:
            raise ValueError(
                "sandbox: none runs model-written code directly on this host; set "
                "allow_unsandboxed: true to accept that"
            )
        return allowed
