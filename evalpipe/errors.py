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
    INTERRUPTED = 130


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
    """The run config or a sampling plan is invalid (names file and field)."""


class DataError(EvalpipeError):
    """A dataset file is missing or malformed (names file and line)."""


class FingerprintMismatch(DataError):
    """A dataset's content does not match the fingerprint pinned in the config."""


class PreflightError(EvalpipeError):
    """The server launch would fail or would not test what the config claims."""


class ServerError(EvalpipeError):
    """The server did not come up, died, or resolved a different config."""


class ArtifactError(EvalpipeError):
    """A run-directory artifact is missing, unreadable, or from a newer schema."""


class VerificationFailed(EvalpipeError):
    """A re-derivation (verify-sample, replay) differs from the record."""

    exit_code = ExitCode.GATE_FAILED
