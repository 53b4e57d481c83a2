"""The numerics stage: the next-token log-probabilities of the probe's seeded prompts, asked right after the
server is up (``numerics:``; ``evalpipe.numerics``).

It runs before the evaluation so every arm meets the prompts on a server with the same history (just
launched), one request at a time, in the same order: on live SGLang two fresh BF16 launches then answered
bit-identical log-probabilities, while a warm prefix cache alone moved them.  A resume keeps a
``numerics.json`` that holds every prompt of this config; an internal pilot's second launch keeps the first
one's.  Only runs with ``numerics:`` build this stage, so only they import the probe.
"""

from __future__ import annotations

import json

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.numerics import NumericsProbe
from evalpipe.errors import ArtifactError
from evalpipe.numerics.probe import ProbeTarget, run_probe
from evalpipe.run.stages.base import AT, Reuse, Stage, file, tree
from evalpipe.run.stages.state import RunState
from evalpipe.server.lifecycle import watch_server


def _probe(state: RunState) -> None:
    cfg, rd, handle = state.cfg, state.rundir, state.handle
    if cfg.numerics is None:
        raise RuntimeError("the numerics stage is planned only for a config with a numerics: section")
    info_path = rd.server_info
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else None
    with watch_server(handle, rd, during="the numerics probe"):
        probe = run_probe(
            ProbeTarget(
                handle.base_url, rd.root, cfg.model.served_name, server_info=info, api_key=handle.api_key
            ),
            cfg.numerics,
            base_dir=cfg.base_dir(),
            say=state.say(),
        )
    failed = sum(1 for a in probe.answers if a.error is not None)
    state.say()(
        f"{state.variant or 'default'}: numerics {len(probe.answers) - failed}/{len(probe.answers)} prompts "
        f"answered in {probe.seconds:.1f} s"
    )


def _complete(state: RunState) -> bool:
    path = state.rundir.numerics_json
    if state.cfg.numerics is None or not path.is_file():
        return False
    try:
        probe = read_model(path, NumericsProbe)
    except ArtifactError:
        return False
    return probe.config == state.cfg.numerics and all(a.error is None for a in probe.answers)


def _kept(state: RunState) -> None:
    state.say()(f"{state.variant or 'default'}: numerics.json already holds every prompt (kept)")


NUMERICS = Stage(
    name="numerics",
    inputs=(),
    outputs=(file(AT.numerics_json), tree(AT.numerics_dir)),
    run=_probe,
    reuse=Reuse(complete=_complete, keep=_kept),
)
