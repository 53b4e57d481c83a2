"""Exit codes: decided in one place (``evalpipe.errors.ExitCode``) and documented in the README's table."""

from __future__ import annotations

import re
from pathlib import Path

from evalpipe.errors import (
    ConfigError,
    DataError,
    ExitCode,
    PreflightError,
    ServerDied,
    ServerError,
    VerificationFailed,
)

README = Path(__file__).resolve().parents[2] / "README.md"


def test_server_failures_are_not_usage_errors() -> None:
    assert ServerError("x").exit_code == ServerDied("x", "run").exit_code == ExitCode.SERVER == 4
    for usage in (ConfigError("x"), DataError("x"), PreflightError("x")):
        assert usage.exit_code == ExitCode.USAGE == 2
    assert VerificationFailed("x").exit_code == ExitCode.GATE_FAILED


def test_the_readme_table_lists_every_exit_code() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = [int(m) for m in re.findall(r"^\| (\d+) \|", section, flags=re.MULTILINE)]
    assert documented == sorted(int(c) for c in ExitCode)
