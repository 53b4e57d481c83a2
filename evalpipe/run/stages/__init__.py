"""The stages of one run directory, declared in the order they run.

    sample       (``sampling``: sample, reload the manifest on a resume, or plan ``--extend``)
    preflight    (``preparation``: the context fit, sandbox, server checks, component tests, the speed client)
    launch       (``server``: launch or attach, verify ``/server_info``)
    numerics     (``numerics``: the next-token log-probabilities of the probe's prompts, on the fresh server)
    materialize  (``preparation``: the sampled records for EvalScope, lengths beyond the served context dropped)
    evalscope    (``evaluation``: every benchmark through the recording proxy)
    speed        (``speed``: the serving benchmark on the same launch, or the parent's rounds at a barrier)
    stop         (``server``)
    outcomes     (``records``: outcomes.jsonl, provenance.json, the server's utilisation)
    audit        (``records``: summary.json and the reports)

Which of them a run has follows from its plan (:func:`declared_stages`): a caller's spine has no sample
stage, a config without ``speed:`` no speed stage (without ``numerics:`` no numerics stage), a variant whose speed the parent measured and a run
audited by its caller none of theirs.  Each is a :class:`~evalpipe.run.stages.base.Stage`: its inputs,
its outputs, what it does, and whether a resume may keep it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalpipe.run.options import SampledRun
from evalpipe.run.stages.base import Stage
from evalpipe.run.stages.evaluation import EVALSCOPE
from evalpipe.run.stages.numerics import NUMERICS
from evalpipe.run.stages.preparation import MATERIALIZE, PREFLIGHT
from evalpipe.run.stages.records import AUDIT, OUTCOMES
from evalpipe.run.stages.sampling import SAMPLE
from evalpipe.run.stages.server import LAUNCH, STOP
from evalpipe.run.stages.speed import own_speed, speed_at_barrier

if TYPE_CHECKING:
    from evalpipe.run.spec import RunSpec

__all__ = ["Stage", "declared_stages"]


def declared_stages(plan: RunSpec) -> tuple[Stage, ...]:
    """The stages ``plan`` runs, in order."""
    stages: list[Stage] = [] if isinstance(plan.origin, SampledRun) else [SAMPLE]
    stages += [PREFLIGHT, LAUNCH]
    if plan.cfg.numerics is not None:
        stages.append(NUMERICS)
    stages += [MATERIALIZE, EVALSCOPE]
    parent = plan.coordination.parent_speed
    if plan.cfg.speed is not None:
        if parent is None:
            stages.append(own_speed())
        elif parent.barrier is not None:
            stages.append(speed_at_barrier())
    stages += [STOP, OUTCOMES]
    if plan.audit:
        stages.append(AUDIT)
    return tuple(stages)
