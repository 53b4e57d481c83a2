"""The stages after the server has stopped: outcomes and provenance, then the audit.

Outcomes: one row per manifest entry, joined from EvalScope's predictions and reviews and the recorded
requests; provenance of what produced them; and how full the server's ``concurrency`` slots were during the
evaluation (kept in ``timings.json``).  Audit: ``summary.json``, ``report.md``, ``report.html`` and
``explorer.html``; the verdict is raised by the caller.
"""

from __future__ import annotations

from evalpipe.artifacts import write_model
from evalpipe.audit.utilisation import utilisation_of_run
from evalpipe.clock import utc_now
from evalpipe.evalscope_bridge.outcomes import write_outcomes
from evalpipe.run.pilot import asked_attempts
from evalpipe.run.provenance import collect_provenance
from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.state import RunState


def _outcomes(state: RunState) -> None:
    cfg, rd = state.cfg, state.rundir
    state.clock.utilisation = utilisation_of_run(rd, cfg.generation.concurrency)
    state.outcomes = write_outcomes(
        rd, state.spine.manifest, state.index_map, state.plan.benchmarks, asked_attempts(cfg, rd, state.spine.manifest)
    )
    prov = collect_provenance(
        server=state.server, kind=state.kind, started_at=state.started_at, component_tests=state.component_results
    )
    prov.finished_at = utc_now()
    write_model(rd.provenance, prov)


OUTCOMES = Stage(
    name="outcomes",
    inputs=(
        file(AT.manifest),
        file(AT.index_map),
        tree(AT.evalscope_dir),
        file(AT.evalscope_tasks),
        file(AT.prompt_hashes),
        file(AT.evalscope_errors),
        file(AT.cache_repairs),
        file(AT.requests_log),
        file(AT.responses_log),
        file(AT.code_sandbox),
    ),
    outputs=(file(AT.outcomes), file(AT.provenance)),
    run=_outcomes,
)


def _audit(state: RunState) -> None:
    # import cost: the audit runs last: its report and statistics modules (~0.3-0.6 s) load after EvalScope
    from evalpipe.run.audit import audit_run

    state.summary = audit_run(state.rundir.root)


#: The audit recomputes the sign-off from the run directory as a whole: whatever of it the stages before wrote.
AUDIT = Stage(
    name="audit",
    inputs=(tree(AT.root),),
    outputs=(file(AT.summary), file(AT.report_md), file(AT.report_html), file(AT.explorer_html)),
    run=_audit,
)
