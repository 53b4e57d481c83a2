"""Stratum assignment and record filters (before stratification)."""

from __future__ import annotations

from evalpipe.config.models import PlanFilter, SamplingPlan
from evalpipe.errors import ConfigError
from evalpipe.sources.base import SourceRecord

# Which stratifications make sense for which benchmark.
VALID_STRATA = {
    "gsm8k": {"none"},
    "ifeval": {"none", "instruction_count"},
    "ceval": {"none", "subject"},
    "live_code_bench": {"none", "difficulty"},
}


def stratum_of(record: SourceRecord, stratify_by: str) -> str:
    if stratify_by == "none":
        return "all"
    value = record.stratum_fields.get(stratify_by)
    if value is None:
        raise ConfigError(f"{record.benchmark}: records have no {stratify_by!r} to stratify by")
    return str(value)


def check_plan(plan: SamplingPlan, benchmark: str) -> None:
    if plan.stratify_by not in VALID_STRATA[benchmark]:
        raise ConfigError(
            f"sampling plan for {benchmark}: stratify_by {plan.stratify_by!r} is not available "
            f"(choose from {sorted(VALID_STRATA[benchmark])})"
        )
    if plan.filter is not None and benchmark != "live_code_bench":
        raise ConfigError(f"sampling plan for {benchmark}: filter applies to live_code_bench only")


def apply_filter(records: list[SourceRecord], flt: PlanFilter | None) -> list[SourceRecord]:
    """LiveCodeBench release/date windows: keep records by ``_version`` and ``contest_date``."""
    if flt is None:
        return records
    out = []
    for rec in records:
        c = rec.canonical
        if flt.versions is not None and c.get("_version") not in flt.versions:
            continue
        date = str(c.get("contest_date") or "")[:10]
        if flt.start_date is not None and (not date or date < flt.start_date[:10]):
            continue
        if flt.end_date is not None and (not date or date > flt.end_date[:10]):
            continue
        out.append(rec)
    return out
