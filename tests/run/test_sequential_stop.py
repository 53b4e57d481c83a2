"""The sequential rule stopping inside a run, without a server: the worker's gate and each arm's stopper.

* ``SequenceGate`` (``evalscope_bridge.scheduling``): rows wait for their release, a halt refuses the rest,
  and EvalScope's FIFO pool in the gate's order never deadlocks — the rows sent are a prefix of the order.
* ``SequentialStopper`` (``run.sequential_stop``): arms exchanging their units through files stop at the
  first crossing ``evalpipe.stats.sequential`` finds on the test − control prefix, release a batch beyond
  the prefix every live arm has done (together) or beyond their own (in turn), complete the verdict's units
  before halting (the A/A arm run after them), stop waiting for an ended arm; the stop record and the
  entries the audit leaves out follow from it.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers.config import config_data, entry
from helpers.stopper import Recorder, index_map

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.artifacts.schema.sequential import SequentialStops
from evalpipe.audit.inputs import not_sent
from evalpipe.config.models import GenerationConfig, RunConfig, SequentialConfig, ServerVariant
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.evalscope_bridge.scheduling import SequenceGate
from evalpipe.hashing import sequence_key
from evalpipe.run.sequential_stop import (
    SequentialArm,
    SequentialStopper,
    arm_for,
    gated_blocks,
    in_run_order,
)
from evalpipe.stats.sequential import sequential_decision

SEED = 11
BENCH = "gsm8k"
N = 40


# ------------------------------------------------------------------------------------------- the gate
def test_gate_releases_in_order_and_refuses_after_the_halt() -> None:
    gate = SequenceGate({("main", i): i for i in range(6)})
    admitted: dict[int, bool] = {}

    def ask(row: int) -> None:
        admitted[row] = gate.admit("main", row)

    threads = [threading.Thread(target=ask, args=(row,)) for row in (0, 3)]
    for t in threads:
        t.start()
    gate.release(1)
    threads[0].join(timeout=5)
    assert admitted == {0: True} and threads[1].is_alive()  # row 3 waits for its release
    gate.release(0)  # never shrinks
    gate.halt()
    threads[1].join(timeout=5)
    assert admitted == {0: True, 3: False}
    assert gate.admit("main", 0) is False  # after the halt nothing more is sent, released or not
    assert gate.position("other", 0) == 6  # a row outside the order comes last


def test_a_fifo_pool_in_the_gates_order_sends_a_prefix_and_never_deadlocks() -> None:
    """Two pool threads, 12 rows submitted in the gate's order (as the evaluator sorts them), released two
    at a time as they complete, halted after 7 completed: the rows sent are exactly the first ones."""
    order = [("main", i) for i in (5, 2, 9, 0, 11, 7, 1, 3, 8, 10, 4, 6)]
    gate = SequenceGate({row: place for place, row in enumerate(order)})
    done: list[tuple[str, int]] = []
    lock = threading.Lock()

    def work(row: tuple[str, int]) -> bool:
        if not gate.admit(*row):
            return False
        time.sleep(0.01)
        with lock:
            done.append(row)
            finished = len(done)
        gate.release(finished + 2)
        if finished >= 7:
            gate.halt()
        return True

    gate.release(2)
    with ThreadPoolExecutor(max_workers=2) as pool:
        sent = list(pool.map(work, order, timeout=30))
    assert sent == [True] * len(done) + [False] * (len(order) - len(done))
    assert 7 <= len(done) <= 8 and sorted(done, key=order.index) == order[: len(done)]


# ------------------------------------------------------------------------------------------- the stopper
def _cfg(
    *, batch: int | None = 3, concurrency: int = 4, pools: dict[str, list[str]] | None = None
) -> RunConfig:
    data = config_data(
        benchmarks=[entry(BENCH, subset="main"), entry("ceval")],
        generation={"concurrency": concurrency, "sequential": {"alpha": 0.05, "sequential_share": 1.0, "batch_units": batch}},
        variants=[{"name": "test"}, {"name": "control"}, {"name": "again", "repeat_of": "control"}],
        gates={"non_inferiority_margin_pts": {BENCH: 10.0, "ceval": 10.0}},
        pools=pools or {},
    )
    return RunConfig.model_validate(data)


def _index_map(n: int = N) -> IndexMap:
    return index_map(BENCH, n)


def _arm(tmp_path: Path, variant: str, *, together: bool) -> SequentialArm:
    return SequentialArm(
        tmp_path / "sequential", variant, "test", "control", ("test", "control", "again"), together
    )


def _answer(stopper: SequentialStopper, order: list[tuple[str, int]], units: range, right: bool) -> None:
    for subset, row in (order[u] for u in units):
        stopper.observe(
            BENCH, Sample(benchmark=BENCH, subset=subset, index=row, ok=True, correct=float(right))
        )


def test_arms_in_turn_stop_at_the_first_crossing_and_the_aa_arm_completes_the_verdicts_units(
    tmp_path: Path,
) -> None:
    cfg, imap = _cfg(), _index_map()
    assert gated_blocks(cfg) == {BENCH: (10.0, (BENCH,)), "ceval": (10.0, ("ceval",))}
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    # the control runs first, whole: no test units to judge against
    control = SequentialStopper(_arm(tmp_path, "control", together=False), cfg, SEED, imap)
    assert control.sequence(BENCH) == order and control.sequence("ceval") is None  # ceval: not in the run
    control.begin(BENCH)
    worker = Recorder()
    control.poll(worker)
    assert worker.released == {BENCH: 3}  # the batch beyond its own prefix
    _answer(control, order, range(N), right=True)
    control.poll(worker)
    assert worker.released[BENCH] == N and not worker.halted
    control.finish(BENCH)
    # the test arm answers everything wrong: it stops where the rule crosses on d = -1 per unit
    expected = sequential_decision([-1.0] * N, 10.0, 0.05, planned_n=N)
    assert expected.verdict == "inferior" and expected.units_used < N
    test = SequentialStopper(_arm(tmp_path, "test", together=False), cfg, SEED, imap)
    test.begin(BENCH)
    worker = Recorder()
    for unit in range(N):
        test.poll(worker)
        if BENCH in worker.halted:
            break
        assert worker.released[BENCH] == min(N, unit + 3)  # never more than a batch beyond what is done
        _answer(test, order, range(unit, unit + 1), right=False)
    assert unit == expected.units_used and BENCH in worker.halted
    # the rows released but not sent are refused by the worker, and recorded so
    for subset, row in order[unit : worker.released[BENCH]]:
        test.observe(BENCH, Sample(benchmark=BENCH, subset=subset, index=row, ok=False, sent=False))
    test.finish(BENCH)
    test.write(_rundir(tmp_path / "test"))
    (stop,) = read_model(RunDir(tmp_path / "test").sequential_stop, SequentialStops).benchmarks
    assert (stop.stop_unit, stop.verdict, stop.stop_reason) == (expected.units_used, "inferior", "crossing")
    assert stop.units_sent == stop.units_sent_prefix == expected.units_used
    assert stop.units_not_sent == N - expected.units_used
    # a resume of the stopped arm: its own file says where it stopped; nothing more is released, it halts
    resumed = SequentialStopper(_arm(tmp_path, "test", together=False), cfg, SEED, imap)
    resumed.begin(BENCH)
    worker = Recorder()
    resumed.poll(worker)
    assert worker.released == {BENCH: expected.units_used} and BENCH in worker.halted
    resumed.finish(BENCH)
    # the A/A arm after them: released straight to the verdict's unit, halted once it has done them
    again = SequentialStopper(_arm(tmp_path, "again", together=False), cfg, SEED, imap)
    again.begin(BENCH)
    worker = Recorder()
    again.poll(worker)
    assert worker.released == {BENCH: expected.units_used} and not worker.halted
    _answer(again, order, range(expected.units_used), right=True)
    again.poll(worker)
    assert BENCH in worker.halted
    # what the audit leaves out of the test arm: the entries after its sent prefix, unpredicted
    entries = [(BENCH, e.source_id) for e in imap.entries]
    by_row = {e.index: e.source_id for e in imap.entries}
    sent_ids = {(BENCH, by_row[row]) for _, row in order[: expected.units_used]}
    assert not_sent(tmp_path / "test", SEED, entries, sent_ids) == set(entries) - sent_ids


def _rundir(root: Path) -> RunDir:
    root.mkdir(parents=True, exist_ok=True)
    return RunDir(root)


def test_arms_together_wait_for_the_slowest_live_arm_and_not_for_an_ended_one(tmp_path: Path) -> None:
    cfg, imap = _cfg(batch=2), _index_map()
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    arms = {
        v: SequentialStopper(_arm(tmp_path, v, together=True), cfg, SEED, imap)
        for v in ("test", "control", "again")
    }
    workers = {v: Recorder() for v in arms}
    for v, s in arms.items():
        s.begin(BENCH)
        s.poll(workers[v])
    _answer(arms["test"], order, range(5), right=True)
    _answer(arms["control"], order, range(5), right=True)
    _answer(arms["again"], order, range(1), right=True)
    arms["test"].poll(workers["test"])
    assert workers["test"].released[BENCH] == 3  # the A/A arm has done 1 unit: 1 + a batch of 2
    arms["again"].arm.end()
    arms["test"].poll(workers["test"])
    assert workers["test"].released[BENCH] == 7  # it ended: no longer waited for (5 + 2)
    assert arms["test"].stops().benchmarks[0].stop_reason == "partner ended"


def test_a_look_releases_no_more_than_a_batch_beyond_what_its_judge_saw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The arms complete units while another arm looks: units the test and control arms finish after the judge
    read them (here: past the crossing) never widen that look's release, so every arm stops within a batch of
    the verdict's unit."""
    cfg, imap = _cfg(batch=2), _index_map()
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    crossing = sequential_decision([-1.0] * N, 10.0, 0.05, planned_n=N).units_used
    assert 4 < crossing < N - 4
    arms = {
        v: SequentialStopper(_arm(tmp_path, v, together=True), cfg, SEED, imap)
        for v in ("test", "control", "again")
    }
    workers = {v: Recorder() for v in arms}
    for s in arms.values():
        s.begin(BENCH)
    before = crossing - 3  # no crossing yet on these units
    _answer(arms["test"], order, range(before), right=False)
    _answer(arms["control"], order, range(before), right=True)
    _answer(arms["again"], order, range(N), right=True)
    looking = arms["again"]
    read = looking._values

    def read_then_the_arms_go_on(block, variant):  # type: ignore[no-untyped-def]
        values = read(block, variant)
        if variant == "control":  # just after this look read the control arm, both arms pass the crossing
            _answer(arms["test"], order, range(before, crossing + 3), right=False)
            _answer(arms["control"], order, range(before, crossing + 3), right=True)
        return values

    monkeypatch.setattr(looking, "_values", read_then_the_arms_go_on)
    looking.poll(workers["again"])
    assert workers["again"].released[BENCH] == before + 2  # what the judge saw, plus a batch
    monkeypatch.setattr(looking, "_values", read)
    looking.poll(workers["again"])  # the next look judges the crossing: released up to it, then halted
    assert workers["again"].released[BENCH] == crossing and BENCH in workers["again"].halted
    assert looking.blocks[BENCH].stop_unit == crossing


