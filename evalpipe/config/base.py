"""What every config model shares: unknown keys are errors (a typo names its field, never passes silently),
and one wording of a validation error (the loader's lines, a server kind's settings checked in the resolve step)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic_core import ErrorDetails

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False)


def error_message(err: ErrorDetails) -> str:
    """One validation error as a config error line words it (``unknown field``, ``must be > 0``)."""
    ctx = err.get("ctx") or {}
    t = err["type"]
    simple = {
        "greater_than": "must be > {gt}",
        "greater_than_equal": "must be >= {ge}",
        "less_than": "must be < {lt}",
        "less_than_equal": "must be <= {le}",
        "extra_forbidden": "unknown field",
        "missing": "required field missing",
        "too_short": "must have at least {min_length} item(s)",
        "string_pattern_mismatch": "must match {pattern}",
    }
    if t in simple:
        try:
            return simple[t].format(**ctx)
        except KeyError:
            pass
    if t == "literal_error":
        return f"must be one of {ctx.get('expected')} (got {err.get('input')!r})"
    if t == "value_error":
        return str(ctx.get("error", err["msg"]))
    return err["msg"]
