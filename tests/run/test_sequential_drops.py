"""Drops decided before generation are not evidence: a unit dropped in both arms (the context fit, the served
context) leaves the paired gate, in the in-run stop and in compare alike; a unit dropped in one arm only still
counts against the arm under test.

The KV probe's case: 288 units, the 48 of its 96k length dropped in both arms because the server resolved less
context, no regression.  Counted as failures in both arms (d = −1, the rule for a sample neither arm answered)
they made the block fail almost always (P(pass) 0.000 at the argued discordance); left out, the block is
judged on the 240 units that remain, its bets tuned to them, and passes about as often as a block of 240.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from helpers.config import config_data, entry

from evalpipe.artifacts.schema.compare import DroppedUnits
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.compare import gate as compare_gate
from evalpipe.compare.block import block_of_pairs
from evalpipe.compare.paired_design import Bootstrap
from evalpipe.compare.units import BlockGate, PairedOutcomes
from evalpipe.config.models import RunConfig, SequentialConfig
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.hashing import block_order
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper
from evalpipe.stats.operating import unit_probabilities
from evalpipe.stats.sequential import sequential_decision

SEED = 20261205
BENCH = "kv_probe"
N, DROPPED = 288, 48
MARGIN = 9.0
PSI = 0.0608  # the sensitive profile's argued discordance for the probe
CONFIG = SequentialConfig(alpha=0.025, sequential_share=1.0)

_CLASS = {"correct": ("ok", 1.0), "wrong": ("wrong", 0.0), "no_answer": ("api_error", None)}


def _row(source_id: str, state: str) -> OutcomeRow:
    """An outcome row: answered right or wrong, failed after its retries, or dropped before generation (the
    row the bridge writes for an entry it never sent: index −1, ``context_overflow``)."""
    if state == "dropped":
        fclass, score, index = "context_overflow", None, -1
    else:
        (fclass, score), index = _CLASS[state], 0
    return OutcomeRow(
        benchmark=BENCH,
        subset="default",
        index=index,
        source_id=source_id,
        stratum="98304" if state == "dropped" else "4096",
        prediction_present=score is not None,
        review_present=score is not None,
        n_predictions=int(score is not None),
        n_reviews=int(score is not None),
        failure_class=fclass,  # type: ignore[arg-type]  # a FailureClass from the table above
        score=score,
        output_tokens=100 if score is not None else None,
    )


def _no_regression(rng: np.random.Generator, n: int) -> tuple[list[str], list[str]]:
    """Test and control states of n units with no regression at discordance PSI (``stats.operating``'s law)."""
    gain, loss = unit_probabilities(PSI, 0.0)
    test, control = [], []
    for u in rng.random(n):
        both = rng.random() < 0.93
        if u < gain:
            test.append("correct"), control.append("wrong")
        elif u < gain + loss:
            test.append("wrong"), control.append("correct")
        else:
            test.append("correct" if both else "wrong"), control.append("correct" if both else "wrong")
    return test, control


def _block(ids: list[str], test: dict[str, str], control: dict[str, str]) -> object:
    keys = [(BENCH, s, "x") for s in ids]
    oa = {(BENCH, s): _row(s, test[s]) for s in ids}
    ob = {(BENCH, s): _row(s, control[s]) for s in ids}
    drops = {(BENCH, s): ("served context", 98000) for s in ids if test[s] == "dropped"}
    return block_of_pairs(
        BENCH, keys, PairedOutcomes(oa, ob, drops=drops), Bootstrap(resamples=10, seed=1, confidence=0.95),
        BlockGate(margin_pts=MARGIN, sequential=(CONFIG, SEED)),
    )  # fmt: skip


def _pass_rate(paths: int, drop_as: str) -> tuple[float, list[object]]:
    ids = [f"kv{i:03d}" for i in range(N)]
    dropped = set(ids[-DROPPED:])  # the 96k length: a stratum of its own, spread through the seeded order
    passed, blocks = 0, []
    for path in range(paths):
        rng = np.random.default_rng(1000 + path)
        t, c = _no_regression(rng, N)
        test = {s: (drop_as if s in dropped else t[i]) for i, s in enumerate(ids)}
        control = {s: (drop_as if s in dropped else c[i]) for i, s in enumerate(ids)}
        block = _block(ids, test, control)
        blocks.append(block)
        ni = block.non_inferiority  # type: ignore[attr-defined]  # a PairedBenchmark
        passed += ni is not None and ni.verdict == "non-inferior"
    return passed / paths, blocks


def test_a_kv_probe_block_with_48_units_dropped_in_both_arms_passes_without_a_regression(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through compare's path (``block_of_pairs``: the gate, its sequential fields and its OC): 40 seeded paths
    with no regression pass ≥ 0.95 (the rule's rate at the 240 remaining units is 0.994 by 4 000 paths of
    ``stats.operating``); the same 48 units failed after their retries in both arms (no answer, not a drop)
    still count against the test arm, and the block fails.  The block says what it left out and why."""
    monkeypatch.setattr(compare_gate, "OC_PATHS", 40)  # the OC's own precision is not under test here
    rate, blocks = _pass_rate(40, "dropped")
    assert rate >= 0.95
    first = blocks[0]
    assert first.n_pairs == N - DROPPED  # type: ignore[attr-defined]
    assert first.dropped == [DroppedUnits(reason="served context", units=DROPPED, context_tokens=98000)]  # type: ignore[attr-defined]
    assert first.operating.n == N - DROPPED  # type: ignore[attr-defined]  # the OC at the units that remain
    assert first.sequential.planned_n == N - DROPPED  # type: ignore[attr-defined]
    failed_rate, _ = _pass_rate(10, "no_answer")
    assert failed_rate == 0.0


def test_a_unit_dropped_in_one_arm_only_counts_against_the_test_arm() -> None:
    ids = [f"u{i}" for i in range(6)]
    test = dict.fromkeys(ids, "correct")
    control = dict.fromkeys(ids, "correct")
    test["u0"] = "dropped"  # the test arm's server resolved less context: its loss
    control["u1"] = "dropped"  # the control's: nothing in the test arm's favour
    test["u2"] = control["u2"] = "dropped"
    block = _block(ids, test, control)
    assert block.n_pairs == 5 and block.dropped_one_arm == 2  # type: ignore[attr-defined]
    assert (block.b_only, block.a_only) == (1, 0)  # type: ignore[attr-defined]  # u0 flips against A
    assert block.a.correct == 4 and block.b.correct == 5  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------------- the in-run stop
def _cfg() -> RunConfig:
    data = config_data(
        benchmarks=[entry(BENCH, subset="default")],
        generation={
            "concurrency": 8,
            "sequential": {"alpha": 0.025, "sequential_share": 1.0, "batch_units": 8},
        },
        variants=[{"name": "test"}, {"name": "control"}],
        gates={"non_inferiority_margin_pts": {BENCH: MARGIN}},
    )
    return RunConfig.model_validate(data)


def _index_map(ids: list[str]) -> IndexMap:
    entries = [
        {"benchmark": BENCH, "subset": "default", "index": i, "source_id": s, "record_sha256": "0" * 64,
         "stratum": "x", "question": "q"}
        for i, s in enumerate(ids)
    ]  # fmt: skip
    dataset = {"benchmark": BENCH, "path": "d", "eval_split": "test", "subsets": ["default"], "files": {}}
    return IndexMap.model_validate({"datasets": [dataset], "entries": entries})


class _Worker:
    def __init__(self) -> None:
        self.released = 0
        self.halted = False

    def release(self, benchmark: str, units: int) -> None:
        self.released = max(self.released, units)

    def halt(self, benchmark: str) -> None:
        self.halted = True


def _event(row: int, state: str) -> Sample:
    ok = state != "no_answer"
    return Sample(
        benchmark=BENCH, subset="default", index=row, ok=ok, correct=1.0 if state == "correct" else 0.0
    )


def test_the_in_run_stop_judges_the_units_that_remain(tmp_path: Path) -> None:
    """The stopper of a KV-probe arm whose 48 longest items were never materialised: the control ran first and
    whole, the test arm answers in the release order; the stop is the rule's on the 240 remaining units (bets
    tuned to 240), non-inferior with no regression — and it halts at the crossing's place in the order, which
    counts the dropped placeholders before it."""
    ids = [f"kv{i:03d}" for i in range(N)]
    dropped = ids[-DROPPED:]
    sent = ids[:-DROPPED]
    imap = _index_map(sent)
    t, c = _no_regression(np.random.default_rng(7), N - DROPPED)
    test, control = dict(zip(sent, t, strict=True)), dict(zip(sent, c, strict=True))
    gone = [(BENCH, "default", s) for s in dropped]
    arms = {v: SequentialArm(tmp_path / "sequential", v, "test", "control", ("test", "control"), False)
            for v in ("test", "control")}  # fmt: skip
    ctl = SequentialStopper(arms["control"], _cfg(), SEED, imap, dropped=gone)
    ctl.begin(BENCH)
    for _, row in ctl.sequence(BENCH) or []:
        if row >= 0:
            ctl.observe(BENCH, _event(row, control[sent[row]]))
    ctl.finish(BENCH)
    stopper = SequentialStopper(arms["test"], _cfg(), SEED, imap, dropped=gone)
    assert stopper.blocks[BENCH].planned_n == N - DROPPED
    stopper.begin(BENCH)
    order = stopper.sequence(BENCH) or []
    worker, done = _Worker(), 0
    while not worker.halted and done < N:
        if done % 8 == 0:
            stopper.poll(worker)
        row = order[done][1]
        if row >= 0 and not worker.halted:
            stopper.observe(BENCH, _event(row, test[sent[row]]))
        done += 1
    stopper.poll(worker)
    stopper.finish(BENCH)
    block = stopper.blocks[BENCH]
    ordered = [s for _, s in block_order(SEED, [(BENCH, s) for s in ids]) if s in test]
    d = [(test[s] == "correct") - (control[s] == "correct") for s in ordered]
    expected = sequential_decision(d, MARGIN, 0.025, planned_n=N - DROPPED)
    assert (block.stop_unit, block.verdict) == (expected.units_used, "non-inferior")
    placed = [s for _, s in block_order(SEED, [(BENCH, s) for s in ids])]
    crossing = ordered[expected.units_used - 1]
    assert block.stop_position == placed.index(crossing) + 1 and worker.halted
    # counted as failures in both arms (the rule before drops left the gate) the same answers fail
    minus = [-1.0 if s in set(dropped) else d[ordered.index(s)] for s in placed]
    assert sequential_decision(minus, MARGIN, 0.025, planned_n=N).verdict != "non-inferior"