def test_runs_without_a_control_are_not_stopped_inside(tmp_path: Path) -> None:
    # a pool without a margin of its own gates nothing: its members keep their own blocks
    assert gated_blocks(_cfg(pools={"both": [BENCH, "ceval"]})) == gated_blocks(_cfg())
    cfg = _cfg()
    assert arm_for(cfg, "test", tmp_path, together=True) is not None
    no_control = cfg.model_copy(
        update={"variants": [ServerVariant(name="test"), ServerVariant(name="again", repeat_of="test")]}
    )
    assert arm_for(no_control, "test", tmp_path, together=True) is None
    off = cfg.model_copy(update={"generation": GenerationConfig(sequential=SequentialConfig(in_run=False))})
    assert arm_for(off, "test", tmp_path, together=True) is None
    assert arm_for(cfg, None, tmp_path, together=True) is None


def test_the_default_batch_is_the_concurrency_per_attempt(tmp_path: Path) -> None:
    cfg = _cfg(batch=None, concurrency=6)
    stopper = SequentialStopper(_arm(tmp_path, "test", together=True), cfg, SEED, _index_map())
    assert stopper.blocks[BENCH].batch == 6
    with pytest.raises(ValueError):
        SequentialConfig(batch_units=0)


def _pool_index_map() -> IndexMap:
    """20 GSM8K rows and 20 C-Eval rows (two subsets), the pool's 40 units."""
    entries = [
        {"benchmark": BENCH, "subset": "main", "index": i, "source_id": f"g{i:02d}"} for i in range(20)
    ] + [
        {"benchmark": "ceval", "subset": subset, "index": i, "source_id": f"{subset}{i}"}
        for subset in ("physics", "geography")
        for i in range(10)
    ]
    return IndexMap.model_validate(
        {
            "datasets": [
                {"benchmark": b, "path": f"datasets/{b}", "eval_split": "test", "subsets": s, "files": {}}
                for b, s in ((BENCH, ["main"]), ("ceval", ["physics", "geography"]))
            ],
            "entries": [{**e, "record_sha256": "0" * 64, "stratum": "all", "question": "q"} for e in entries],
        }
    )


