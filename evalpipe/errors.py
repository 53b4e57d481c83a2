"""Error hierarchy and the single place where errors become exit codes.

User errors print one clean line (no traceback, never local variables: they can hold API keys).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes shared by every command."""

    OK = 0
    GATE_FAILED = 1  # also: verify-sample / replay found a difference
    USAGE = 2  # bad config, bad input data, bad arguments, preflight refusal
    AUDIT_ERROR = 3  # the audit found an error-severity finding
    SERVER = 4  # the server did not come up, died, could not be reached, or resolved a different config
    NO_SPACE = 5  # the run directory's file system refused a write (ENOSPC, EDQUOT, EROFS); resumable
    INTERRUPTED = 130  # SIGINT (Ctrl-C)
    TERMINATED = 143  # SIGTERM


class EvalpipeError(Exception):
    """Base class: every expected failure carries the exit code it maps to."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or []

    def __str__(self) -> str:
        if not self.details:
            return self.message
        return self.message + "\n" + "\n".join(f"  {d}" for d in self.details)


class ConfigError(EvalpipeError):
    """The run config or a sampling rule is invalid (names file and field)."""


class DataError(EvalpipeError):
    """A dataset file is missing or malformed (names file and line)."""


class FingerprintMismatch(DataError):
    """A dataset's content does not match the fingerprint pinned in the config."""


class PreflightError(EvalpipeError):
    """The server launch would fail or would not test what the config claims (a usage error: nothing was
    launched).  When the rules ran, the error is ``evalpipe.server.preflight.PreflightRefused``, which holds
    every rule's outcome as ``report`` (there, so that this leaf module imports no artifact model)."""


class ServerError(EvalpipeError):
    """The server did not come up, died, could not be reached, or resolved a different config."""

    exit_code = ExitCode.SERVER


class RunStopped(EvalpipeError):
    """A run that stopped part-way and can be resumed: carries its run directory.

    ``evalpipe run`` turns it into one line naming the run directory and the exact ``--resume`` command.
    """

    def __init__(self, message: str, run_dir: str, *, details: list[str] | None = None) -> None:
        super().__init__(message, details=details)
        self.run_dir = run_dir
        self.resume_command: str | None = None  # filled in by the command that knows its own arguments

    def resume_line(self) -> str:
        """E.g. ``interrupted by SIGTERM: run directory R; resume with: evalpipe run C --resume R``."""
        how = f"; resume with: {self.resume_command}" if self.resume_command else ""
        return f"{self.message}: run directory {self.run_dir}{how}"


class RunInterrupted(RunStopped):
    """SIGINT (exit 130) or SIGTERM (exit 143) during a run."""

    def __init__(self, run_dir: str, *, terminated: bool) -> None:
        self.signal_name = "SIGTERM" if terminated else "SIGINT"
        super().__init__(f"interrupted by {self.signal_name}", run_dir)
        self.exit_code = ExitCode.TERMINATED if terminated else ExitCode.INTERRUPTED


class ServerDied(RunStopped):
    """The launched server exited while the evaluation was running."""

    exit_code = ExitCode.SERVER


class DiskFull(EvalpipeError):
    """A write to a run-directory file was refused by its file system (full, over quota, read-only): names
    the file, the stage and the free space (``evalpipe.artifacts.disk``)."""

    exit_code = ExitCode.NO_SPACE


class RunOutOfSpace(RunStopped):
    """A run stopped by :class:`DiskFull`: every file it leaves is whole; ``--resume`` continues it once
    there is space."""

    exit_code = ExitCode.NO_SPACE


class ArtifactError(EvalpipeError):
    """A run-directory artifact is missing, unreadable, or from a newer schema."""


class VerificationFailed(EvalpipeError):
    """A re-derivation (verify-sample, replay) differs from the record."""

    exit_code = ExitCode.GATE_FAILED


class SpeedSetupError(EvalpipeError):
    """The speed client, the tokenizer or a workload makes the benchmark impossible before a request is sent.

    Exit code 2 (usage), like every other bad-input error; the accuracy results of a run are untouched.  Here
    rather than in ``speed/`` because the tokenizer it reports on (``evalpipe.tokenizer``) is a core module
    that benchmarks (``kv_probe``) share with the speed clients.
    """
