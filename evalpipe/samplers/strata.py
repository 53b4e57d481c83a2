"""Stratum assignment and record filters (before stratification)."""

from __future__ import annotations

from evalpipe.benchmarks import REGISTRY
from evalpipe.benchmarks import benchmark as benchmark_spec
from evalpipe.benchmarks.parts import DataPart
from evalpipe.config.models import SamplingFilter, SamplingRule
from evalpipe.errors import ConfigError
from evalpipe.sources.base import SourceRecord


def stratum_of(record: SourceRecord, stratify_by: str) -> str:
    if stratify_by == "none":
        return "all"
    value = record.stratum_fields.get(stratify_by)
    if value is None:
        raise ConfigError(f"{record.benchmark}: records have no {stratify_by!r} to stratify by")
    return str(value)


def check_sampling_rule(plan: SamplingRule, benchmark: str) -> None:
    spec: DataPart = benchmark_spec(benchmark)
    choices = spec.strata_choices()
    if plan.stratify_by not in choices:
        raise ConfigError(
            f"sampling rule for {benchmark}: stratify_by {plan.stratify_by!r} is not available "
            f"(choose from {sorted(choices)})"
        )
    if plan.filter is not None and not spec.meta.record_filter:
        with_filter = [n for n, s in REGISTRY.items() if s.meta.record_filter]
        raise ConfigError(f"sampling rule for {benchmark}: filter applies to {', '.join(with_filter)} only")


def apply_filter(records: list[SourceRecord], flt: SamplingFilter | None, benchmark: str) -> list[SourceRecord]:
    """The benchmark's own record filter (e.g. LiveCodeBench release/date windows)."""
    if flt is None:
        return records
    return benchmark_spec(benchmark).filter_records(records, flt)