def test_a_pool_is_judged_in_its_own_order_and_each_member_released_its_share(tmp_path: Path) -> None:
    """A pool with a margin (pipelined schedule): its members, separate EvalScope tasks, are released their
    share of the pool's prefix in the pool's sequence order; the rule judges the pool's units and halts both."""
    data = config_data(
        benchmarks=[entry(BENCH, subset="main"), entry("ceval")],
        generation={"concurrency": 2, "sequential": {"alpha": 0.05, "sequential_share": 1.0}},
        variants=[{"name": "test"}, {"name": "control"}],
        gates={"non_inferiority_margin_pts": {"both": 10.0, BENCH: 10.0}},
        pools={"both": [BENCH, "ceval"]},
    )
    cfg = RunConfig.model_validate(data)
    assert gated_blocks(cfg) == {"both": (10.0, (BENCH, "ceval"))}  # the member's own margin: after the run
    sequential = cfg.model_copy(
        update={"generation": cfg.generation.model_copy(update={"schedule": "sequential"})}
    )
    assert gated_blocks(sequential) == {
        BENCH: (10.0, (BENCH,))
    }  # one task at a time: the pool cannot advance
    imap = _pool_index_map()
    keys = sorted(
        (sequence_key(SEED, e.benchmark, e.source_id), e.benchmark, e.subset, e.index) for e in imap.entries
    )
    pool_order = [(b, subset, index) for _, b, subset, index in keys]
    stoppers = {
        v: SequentialStopper(_arm(tmp_path, v, together=False), cfg, SEED, imap) for v in ("control", "test")
    }
    for bench in (BENCH, "ceval"):  # each member's order is the pool's filtered to it
        assert stoppers["test"].sequence(bench) == [(s, i) for b, s, i in pool_order if b == bench]
    control = stoppers["control"]
    for bench in (BENCH, "ceval"):
        control.begin(bench)
    for b, subset, index in pool_order:
        control.observe(b, Sample(benchmark=b, subset=subset, index=index, ok=True, correct=1.0))
    test = stoppers["test"]
    worker = Recorder()
    for bench in (BENCH, "ceval"):
        test.begin(bench)
    expected = sequential_decision([-1.0] * len(pool_order), 10.0, 0.05, planned_n=len(pool_order))
    done = 0
    while not worker.halted:
        test.poll(worker)
        if worker.halted:
            break
        window = pool_order[: min(len(pool_order), done + 2)]  # a batch of 2 (concurrency 2) ahead
        for bench in (BENCH, "ceval"):  # each member released its share of the pool's first units
            assert worker.released.get(bench, 0) == sum(1 for b, _, _ in window if b == bench)
        b, subset, index = pool_order[done]
        test.observe(b, Sample(benchmark=b, subset=subset, index=index, ok=True, correct=0.0))
        done += 1
    assert done == expected.units_used and worker.halted == {BENCH, "ceval"}
    stops = {s.benchmark: s for s in test.stops().benchmarks}
    assert {s.block for s in stops.values()} == {"both"}
    assert all((s.stop_unit, s.verdict) == (expected.units_used, "inferior") for s in stops.values())
    assert sum(s.units_sent for s in stops.values()) == expected.units_used


