"""Which version of each benchmark the compared runs ran (``run.json`` ``benchmark_versions``), and the refusal
when two arms ran different ones.

A benchmark's version changes when its prompt, its scoring or its selection changes (``BenchmarkMeta.version``).
Two arms that ran different versions of a benchmark are **refused**, not compared with a warning: a paired
comparison attributes every difference between the arms to the server, and a changed prompt or selection is
already refused on its hashes (``_check_paired``: manifest entries, rendered prompts) — but a changed scoring
shows in no hash.  A warning beside a verdict would let a gate pass or fail on the benchmark's own change, and
a reader of ``compare.json`` would see one number with two meanings.  There is no A/B of a server whose arms
are meant to run different benchmarks; to see what a new scoring does, run both arms again with it.

A run written before benchmarks declared versions (``run.json`` v2 and older, every run in
``tests/fixtures/old_runs``) records none: its version is **unknown**, which is not a difference — the pair is
still checked on its manifest and prompts, and ``compare.json`` records ``None`` for the benchmark so the report
says that a change in scoring between the runs would not show.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.compare.units import CompareRefused
from evalpipe.errors import EvalpipeError


def recorded_versions(rundir: RunDir) -> dict[str, str]:
    """Benchmark → version from the run's ``run.json``; empty where it records none (an older run, or no
    readable ``run.json``: nothing is known)."""
    if not rundir.run_record.is_file():
        return {}
    try:
        return dict(read_model(rundir.run_record, RunRecord).benchmark_versions)
    except EvalpipeError:
        return {}


def paired_versions(arms: Sequence[RunDir], benchmarks: Sequence[str]) -> dict[str, str | None]:
    """Benchmark → the one version every arm ran, or None where some arm recorded none; ``CompareRefused``
    naming each benchmark whose recorded versions differ between arms."""
    recorded = [(arm, recorded_versions(arm)) for arm in arms]
    out: dict[str, str | None] = {}
    differ = []
    for name in benchmarks:
        seen = {versions[name]: arm for arm, versions in recorded if name in versions}
        if len(seen) > 1:
            differ.append(f"{name}: " + " vs ".join(f"version {v} in {arm.root}" for v, arm in seen.items()))
        unknown = any(name not in versions for _, versions in recorded)
        out[name] = None if unknown or not seen else next(iter(seen))
    if differ:
        raise CompareRefused(
            "runs ran different versions of a benchmark (its prompt, scoring or selection changed): "
            "refusing to compare",
            details=differ,
        )
    return out
