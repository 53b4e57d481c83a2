"""The stages around the launch: preflight before any GPU time is spent, materialize once the server is up.

Preflight: every sampled prompt must fit the context the config states (refuse, or drop with consent: the
fit is kept for the materialize stage), the sandbox for model-written code is resolved for every kind of
server (a requested one that is missing: exit 2), launched kinds are checked and the component tests run,
and a ``speed:`` section's client and tokenizer are refused before the launch.

Materialize, after the launch: the fit is capped at the context the server resolved in ``/server_info``
(kv_probe: ``run.context_fit.cap_to_served_context``), written once to ``context_fit.json``, and exactly the
sampled records left are written for EvalScope, in manifest order; after ``--extend`` the old run's answers
become this run's verified cache.  Each of these files is written once per run, by this stage alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalpipe.artifacts import RunDir, write_model
from evalpipe.evalscope_bridge.extend import seed_from_run
from evalpipe.evalscope_bridge.materialize import materialize
from evalpipe.run.context_fit import cap_to_served_context, check_context_fit, dropped_entries
from evalpipe.run.provenance import run_component_tests
from evalpipe.run.stages.base import AT, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.sandbox.preflight import for_run as sandbox_for_run
from evalpipe.server.preflight import run_preflight
from evalpipe.server.served_context import served_context

EXTEND_ONLY = "--extend: the old run's answers, seeded as this run's cache"
SERVED_INFO = "a server that serves /server_info (behind a router: its workers')"


def _preflight(state: RunState) -> None:
    cfg, spine, rd = state.cfg, state.spine, state.rundir
    plugins = state.plan.benchmarks
    state.fit = check_context_fit(cfg, spine.manifest, spine.datasets, plugins)  # before anything is launched
    sent = [b.benchmark for b in state.fit.benchmarks if b.dropped < b.checked]
    code = [name for name in sent if plugins[name].meta.executes_code]
    sandbox_for_run(cfg.code_execution, rd, code, fresh=True, say=state.notice)
    if state.kind.preflight_before_run:
        punkt = [spec.meta.display_name for spec in plugins.values() if spec.meta.nltk_module]
        run_preflight(
            cfg,
            state.server,
            punkt_needed=", ".join(punkt) or None,
            variant=state.variant,
            rundir=rd,
            kind=state.kind,
        )
    state.component_results = run_component_tests(cfg, rd) if cfg.component_tests else []
    if cfg.speed is not None and state.plan.coordination.parent_speed is None:
        # import cost: only runs with ``speed:`` import the speed stage (clients, tokenizer: ~0.3 s)
        from evalpipe.speed.stage import check_before_launch

        check_before_launch(cfg.speed, cfg.base_dir(), client_env=state.server.env)


PREFLIGHT = Stage(
    name="preflight",
    inputs=(file(AT.manifest),),
    outputs=(
        file(AT.code_sandbox, only="a benchmark runs model-written code"),
        file(AT.server_preflight, only="a server kind that is checked before the run (not an attachment)"),
        tree(AT.component_tests_dir, only="component_tests: in the config"),
    ),
    run=_preflight,
)


def _materialize(state: RunState) -> None:
    cfg, spine, rd = state.cfg, state.spine, state.rundir
    fit = state.fit
    capped = cap_to_served_context(
        fit, spine.manifest, spine.datasets, _served_info(rd), cfg.max_tokens_for, state.plan.benchmarks
    )
    if capped is not None:
        for line in capped.served_drops[len(fit.served_drops) :]:
            state.notice(line)
        fit = state.fit = capped
    write_model(rd.context_fit, fit)
    state.index_map = materialize(
        rd, spine.manifest, spine.datasets, state.plan.run, skip=dropped_entries(fit, cfg)
    )
    if state.extension is not None:
        seed_from_run(state.extension.old, rd, state.index_map, cfg.generation.repeats)
        write_model(rd.extension, state.extension.record())


def _served_info(rd: RunDir) -> dict[str, Any] | None:
    """The server's saved ``/server_info``; behind a router, the worker resolving the least context (every
    request may land on any of them)."""

    def read(path: Path) -> object:
        return json.loads(path.read_text(encoding="utf-8"))

    if rd.server_info.is_file():
        info = read(rd.server_info)
        return info if isinstance(info, dict) else None
    workers = [read(w.server_info) for w in rd.workers() if w.server_info.is_file()]
    sized = [(c[0], w) for w in workers if isinstance(w, dict) and (c := served_context(w)) is not None]
    return min(sized, key=lambda t: t[0])[1] if sized else None


MATERIALIZE = Stage(
    name="materialize",
    inputs=(
        file(AT.manifest),
        file(AT.server_info, only=SERVED_INFO),
        tree(AT.worker_files("*").dir, only=SERVED_INFO),
    ),
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
