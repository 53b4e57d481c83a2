"""Why a speed benchmark cannot start: one line naming the field, the file or the extra to install."""

from __future__ import annotations

from evalpipe.errors import EvalpipeError


class SpeedSetupError(EvalpipeError):
    """The client, the tokenizer or a workload makes the benchmark impossible before a request is sent.

    Exit code 2 (usage), like every other bad-input error; the accuracy results of a run are untouched.
    """