# ------------------------------------------------------------------------- what the stopper judges
# Each test below drives a control arm (run whole, first) and then a test arm in turn, and checks the test
# arm's stop record against the rule of evalpipe.stats.sequential applied to the units in the sequence order
# with the bets tuned to the plan.  Each also checks, on the same data, that the plausible bug it guards
# against would decide differently — so the test keeps its power to fail (`make mutants`, tools/mutants.toml).

Answer = float | None
"""One attempt's answer in a unit: 1.0 right, 0.0 wrong, None failed (sent, no score came back)."""


def _sample(order: list[tuple[str, int]], unit: int, answer: Answer) -> Sample:
    subset, row = order[unit]
    if answer is None:
        return Sample(benchmark=BENCH, subset=subset, index=row, ok=False, phase="predict")
    return Sample(benchmark=BENCH, subset=subset, index=row, ok=True, correct=answer)


def _arrival(units: range, answers: list[Answer], *, wrong_last: bool) -> list[int]:
    """The order a batch's answers complete in: the sequence order, or the right ones first (short answers
    finish early) — completion order, which depends on the answers."""
    return sorted(units, key=lambda u: answers[u] != 1.0) if wrong_last else list(units)


def _test_arm_in_turn(
    tmp_path: Path,
    control: list[Answer],
    test: list[Answer],
    *,
    batch: int,
    wrong_last: bool = False,
) -> SequentialStopper:
    """The control arm answers every unit, then the test arm answers each batch it is released (in arrival
    order) and is polled after each, until it halts or has answered every unit.  Returns the test arm."""
    n = len(control)
    cfg, imap = _cfg(batch=batch), _index_map(n)
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    first = SequentialStopper(_arm(tmp_path, "control", together=False), cfg, SEED, imap)
    first.begin(BENCH)
    for unit in _arrival(range(n), control, wrong_last=wrong_last):
        first.observe(BENCH, _sample(order, unit, control[unit]))
    first.finish(BENCH)
    first.arm.end()
    stopper = SequentialStopper(_arm(tmp_path, "test", together=False), cfg, SEED, imap)
    stopper.begin(BENCH)
    worker, done = Recorder(), 0
    while True:
        stopper.poll(worker)
        if BENCH in worker.halted or done == n:
            break
        released = worker.released[BENCH]
        for unit in _arrival(range(done, released), test, wrong_last=wrong_last):
            stopper.observe(BENCH, _sample(order, unit, test[unit]))
        done = released
    stopper.finish(BENCH)
    return stopper


