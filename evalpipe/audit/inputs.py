"""Load everything the audit reads from a run directory.

The manifest and ``outcomes.jsonl`` are required (without them there is nothing to audit: an
``ArtifactError``, exit 2).  Every other artifact is optional: an absent one becomes a finding and
the dependent part of the summary says "not verified"; a present but unreadable one is an
error-severity finding, never a crash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import CacheRepair, OutcomeRow
from evalpipe.artifacts.schema.pilot import PilotDecision
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.sequential import SequentialStops
from evalpipe.artifacts.schema.server import LaunchRecord, ServerVerification
from evalpipe.artifacts.schema.summary import Finding
from evalpipe.config.loader import load_config
from evalpipe.config.models import RunConfig
from evalpipe.errors import ArtifactError, ConfigError, EvalpipeError
from evalpipe.hashing import block_order

M = TypeVar("M", bound=BaseModel)


@dataclass
class RunInputs:
    rundir: RunDir
    manifest: Manifest
    outcomes: list[OutcomeRow]
    attempts: list[RequestAttempt] | None
    attempts_torn: bool
    cache_repairs: list[CacheRepair]
    verification: ServerVerification | None
    launch: LaunchRecord | None
    provenance: Provenance | None
    config: RunConfig | None
    config_sha256: str | None
    run_record: RunRecord | None
    findings: list[Finding] = field(default_factory=list)
    #: Benchmark → (samples never sent, samples planned): the sequential rule stopped this run's sending
    #: (``sequential_stop.json``); those samples are left out of the manifest and outcomes audited here.
    not_sent: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: The internal pilot's decision (``pilot.json``): what the first units measured and the attempts it gave
    #: the rest; None without a pilot.
    pilot: PilotDecision | None = None

    @property
    def run_id(self) -> str:
        return self.run_record.run_id if self.run_record else self.rundir.root.resolve().name


def _rel(rd: RunDir, path: Path) -> str:
    try:
        return str(path.relative_to(rd.root))
    except ValueError:
        return str(path)


def _optional_model(rd: RunDir, path: Path, model: type[M], findings: list[Finding], why: str) -> M | None:
    if not path.is_file():
        findings.append(
            Finding(severity="warn", code="missing_artifact", path=_rel(rd, path), message=f"absent: {why}")
        )
        return None
    try:
        return read_model(path, model)
    except ArtifactError as exc:
        findings.append(_unreadable(rd, path, exc))
        return None


def _unreadable(rd: RunDir, path: Path, exc: EvalpipeError) -> Finding:
    detail = f": {exc.details[0]}" if exc.details else ""
    return Finding(
        severity="error", code="unreadable_artifact", path=_rel(rd, path), message=exc.message + detail
    )


def _optional_jsonl(rd: RunDir, path: Path, model: type[M], findings: list[Finding]) -> tuple[list[M], bool]:
    try:
        rows = read_jsonl(path, model)
    except ArtifactError as exc:
        findings.append(_unreadable(rd, path, exc))
        return [], False
    if rows.torn_last_line:
        findings.append(
            Finding(
                severity="warn",
                code="torn_log",
                path=_rel(rd, path),
                message="last line is torn (a crash mid-write); it was skipped",
            )
        )
    return list(rows), rows.torn_last_line


def not_sent(
    root: Path, seed: int, entries: Iterable[tuple[str, str]], predicted: set[tuple[str, str]]
) -> set[tuple[str, str]]:
    """Entries ``(benchmark, source_id)`` this run never sent because the sequential rule
    (``evalpipe.run.sequential_stop``) stopped it, as ``sequential_stop.json`` records: of a gated benchmark, after its sent prefix in the block's order
    (``evalpipe.hashing.block_order``, generations first after ``--extend``) and without a prediction (a unit
    cut between its attempts was sent and stays)."""
    # import cost: the samplers' modules (samplers.extend), only for an extended run
    from evalpipe.samplers.extend import entry_generations

    path = RunDir(root).sequential_stop
    if not path.is_file():
        return set()

    prefix = {s.benchmark: s.units_sent_prefix for s in read_model(path, SequentialStops).benchmarks}
    generations = entry_generations(root)
    by: dict[str, list[tuple[str, str]]] = {}
    for bench, sid in entries:
        if bench in prefix:
            by.setdefault(bench, []).append((bench, sid))
    out: set[tuple[str, str]] = set()
    for bench, units in by.items():
        ordered = block_order(seed, units, generations)
        out.update(u for u in ordered[prefix[bench] :] if u not in predicted)
    return out


def _drop_not_sent(
    rd: RunDir, manifest: Manifest, rows: list[OutcomeRow]
) -> tuple[Manifest, list[OutcomeRow], dict[str, tuple[int, int]]]:
    """The samples the sequential rule stopped before sending (``evalpipe.run.sequential_stop``) are not part
    of what this run measured: the audit's sample is the units sent (a prefix of the seeded sequence order,
    itself a uniformly random order of the sample), and the limitations say how many were never sent."""
    predicted = {(r.benchmark, r.source_id) for r in rows if r.failure_class != "missing_prediction"}
    dropped = not_sent(
        rd.root, manifest.seed, ((e.benchmark, e.source_id) for e in manifest.entries), predicted
    )
    if not dropped:
        return manifest, rows, {}
    counts: dict[str, tuple[int, int]] = {}
    for e in manifest.entries:
        gone, planned = counts.get(e.benchmark, (0, 0))
        counts[e.benchmark] = (gone + ((e.benchmark, e.source_id) in dropped), planned + 1)
    kept = [e for e in manifest.entries if (e.benchmark, e.source_id) not in dropped]
    return (
        manifest.model_copy(update={"entries": kept}),
        [r for r in rows if (r.benchmark, r.source_id) not in dropped],
        {b: c for b, c in counts.items() if c[0]},
    )


def load_inputs(root: Path) -> RunInputs:
    """Read a run directory for the audit (see the module docstring for what is required)."""
    rd = RunDir(Path(root))
    if not rd.root.is_dir():
        raise ArtifactError(f"{rd.root}: not a directory")
    manifest = read_model(rd.manifest, Manifest)
    if not rd.outcomes.is_file():
        raise ArtifactError(f"{rd.outcomes}: missing (run the EvalScope stage first)")
    findings: list[Finding] = []
    outcome_rows = read_jsonl(rd.outcomes, OutcomeRow)
    if outcome_rows.torn_last_line:
        findings.append(
            Finding(
                severity="error",
                code="torn_log",
                path=_rel(rd, rd.outcomes),
                message="outcomes.jsonl is written atomically, yet its last line is torn: the table is incomplete",
            )
        )

    manifest, rows, not_sent = _drop_not_sent(rd, manifest, list(outcome_rows))

    attempts, attempts_torn = _request_attempts(rd, findings)
    repairs, _ = _optional_jsonl(rd, rd.cache_repairs, CacheRepair, findings)

    # absence of the verification is reported by checks.check_server (server_not_verified)
    verification = (
        read_model_quiet(rd, rd.server_verification, ServerVerification, findings)
        if rd.server_verification.is_file()
        else None
    )
    launch = (
        read_model_quiet(rd, rd.server_launch, LaunchRecord, findings) if rd.server_launch.is_file() else None
    )
    provenance = _optional_model(
        rd, rd.provenance, Provenance, findings, "software/hardware provenance unknown"
    )
    run_record = read_model_quiet(rd, rd.run_record, RunRecord, findings) if rd.run_record.is_file() else None

    config, config_sha = _run_config(rd, findings)

    return RunInputs(
        rundir=rd,
        manifest=manifest,
        outcomes=rows,
        attempts=attempts,
        attempts_torn=attempts_torn,
        cache_repairs=repairs,
        verification=verification,
        launch=launch,
        provenance=provenance,
        config=config,
        config_sha256=config_sha,
        run_record=run_record,
        not_sent=not_sent,
        pilot=read_model_quiet(rd, rd.pilot, PilotDecision, findings) if rd.pilot.is_file() else None,
        findings=findings,
    )


def _request_attempts(rd: RunDir, findings: list[Finding]) -> tuple[list[RequestAttempt] | None, bool]:
    """The proxy's request log and whether its last line was torn; None (a warning) when it is absent."""
    if rd.requests_log.is_file():
        return _optional_jsonl(rd, rd.requests_log, RequestAttempt, findings)
    findings.append(
        Finding(
            severity="warn",
            code="missing_artifact",
            path=_rel(rd, rd.requests_log),
            message="absent: responses cannot be linked to requests; duplicates/retries/throughput not verified",
        )
    )
    return None, False


def _run_config(rd: RunDir, findings: list[Finding]) -> tuple[RunConfig | None, str | None]:
    """The config the run ran and its sha256; an unreadable one is an error finding, an absent one a warning."""
    if not rd.config_copy.is_file():
        findings.append(
            Finding(
                severity="warn",
                code="missing_artifact",
                path=_rel(rd, rd.config_copy),
                message="absent: default gates apply; budgets and generation settings unknown",
            )
        )
        return None, None
    config_sha = hashlib.sha256(rd.config_copy.read_bytes()).hexdigest()
    try:
        return load_config(rd.config_copy, check_sampling=False), config_sha
    except ConfigError as exc:
        findings.append(_unreadable(rd, rd.config_copy, exc))
        return None, config_sha


def read_model_quiet(rd: RunDir, path: Path, model: type[M], findings: list[Finding]) -> M | None:
    """Read a present optional artifact; an unreadable one is a finding (absence is not)."""
    try:
        return read_model(path, model)
    except ArtifactError as exc:
        findings.append(_unreadable(rd, path, exc))
        return None
