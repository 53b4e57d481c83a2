"""The in-run stop spends α_s, not α: with ``alpha: 0.05, sequential_share: 0.5`` the stopper crosses where
e-processes at 0.025 cross (bets tuned to 0.025, threshold 40), never where e-processes at 0.05 would
(``evalpipe.run.sequential_stop``; the gate's α split, ``evalpipe.stats.operating``)."""

from __future__ import annotations

from pathlib import Path

from helpers.config import config_data, entry

from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.config.models import RunConfig
from evalpipe.evalscope_bridge.protocol import Sample
from evalpipe.run.sequential_stop import SequentialArm, SequentialStopper, in_run_order
from evalpipe.stats.sequential import sequential_decision

SEED = 5
BENCH = "gsm8k"
N = 60


class _Worker:
    def __init__(self) -> None:
        self.released: dict[str, int] = {}
        self.halted: set[str] = set()

    def release(self, benchmark: str, units: int) -> None:
        self.released[benchmark] = units

    def halt(self, benchmark: str) -> None:
        self.halted.add(benchmark)


def _index_map() -> IndexMap:
    dataset = {"benchmark": BENCH, "path": "d", "eval_split": "test", "subsets": ["main"], "files": {}}
    rows = [
        {"benchmark": BENCH, "subset": "main", "index": i, "source_id": f"s{i:02d}", "record_sha256": "0" * 64,
         "stratum": "all", "question": "q"}
        for i in range(N)
    ]  # fmt: skip
    return IndexMap.model_validate({"datasets": [dataset], "entries": rows})


def test_the_in_run_stop_crosses_at_the_eprocess_share_of_alpha(tmp_path: Path) -> None:
    cfg = RunConfig.model_validate(
        config_data(
            benchmarks=[entry(BENCH, subset="main")],
            generation={
                "concurrency": 1,
                "sequential": {"alpha": 0.05, "sequential_share": 0.5, "batch_units": 1},
            },
            variants=[{"name": "test"}, {"name": "control"}],
            gates={"non_inferiority_margin_pts": {BENCH: 20.0}},
        )
    )
    imap = _index_map()
    order = in_run_order(SEED, BENCH, ((e.subset, e.index, e.source_id) for e in imap.entries))
    d = [0.0] * N  # both arms right on every unit
    at_share = sequential_decision(d, 20.0, 0.025, planned_n=N)
    at_full = sequential_decision(d, 20.0, 0.05, planned_n=N)
    assert at_share.verdict == at_full.verdict == "non-inferior" and at_full.units_used < at_share.units_used

    def arm(variant: str) -> SequentialStopper:
        side = SequentialArm(tmp_path / "sequential", variant, "test", "control", ("test", "control"), False)
        return SequentialStopper(side, cfg, SEED, imap)

    control = arm("control")
    control.begin(BENCH)
    for subset, row in order:
        control.observe(BENCH, Sample(benchmark=BENCH, subset=subset, index=row, ok=True, correct=1.0))
    control.finish(BENCH)
    control.arm.end()
    test, worker, done = arm("test"), _Worker(), 0
    test.begin(BENCH)
    while True:
        test.poll(worker)
        if BENCH in worker.halted or done == N:
            break
        for subset, row in order[done : worker.released[BENCH]]:
            test.observe(BENCH, Sample(benchmark=BENCH, subset=subset, index=row, ok=True, correct=1.0))
        done = worker.released[BENCH]
    test.finish(BENCH)
    (stop,) = test.stops().benchmarks
    assert (stop.stop_unit, stop.verdict) == (at_share.units_used, "non-inferior")
