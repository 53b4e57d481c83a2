"""What a KV-cache probe folder declares (``probe.json``): the seed, tasks, lengths, depths and placements
from which every item is generated, so that the folder — not a copy of the items — is the dataset.

A reviewer regenerates an item byte for byte from this file, the tokenizer it names (its ``tokenizer.json``
sha256 is recorded in every record) and the item's id; ``evalpipe verify`` does exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalpipe.errors import DataError

SPEC_FILE = "probe.json"

#: RULER-style tasks (Hsieh et al. 2024, "RULER: What's the real context size of your long-context language
#: models?"), each scored by exact match.  The first three are the ones a 135M model can do at short lengths
#: (a word, a two-digit value, a key repeated); the last four are RULER's harder retrieval/tracking tasks.
TaskName = Literal[
    "word", "two_digit", "repeated_key", "single_key", "multi_key", "multi_value", "variable_tracking"
]
TASKS: tuple[TaskName, ...] = (
    "word", "two_digit", "repeated_key", "single_key", "multi_key", "multi_value", "variable_tracking"
)  # fmt: skip

#: Context lengths a probe may ask for (tokens).  A fixed grid so that length buckets have one order
#: everywhere (``BenchmarkMeta.length_order``) and two runs' buckets line up.
LENGTH_GRID: tuple[int, ...] = (
    128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    65536, 98304, 131072,
)  # fmt: skip

Depth = Annotated[float, Field(ge=0, le=1)]


class ProbeSpec(BaseModel):
    """One probe family's generation parameters (``probe.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = Field(description="Generation seed: every item's filler, needle and answer derive from it.")
    tasks: Annotated[list[TaskName], Field(min_length=1)]
    lengths: Annotated[list[int], Field(min_length=1)] = Field(
        description="Context lengths in tokens of the served model's tokenizer (values of LENGTH_GRID)."
    )
    depths: Annotated[list[Depth], Field(min_length=1)] = Field(
        default=[0.1, 0.5, 0.9], description="Where the evidence starts, as a fraction of the context."
    )
    items_per_cell: Annotated[int, Field(gt=0)] = Field(
        default=1, description="Items per (task, length, placement)."
    )
    page_size: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="KV page size (SGLang's DSA path: 64): adds items whose evidence starts one token before "
        "and exactly at a page boundary of the served prompt.",
    )
    sparse_top_k: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="A sparse indexer's top-k (tokens): adds items whose evidence sits more than top-k "
        "tokens before the question, where only the indexer's selection can reach it.",
    )
    tokenizer: str | None = Field(
        default=None,
        description="The served model's tokenizer: a directory with tokenizer.json (relative to this file) "
        "or gguf:FILE / gguf:smollm2; None counts whitespace-separated words as tokens.",
    )
    context_length: Annotated[int, Field(gt=0)] | None = Field(
        default=None,
        description="The server's context per sequence (tokens); lengths whose prompt and reserve do not fit "
        "are dropped with one line naming them.",
    )
    reserve_tokens: Annotated[int, Field(ge=0)] = Field(
        default=256, description="Tokens kept free for the template and the answer when capping lengths."
    )

    @field_validator("lengths")
    @classmethod
    def _grid(cls, lengths: list[int]) -> list[int]:
        off = [n for n in lengths if n not in LENGTH_GRID]
        if off:
            raise ValueError(f"lengths {off} are not on the grid {list(LENGTH_GRID)}")
        if len(set(lengths)) != len(lengths):
            raise ValueError("lengths must not repeat")
        return lengths

    @field_validator("tasks")
    @classmethod
    def _distinct(cls, tasks: list[TaskName]) -> list[TaskName]:
        if len(set(tasks)) != len(tasks):
            raise ValueError("tasks must not repeat")
        return tasks

    def fitting_lengths(self) -> tuple[list[int], list[int]]:
        """(lengths served, lengths dropped because prompt + reserve exceed ``context_length``)."""
        if self.context_length is None:
            return sorted(self.lengths), []
        keep = sorted(n for n in self.lengths if n + self.reserve_tokens <= self.context_length)
        return keep, sorted(set(self.lengths) - set(keep))


def read_spec(directory: Path) -> ProbeSpec:
    """``directory/probe.json``, or one line naming the file and the bad field."""
    path = directory / SPEC_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(
            f"{path}: not found (a kv_probe folder holds its generation spec, {SPEC_FILE})"
        ) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not JSON ({exc})") from None
    try:
        return ProbeSpec.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "(top level)"
        raise DataError(f"{path}: {where}: {err['msg']}") from None
