"""The stages before any GPU time is spent: materialize the sampled records for EvalScope, then preflight.

Materialize: every sampled prompt must fit the context (refuse, or drop with consent), then exactly the
sampled records are written, in manifest order; after ``--extend`` the old run's answers become this run's
verified cache.  Preflight: the sandbox for model-written code is resolved for every kind of server (a
requested one that is missing: exit 2), launched kinds are checked and the component tests run, and a
``speed:`` section's client and tokenizer are refused before the launch.
"""

from __future__ import annotations

from evalpipe.artifacts import write_model
from evalpipe.benchmarks import code_benchmarks, punkt_needed
from evalpipe.evalscope_bridge.extend import seed_from_run
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.run.context_fit import check_context_fit, dropped_entries
from evalpipe.run.provenance import run_component_tests
from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.sandbox.preflight import for_run as sandbox_for_run
from evalpipe.server.preflight import run_preflight

EXTEND_ONLY = "--extend: the old run's answers, seeded as this run's cache"


def _materialize(state: RunState) -> None:
    cfg, spine, rd = state.cfg, state.spine, state.rundir
    fit = check_context_fit(cfg, spine.manifest, spine.datasets)
    write_model(rd.context_fit, fit)
    state.fit = fit
    state.index_map = materialize(rd, spine.manifest, spine.datasets, cfg, skip=dropped_entries(fit, cfg))
    if state.extension is not None:
        seed_from_run(state.extension.old, rd, state.index_map, cfg.generation.repeats)
        write_model(rd.extension, state.extension.record())


MATERIALIZE = Stage(
    name="materialize",
    inputs=(file(AT.manifest),),
    outputs=(
        file(AT.context_fit),
        tree(AT.datasets_dir),
        file(AT.index_map),
        file(AT.extension, only=EXTEND_ONLY),
        tree(AT.evalscope_dir, only=EXTEND_ONLY),
        file(AT.requests_log, only=EXTEND_ONLY),
        file(AT.responses_log, only=EXTEND_ONLY),
    ),
    run=_materialize,
)


def _preflight(state: RunState) -> None:
    cfg, rd = state.cfg, state.rundir
    sandbox_for_run(
        cfg.code_execution,
        rd,
        code_benchmarks([d.benchmark for d in state.index_map.datasets]),
        fresh=True,
        say=state.notice,
    )
    if state.kind.preflight_before_run:
        run_preflight(
            cfg,
            state.server,
            punkt_needed=punkt_needed([b.name for b in cfg.benchmarks]),
            variant=state.variant,
            rundir=rd,
        )
    state.component_results = run_component_tests(cfg, rd) if cfg.component_tests else []
    if cfg.speed is not None and state.plan.coordination.parent_speed is None:
        # only runs with ``speed:`` import the speed stage (clients, tokenizer: ~0.3 s)
        from evalpipe.speed.stage import check_before_launch

        check_before_launch(cfg.speed, cfg.base_dir(), client_env=state.server.env)


PREFLIGHT = Stage(
    name="preflight",
    inputs=(file(AT.index_map),),
    outputs=(
        file(AT.code_sandbox, only="a benchmark runs model-written code"),
        file(AT.server_preflight, only="a server kind that is checked before the run (not an attachment)"),
        tree(AT.component_tests_dir, only="component_tests: in the config"),
    ),
    run=_preflight,
)
