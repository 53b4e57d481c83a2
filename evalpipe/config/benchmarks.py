"""``benchmarks:`` — per benchmark its dataset source, sampling rule (inline or a ``samplers/*.yaml`` file),
few-shot count, budget and fingerprint pin."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from evalpipe.config.base import SHA256_PATTERN, Strict
from evalpipe.config.registry_names import BenchmarkName, StratifyBy


class DatasetSource(Strict):
    """Where a benchmark's full splits come from: a local mirror or the hub (or, for general_mcq and
    general_qa, your own files and the columns that identify and group their rows)."""

    local: str | None = Field(
        default=None,
        description="Local mirror directory for this benchmark (layout of ../shared/datasets/<benchmark>); "
        "general_mcq/general_qa: your folder in EvalScope's layout (<subset>_val.csv, …) or one file.",
    )
    hub: str | None = Field(
        default=None, description="Hub dataset id; default: the id EvalScope's adapter declares."
    )
    hub_backend: Literal["modelscope", "huggingface"] = "modelscope"
    revision: str | None = None
    id_column: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="general_mcq/general_qa: the column holding each row's id (unique, non-empty); unset: "
        "the id is the first 16 hex characters of the row's canonical sha256.",
    )
    stratify_column: Annotated[str, Field(min_length=1)] | None = Field(
        default=None,
        description="general_mcq/general_qa: the column whose value is a row's stratum "
        "(sampling rule `stratify_by: column`).",
    )


class SamplingFilter(Strict):
    """Record filter applied before stratification (LiveCodeBench release/date windows)."""

    versions: list[str] | None = Field(default=None, description="Keep records whose `_version` is listed.")
    start_date: str | None = Field(default=None, description="Keep contest_date >= this (ISO date).")
    end_date: str | None = Field(default=None, description="Keep contest_date <= this (ISO date).")


class SamplingRule(Strict):
    """A declarative sampling rule (``samplers/<benchmark>.yaml``).

    Exactly one of ``per_stratum`` and ``total``.  ``allocation`` applies to ``total`` only:
    ``proportional`` (largest remainder over strata) or ``uniform`` (one stratum: simple random sample).
    """

    schema_version: int = 1
    benchmark: BenchmarkName | None = Field(
        default=None, description="Must match the benchmark using the rule."
    )
    stratify_by: StratifyBy = "none"
    per_stratum: Annotated[int, Field(gt=0)] | None = None
    total: Annotated[int, Field(gt=0)] | None = None
    allocation: Literal["proportional", "uniform"] | None = None
    allow_short: bool = False
    strata: list[str] | None = Field(
        default=None, description="Restrict to these strata (default: all present)."
    )
    filter: SamplingFilter | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _check(self) -> SamplingRule:
        if (self.per_stratum is None) == (self.total is None):
            raise ValueError("exactly one of per_stratum and total must be set")
        if self.total is not None and self.allocation is None:
            raise ValueError("allocation (proportional or uniform) is required with total")
        if self.per_stratum is not None and self.allocation is not None:
            raise ValueError("allocation applies to total only")
        if self.allocation == "uniform" and self.stratify_by != "none":
            raise ValueError("allocation uniform samples one stratum: use stratify_by: none")
        return self

    def rule_text(self) -> str:
        if self.per_stratum is not None:
            alloc = f"{self.per_stratum} per {self.stratify_by} stratum"
        elif self.allocation == "proportional":
            alloc = f"{self.total} in total, proportional to {self.stratify_by} strata (largest remainder)"
        else:
            alloc = f"{self.total} uniformly over the split"
        return f"{alloc}; within a stratum, ascending sha256(seed:benchmark:source_id); without replacement"


class BenchmarkConfig(Strict):
    name: BenchmarkName
    subset: str | None = Field(
        default=None,
        description="EvalScope subset name (gsm8k 'main', ifeval 'default', live_code_bench 'release_v6').",
    )
    few_shot: Annotated[int, Field(ge=0)] = 0
    sampling: Annotated[
        Annotated[str, Tag("path")] | Annotated[SamplingRule, Tag("inline")],
        Discriminator(lambda v: "path" if isinstance(v, str) else "inline"),
    ] = Field(description="Sampling rule: a YAML path (relative to the config file) or an inline rule.")
    source: DatasetSource = Field(default_factory=DatasetSource)
    fingerprint: Annotated[str, Field(pattern=SHA256_PATTERN)] | None = Field(
        default=None, description="Pinned dataset fingerprint (sha256 over sorted record hashes)."
    )
    max_tokens: Annotated[int, Field(gt=0)] | None = Field(
        default=None, description="Overrides generation.max_tokens for this benchmark."
    )
    extra_params: dict[str, object] = Field(
        default_factory=dict, description="EvalScope dataset extra_params."
    )
    drop_overlong: bool = Field(
        default=False,
        description="Consent to drop sampled prompts that cannot fit the context (scored context_overflow, "
        "listed in context_fit.json) instead of refusing the run.",
    )
    review_timeout_s: Annotated[float, Field(gt=0, le=600)] | None = Field(
        default=None,
        description="A code benchmark's per-test limit in its review, in seconds (EvalScope's review_timeout: "
        "the adapter's own when unset, LiveCodeBench 6 s). The re-check of a timeout uses the same limit as "
        "CPU time; outcomes and the report state it.",
    )

    @model_validator(mode="after")
    def _rule_matches(self) -> BenchmarkConfig:
        if isinstance(self.sampling, SamplingRule) and self.sampling.benchmark not in (None, self.name):
            raise ValueError(f"sampling.benchmark is {self.sampling.benchmark!r}, expected {self.name!r}")
        return self

    @field_validator("subset")
    @classmethod
    def _nonempty(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            raise ValueError("must not be empty")
        return v