def _differences(test: list[Answer], control: list[Answer]) -> list[float]:
    """Per unit test − control, a failed attempt counting 0 (wrong) — what the rule must see."""
    return [(t or 0.0) - (c or 0.0) for t, c in zip(test, control, strict=True)]


def test_the_stopper_judges_the_sequence_order_not_the_order_answers_arrive_in(tmp_path: Path) -> None:
    """The test arm loses the first 12 units of the sequence; its right answers complete before its wrong
    ones.  In the sequence order the rule says "inferior" early; in arrival order (wrong answers last) it
    would not — the stopper must decide on the sequence order."""
    control: list[Answer] = [1.0] * N
    test: list[Answer] = [0.0] * 12 + [1.0] * (N - 12)
    stopper = _test_arm_in_turn(tmp_path, control, test, batch=N, wrong_last=True)
    d = _differences(test, control)
    expected = sequential_decision(d, 10.0, stopper.alpha, planned_n=N)
    by_arrival = sequential_decision(sorted(d, reverse=True), 10.0, stopper.alpha, planned_n=N)
    assert expected.verdict == "inferior" and by_arrival.verdict != "inferior"
    (stop,) = stopper.stops().benchmarks
    assert (stop.stop_unit, stop.verdict) == (expected.units_used, "inferior")


