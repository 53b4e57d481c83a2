"""The sample stage: the manifest every later stage keys on (``evalpipe.run.sample``, ``evalpipe.run.extend``).

A resume keeps it whenever the run directory holds a manifest: the manifest is reloaded, never re-sampled,
and the config is checked against the one the run started with.  A resume of a directory without one is
refused (a resume never samples).
"""

from __future__ import annotations

from evalpipe.run.extend import extend_stage
from evalpipe.run.options import ExtendedRun, FreshRun, ResumedRun, SampledRun, known_rundir
from evalpipe.run.sample import not_a_run_directory, resume_stage, sample_stage
from evalpipe.run.stages.base import AT, Reuse, Stage, file
from evalpipe.run.stages.state import RunState


def _sampling_origin(state: RunState) -> FreshRun | ResumedRun | ExtendedRun:
    origin = state.plan.origin
    if isinstance(origin, SampledRun):
        raise RuntimeError("a run handed a sampled spine has no sample stage")
    return origin


def _sample(state: RunState) -> None:
    origin = _sampling_origin(state)
    cfg = state.cfg
    if isinstance(origin, ResumedRun):
        raise not_a_run_directory(origin.run_dir)
    if isinstance(origin, ExtendedRun):
        state.spine, state.extension = extend_stage(
            state.plan.run,
            origin.old_run,
            dataset_root=origin.dataset_root,
            out=origin.out,
            allow_drift=origin.allow_drift,
        )
        return
    state.spine = sample_stage(
        cfg, dataset_root=origin.dataset_root, out=origin.out, allow_drift=origin.allow_drift
    )


def _manifest_reloads(state: RunState) -> bool:
    rd = known_rundir(state.plan.origin)
    return rd is not None and rd.manifest.is_file()


def _reload(state: RunState) -> None:
    origin = _sampling_origin(state)
    if not isinstance(origin, ResumedRun):
        raise RuntimeError("only a resumed run reloads its manifest")
    state.spine = resume_stage(state.cfg, origin.run_dir, dataset_root=origin.dataset_root)


SAMPLE = Stage(
    name="sample",
    inputs=(),
    outputs=(
        file(AT.run_record),
        file(AT.config_copy),
        file(AT.manifest),
        file(AT.sampled_ids),
        file(AT.sources),
    ),
    run=_sample,
    reuse=Reuse(complete=_manifest_reloads, keep=_reload),
)
