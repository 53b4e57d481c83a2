"""The sequential rule across ``--extend``, resumes and dropped entries: one order, one e-process.

* ``block_order``: the old run's units keep their positions (recursively, for a twice-extended chain), the new
  ones follow in their own seeded order;
* ``planned_n_per_unit``: the extended block's e-process equals the old block's on the old prefix (wealth
  carried), and compare's ``sequential_fields`` reaches the old run's stop — a restart (every unit sorted by
  key, bets re-tuned) does not;
* the in-run stopper interrupted and resumed from its exchange files stops where an uninterrupted one does,
  and compare recomputes that stop;
* an entry dropped before sending keeps its place in the stopper's order, so the sent prefix it records cuts
  compare's manifest order at the same units.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from helpers.config import config_data, entry

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.compare import SequentialResult
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.run import ExtensionRecord
from evalpipe.compare.sequential import sequential_fields
from evalpipe.compare.units import BlockGate, PairedOutcomes
from evalpipe.config.models import RunConfig, SequentialConfig
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.hashing import block_order, generation_sizes, sequence_key
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper
from evalpipe.samplers.extend import entry_generations, prior_generations
from evalpipe.stats.sequential import betting_eprocesses, planned_n_per_unit, sequential_decision
from evalpipe.stats.unit_scores import AttemptState, dropped_in_both, unit_difference

SEED = 11
BENCH = "gsm8k"


def _ids(n: int, start: int = 0) -> list[str]:
    return [f"s{i:04d}" for i in range(start, start + n)]


def _manifest(ids: list[str]) -> Manifest:
    return Manifest.model_construct(
        seed=SEED, entries=[ManifestEntry.model_construct(benchmark=BENCH, source_id=s) for s in ids]
    )


def _extend(tmp_path: Path, name: str, old_root: Path | None, old_ids: list[str]) -> Path:
    """A run directory extended from ``old_root`` (whose manifest held ``old_ids``): its extension.json."""
    root = tmp_path / name
    root.mkdir()
    if old_root is not None:
        record = ExtensionRecord(
            extended_from=str(old_root),
            old_samples=len(old_ids),
            new_samples=0,
            reused=len(old_ids),
            added=0,
            statement="test",
            prior_generations=prior_generations(old_root, _manifest(old_ids)),
        )
        write_model(RunDir(root).extension, record)
    return root


# ------------------------------------------------------------------------------------------ the order
def test_planned_n_per_unit_is_the_cumulative_plan() -> None:
    assert planned_n_per_unit([3, 2]) == [3, 3, 3, 5, 5]
    assert planned_n_per_unit([4]) == [4] * 4
    for bad in ([], [3, 0]):
        with pytest.raises(ValueError, match="at least one unit"):
            planned_n_per_unit(bad)


def test_old_units_keep_their_positions_through_a_chain_of_extensions(tmp_path: Path) -> None:
    first, second, third = _ids(30), _ids(70, 30), _ids(100, 100)
    r1 = _extend(tmp_path, "r1", None, [])
    r2 = _extend(tmp_path, "r2", r1, first)
    r3 = _extend(tmp_path, "r3", r2, first + second)
    assert entry_generations(r1) == {}
    g2, g3 = entry_generations(r2), entry_generations(r3)
    units = [(BENCH, s) for s in first + second + third]
    by_key = sorted(units, key=lambda u: sequence_key(SEED, *u))
    order1 = block_order(SEED, units[:30])
    order2 = block_order(SEED, units[:100], g2)
    order3 = block_order(SEED, units, g3)
    assert order1 == [u for u in by_key if u in set(units[:30])]  # one generation: the seeded order
    assert order2[:30] == order1 and order3[:100] == order2  # the old runs' orders, recursively
    assert order3[100:] == [u for u in by_key if u in set(units[100:])]  # the new units in key order
    assert order3 != by_key  # what a restart would judge: the old units scattered through the new
    assert generation_sizes(order3, g3) == [30, 70, 100]
    assert generation_sizes(order1) == [30]
    # an extension.json of version 1 (no generations) still loads: one generation
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    RunDir(legacy).extension.write_text(
        '{"schema_version": 1, "extended_from": "x", "old_samples": 1, "new_samples": 2, "reused": 1, '
        '"added": 1, "floor_notes": [], "statement": "s"}',
        encoding="utf-8",
    )
    assert entry_generations(legacy) == {}


def test_the_extended_e_process_carries_the_old_wealth() -> None:
    rng = np.random.default_rng(5)
    d = rng.choice([-1.0, 0.0, 0.0, 1.0], size=1000)
    old = betting_eprocesses(d[:300], 5.0, planned_n=300)
    grown = betting_eprocesses(d, 5.0, planned_n=planned_n_per_unit([300, 700]))
    assert np.array_equal(grown.wealth_non_inferior[:300], old.wealth_non_inferior)
    assert np.array_equal(grown.wealth_inferior[:300], old.wealth_inferior)
    assert np.array_equal(grown.bets_non_inferior[:300], old.bets_non_inferior)
    # the new units bet as tuned to the larger plan
    assert grown.bets_non_inferior[500] < betting_eprocesses(d, 5.0, planned_n=300).bets_non_inferior[500]
    with pytest.raises(ValueError, match="one value for each"):
        betting_eprocesses(d, 5.0, planned_n=[300] * 10)


def _seq(fields: dict[str, object]) -> SequentialResult:
    seq = fields["sequential"]
    assert isinstance(seq, SequentialResult)
    return seq


def _row(source_id: str, state: AttemptState) -> OutcomeRow:
    fclass, score = {"correct": ("ok", 1.0), "wrong": ("wrong", 0.0), "no_answer": ("api_error", None)}[state]
    return OutcomeRow(
        benchmark=BENCH,
        subset="main",
        index=0,
        source_id=source_id,
        stratum="all",
        prediction_present=score is not None,
        review_present=score is not None,
        n_predictions=1,
        n_reviews=1,
        failure_class=fclass,  # type: ignore[arg-type]  # a FailureClass from the table above
        score=score,
        output_tokens=100,
    )


def test_compare_continues_the_old_runs_e_process_after_an_extension(tmp_path: Path) -> None:
    """The old run (300 units) crossed at t*; its extension to 1000 judges the old units first with the old
    bets, so compare finds the same stop and evidence.  The restart a mutant would do (all units by key,
    bets tuned to 1000) does not."""
    rng = random.Random(3)
    ids = _ids(1000)
    test_state: dict[str, AttemptState] = {s: "correct" for s in ids}
    control_state: dict[str, AttemptState] = {s: rng.choice(["correct", "wrong"]) for s in ids}
    oa = {(BENCH, s): _row(s, test_state[s]) for s in ids}
    ob = {(BENCH, s): _row(s, control_state[s]) for s in ids}
    old_ids = ids[:300]
    gate = BlockGate(margin_pts=5.0, sequential=(SequentialConfig(), SEED))
    old = sequential_fields([(BENCH, s, "all") for s in old_ids], PairedOutcomes(oa, ob), gate)
    generations = {(BENCH, s): 0 for s in old_ids}
    keys = [(BENCH, s, "all") for s in ids]
    grown = sequential_fields(keys, PairedOutcomes(oa, ob, generations=generations), gate)
    restart = sequential_fields(keys, PairedOutcomes(oa, ob), gate)
    o, g, r = _seq(old), _seq(grown), _seq(restart)
    assert o.verdict == "non-inferior" and o.units_used < 300
    assert (g.units_used, g.verdict, g.e_value_non_inferior) == (
        o.units_used,
        o.verdict,
        o.e_value_non_inferior,
    )
    assert g.generations == [300, 700] and g.planned_n == 1000
    assert r.generations == [] and r.e_value_non_inferior != o.e_value_non_inferior


# ------------------------------------------------------------------------------------- the in-run stop
N = 40


def _cfg() -> RunConfig:
    data = config_data(
        benchmarks=[entry(BENCH, subset="main")],
        generation={"concurrency": 3, "sequential": {"alpha": 0.05, "sequential_share": 1.0, "batch_units": 3}},
        variants=[{"name": "test"}, {"name": "control"}],
        gates={"non_inferiority_margin_pts": {BENCH: 10.0}},
    )
    return RunConfig.model_validate(data)


def _index_map(ids: list[str]) -> IndexMap:
    return IndexMap.model_validate(
        {
            "datasets": [
                {
                    "benchmark": BENCH,
                    "path": "datasets/x",
                    "eval_split": "test",
                    "subsets": ["main"],
                    "files": {},
                }
            ],
            "entries": [
                {
                    "benchmark": BENCH,
                    "subset": "main",
                    "index": i,
                    "source_id": s,
                    "record_sha256": "0" * 64,
                    "stratum": "all",
                    "question": "q",
                }
                for i, s in enumerate(ids)
            ],
        }
    )


def _arm(root: Path, variant: str) -> SequentialArm:
    return SequentialArm(root / "sequential", variant, "test", "control", ("test", "control"), False)


def _event(row: int, state: AttemptState, *, cached: bool = False) -> Sample:
    return Sample(
        benchmark=BENCH,
        subset="main",
        index=row,
        ok=state != "no_answer",
        correct=1.0 if state == "correct" else 0.0,
        cached=cached,
    )


class _Worker:
    def __init__(self) -> None:
        self.released = 0
        self.halted = False

    def release(self, benchmark: str, units: int) -> None:
        self.released = max(self.released, units)

    def halt(self, benchmark: str) -> None:
        self.halted = True


def _run_test_arm(
    root: Path, imap: IndexMap, states: dict[str, AttemptState], crash_after: int | None
) -> tuple[int | None, str]:
    """The control (all right) ran first; the test arm answers in its order, crashing (a new stopper over
    the same exchange files) after ``crash_after`` units."""
    cfg = _cfg()
    control = SequentialStopper(_arm(root, "control"), cfg, SEED, imap)
    control.begin(BENCH)
    for _, row in control.sequence(BENCH) or []:
        control.observe(BENCH, _event(row, "correct"))
    control.finish(BENCH)
    stopper = SequentialStopper(_arm(root, "test"), cfg, SEED, imap)
    stopper.begin(BENCH)
    by_row = {e.index: e.source_id for e in imap.entries}
    order = stopper.sequence(BENCH) or []
    worker = _Worker()
    done = 0
    while not worker.halted and done < N:
        stopper.poll(worker)
        if worker.halted:
            break
        row = order[done][1]
        stopper.observe(BENCH, _event(row, states[by_row[row]]))
        done += 1
        if crash_after is not None and done == crash_after:  # the process dies; a resume reads the files
            stopper = SequentialStopper(_arm(root, "test"), cfg, SEED, imap)
            stopper.begin(BENCH)
            worker = _Worker()
    stopper.finish(BENCH)
    block = stopper.blocks[BENCH]
    return block.stop_unit, block.verdict


def test_a_resumed_stop_reaches_the_same_stop_and_compare_recomputes_it(tmp_path: Path) -> None:
    ids = _ids(N)
    imap = _index_map(ids)
    rng = random.Random(8)
    states: dict[str, AttemptState] = {s: rng.choice(["wrong", "wrong", "no_answer", "correct"]) for s in ids}
    straight = _run_test_arm(tmp_path / "straight", imap, states, None)
    resumed = _run_test_arm(tmp_path / "resumed", imap, states, 4)
    ordered = [s for _, s in block_order(SEED, [(BENCH, s) for s in ids])]
    d = [unit_difference([states[s]], ["correct"]) for s in ordered]
    expected = sequential_decision(d, 10.0, 0.05, planned_n=N)
    assert expected.stop_reason == "crossing" and expected.units_used < N
    assert straight == resumed == (expected.units_used, expected.verdict)
    # compare on the rows of the units sent (the stop's prefix), bets tuned to the planned N
    oa = {(BENCH, s): _row(s, states[s]) for s in ids}
    ob = {(BENCH, s): _row(s, "correct") for s in ids}
    keys = [(BENCH, s, "all") for s in ordered[: expected.units_used]]
    gate = BlockGate(margin_pts=10.0, sequential=(SequentialConfig(alpha=0.05, sequential_share=1.0), SEED), planned=N)
    seq = _seq(sequential_fields(keys, PairedOutcomes(oa, ob), gate))
    assert (seq.units_used, seq.verdict) == (expected.units_used, expected.verdict)


def test_an_extended_run_releases_its_old_units_first_with_the_old_bets(tmp_path: Path) -> None:
    ids = _ids(N)
    imap = _index_map(ids)
    generations = {(BENCH, s): 0 for s in ids[:15]}
    stopper = SequentialStopper(_arm(tmp_path, "test"), _cfg(), SEED, imap, generations=generations)
    by_row = {e.index: e.source_id for e in imap.entries}
    sequence = [by_row[row] for _, row in stopper.sequence(BENCH) or []]
    assert sequence == [s for _, s in block_order(SEED, [(BENCH, s) for s in ids], generations)]
    assert set(sequence[:15]) == set(ids[:15])
    assert stopper.blocks[BENCH].planned_n == planned_n_per_unit([15, 25])
    # the old answers come from the cache: complete at once, judged as the first units
    stopper.begin(BENCH)
    for s in sequence[:15]:
        stopper.observe(BENCH, _event(ids.index(s), "correct", cached=True))
    assert len(stopper._values(stopper.blocks[BENCH], "test")) == 15
    stopper.finish(BENCH)


def test_a_dropped_entry_keeps_its_place_so_the_sent_prefix_cuts_the_manifest_order(tmp_path: Path) -> None:
    """Context fit dropped one entry early in the order: the stopper counts it (done, no answer) in its sent
    prefix, so the first ``units_sent_prefix`` manifest entries in block order are exactly those sent plus
    the dropped one — the cut compare makes (``only_sent``)."""
    everything = _ids(N + 1)
    manifest_order = [s for _, s in block_order(SEED, [(BENCH, s) for s in everything])]
    dropped = manifest_order[3]
    ids = [s for s in everything if s != dropped]
    imap = _index_map(ids)
    stopper = SequentialStopper(
        _arm(tmp_path, "test"), _cfg(), SEED, imap, dropped=[(BENCH, "main", dropped)]
    )
    stopper.begin(BENCH)
    sequence = stopper.sequence(BENCH) or []
    assert len(sequence) == N + 1 and sequence[3][1] < 0  # the placeholder row, never sent to EvalScope
    sent = [row for _, row in sequence[:10] if row >= 0]
    for row in sent:
        stopper.observe(BENCH, _event(row, "correct"))
    (stop,) = stopper.stops().benchmarks
    assert stop.units_sent == 9 and stop.units_sent_prefix == 10 and stop.planned_units == N + 1
    by_row = {e.index: e.source_id for e in imap.entries}
    assert set(manifest_order[: stop.units_sent_prefix]) == {by_row[r] for r in sent} | {dropped}
    # and in the rule the dropped unit is no unit: dropped before generation in every arm, it leaves the
    # judgement, whose bet is tuned to the N units that remain
    values = stopper._values(stopper.blocks[BENCH], "test")
    assert values[3] == ["dropped"] and dropped_in_both(values[3], values[3])
    assert stopper.blocks[BENCH].planned_n == N
    stopper.finish(BENCH)