def test_the_stopper_tunes_the_bet_to_the_plan_not_to_the_units_seen(tmp_path: Path) -> None:
    """A look after every unit of a 60-unit plan, the test arm winning 2 of 3 discordant pairs: the bet is
    tuned to the planned 60 at every look.  Re-tuned to the k units seen at look k, the bets of the early
    units would be larger after the fact and the rule would stop 6 units earlier."""
    n = 60
    d = ([1.0, 1.0, -1.0] * n)[:n]
    test: list[Answer] = [1.0 if x > 0 else 0.0 for x in d]
    control: list[Answer] = [0.0 if x > 0 else 1.0 for x in d]
    stopper = _test_arm_in_turn(tmp_path, control, test, batch=1)
    expected = sequential_decision(d, 10.0, stopper.alpha, planned_n=n)

    def crosses_tuned_to_the_units_seen(k: int) -> bool:
        return sequential_decision(d[:k], 10.0, stopper.alpha, planned_n=k).stop_reason == "crossing"

    seen = next((k for k in range(1, n + 1) if crosses_tuned_to_the_units_seen(k)), n + 1)
    assert expected.verdict == "non-inferior" and seen < expected.units_used
    (stop,) = stopper.stops().benchmarks
    assert (stop.stop_unit, stop.verdict) == (expected.units_used, "non-inferior")


def test_a_failed_attempt_in_the_test_arm_counts_as_a_wrong_answer(tmp_path: Path) -> None:
    """Every other test-arm attempt fails (sent, no score): each is a lost unit against a control that is
    always right, so the rule stops "inferior"; counted right, the arms would be equal and it would not."""
    control: list[Answer] = [1.0] * N
    test: list[Answer] = [1.0 if unit % 2 == 0 else None for unit in range(N)]
    stopper = _test_arm_in_turn(tmp_path, control, test, batch=3)
    expected = sequential_decision(_differences(test, control), 10.0, stopper.alpha, planned_n=N)
    as_right = sequential_decision([0.0] * N, 10.0, stopper.alpha, planned_n=N)
    assert expected.verdict == "inferior" and as_right.verdict != "inferior"
    (stop,) = stopper.stops().benchmarks
    assert (stop.stop_unit, stop.verdict) == (expected.units_used, "inferior")


def test_the_stopper_pairs_the_test_arm_with_the_control_arm(tmp_path: Path) -> None:
    """Both arms right on every other unit, the same units: no difference, no verdict in 40 units.  Judged
    against a control taken as always right (its answers ignored) the test arm would look "inferior"."""
    answers: list[Answer] = [1.0 if unit % 2 == 0 else 0.0 for unit in range(N)]
    stopper = _test_arm_in_turn(tmp_path, list(answers), list(answers), batch=3)
    expected = sequential_decision([0.0] * N, 10.0, stopper.alpha, planned_n=N)
    against_perfect = sequential_decision(
        [(a or 0.0) - 1.0 for a in answers], 10.0, stopper.alpha, planned_n=N
    )
    assert expected.verdict == "inconclusive" and against_perfect.verdict == "inferior"
    (stop,) = stopper.stops().benchmarks
    assert (stop.stop_unit, stop.verdict, stop.stop_reason) == (None, "inconclusive", "units exhausted")
    assert stop.units_complete == N


@pytest.mark.parametrize("index", [N, -1])
def test_an_exchange_record_of_no_row_of_the_run_is_refused_naming_the_file(tmp_path: Path, index: int) -> None:
    from evalpipe.errors import ArtifactError

    cfg, imap = _cfg(), _index_map()
    control = SequentialStopper(_arm(tmp_path, "control", together=False), cfg, SEED, imap)
    control.begin(BENCH)
    control.observe(BENCH, Sample(benchmark=BENCH, subset="main", index=0, ok=True, correct=1.0))
    own = control.path(BENCH, "control")
    # an edited exchange file: a record of a row this run does not hold (the index map has rows 0..N-1)
    with own.open("a") as fh:
        fh.write(f'{{"subset": "main", "index": {index}, "correct": 1.0, "sent": true}}\n')
    before = own.read_bytes()
    test = SequentialStopper(_arm(tmp_path, "test", together=False), cfg, SEED, imap)
    test.begin(BENCH)
    with pytest.raises(ArtifactError) as refused:  # the other arm's file, read at its first look
        test.poll(Recorder())
    assert str(refused.value).startswith(f"{own}: field index: main/{index}")
    resumed = SequentialStopper(_arm(tmp_path, "control", together=False), cfg, SEED, imap)
    with pytest.raises(ArtifactError):  # the arm's own file, read when it resumes
        resumed.begin(BENCH)
    assert own.read_bytes() == before
