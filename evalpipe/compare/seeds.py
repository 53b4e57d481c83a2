"""The attempts' request seeds of a paired block, and the attempts that answered alike (``AttemptSeedCheck``).

Read from the outcome rows, whose seeds are the ones each arm's recording proxy saw in the request bodies
(``requests.jsonl``, joined on the response id): what was sent, not what the config says should have been.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.compare import AttemptSeedCheck, PairedBenchmark
from evalpipe.artifacts.schema.outcomes import AttemptOutcome, OutcomeRow
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError

#: Source ids of differing seeds listed in compare.json (the count is whole).
_LISTED = 20


def _attempts(row: OutcomeRow | None) -> list[AttemptOutcome]:
    return list(row.attempts) if row is not None and row.attempts else []


def _seeds(row: OutcomeRow | None) -> list[int] | None:
    """Every attempt's recorded seed in attempt order; None when an attempt has none (or no attempts)."""
    seeds = [a.request_seed for a in sorted(_attempts(row), key=lambda a: a.attempt)]
    if not seeds or any(s is None for s in seeds):
        return None
    return [s for s in seeds if s is not None]


def _all_identical(row: OutcomeRow | None) -> bool | None:
    """Whether every attempt's response hash is the same; None when an attempt has no hash."""
    hashes = [a.response_sha256 for a in _attempts(row)]
    if len(hashes) < 2 or any(h is None for h in hashes):
        return None
    return len(set(hashes)) == 1


def attempt_seed_check(
    keys: Sequence[tuple[str, str, str]],
    oa: Mapping[tuple[str, str], OutcomeRow],
    ob: Mapping[tuple[str, str], OutcomeRow],
) -> AttemptSeedCheck | None:
    """The block's check over ``keys`` (benchmark, source_id, stratum); None when no row of either arm has
    more than one attempt."""
    rows = [(oa.get((b, s)), ob.get((b, s)), f"{b}/{s}") for b, s, _ in keys]
    repeats = max((len(_attempts(r)) for pair in rows for r in pair[:2]), default=0)
    if repeats < 2:
        return None
    seeded = distinct = common = 0
    differing: list[str] = []
    for ra, rb, name in rows:
        sa, sb = _seeds(ra), _seeds(rb)
        if sa is None or sb is None:
            continue
        seeded += 1
        if len(set(sa)) == len(sa) and len(set(sb)) == len(sb):
            distinct += 1
        if sa == sb:
            common += 1
        else:
            differing.append(name)
    same_a = [x for x in (_all_identical(ra) for ra, _, _ in rows) if x is not None]
    same_b = [x for x in (_all_identical(rb) for _, rb, _ in rows) if x is not None]
    return AttemptSeedCheck(
        repeats=repeats,
        samples=len(keys),
        seeded=seeded,
        distinct=distinct,
        common=common,
        compared_a=len(same_a),
        identical_a=sum(same_a),
        compared_b=len(same_b),
        identical_b=sum(same_b),
        differing_across_arms=differing[:_LISTED],
    )


def run_temperature(rundir: RunDir) -> float | None:
    """``generation.temperature`` of the run's own config copy; None without a readable one."""
    if not rundir.config_copy.is_file():
        return None
    try:
        return load_config(rundir.config_copy, check_sampling=False).generation.temperature
    except ConfigError:
        return None


def with_temperature(block: PairedBenchmark, temperature: float | None) -> PairedBenchmark:
    """The block (and its length buckets) with the run's temperature beside its attempt-seed check."""
    if block.attempt_seeds is None:
        return block
    return block.model_copy(
        update={
            "attempt_seeds": block.attempt_seeds.model_copy(update={"temperature": temperature}),
            "by_length": [with_temperature(x, temperature) for x in block.by_length],
        }
    )
