"""A run with an internal pilot makes two passes of its variants in turn — the pilot, the decision, the rest — and
a resumed run whose decision exists makes only the second, resuming every arm (``run.variants._run_in_turn``).
The variants' runs are recorded, not made: what is checked is which passes happen, in which order, resuming what.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.config import config_data, entry

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.config.models import RunConfig
from evalpipe.resolve import resolve
from evalpipe.run import variants
from evalpipe.run.pipeline import RunResult
from evalpipe.run.sample import Spine
from evalpipe.run.spec import RunSpec

NAMES = ("test", "control", "again")
#: what the passes read of a decision: its statement and when it was made
DECIDED = type("Decision", (), {"statement": "decided", "decided_at": "2026-12-07T12:00:00+00:00"})()


def _cfg() -> RunConfig:
    return RunConfig.model_validate(
        config_data(
            benchmarks=[entry("gsm8k", subset="main")],
            generation={"sequential": {"sequential_share": 1.0, "pilot": {"share": 0.4}}},
            variants=[{"name": "test"}, {"name": "control"}, {"name": "again", "repeat_of": "control"}],
            gates={"non_inferiority_margin_pts": {"gsm8k": 10.0}},
            design={"gsm8k": {"accuracy": 0.8, "discordance": 0.1, "basis": "test"}},
        )
    )


class Passes:
    """The variants' runs as ``_run_in_turn`` asks for them, and the decision it asks for between them."""

    def __init__(self, root: RunDir) -> None:
        self.root = root
        self.calls: list[tuple[str, bool]] = []
        self.decided = 0

    def run(self, plan: RunSpec, progress: object = None) -> RunResult:
        name = plan.target.variant
        assert name is not None
        self.calls.append((name, plan.origin.resuming))  # type: ignore[union-attr]
        (self.root.root / name / "evalscope").mkdir(parents=True, exist_ok=True)  # as a run leaves it
        return RunResult(RunDir(self.root.root / name), None, None, None, [], False)  # type: ignore[arg-type]

    def decide(self, cfg: RunConfig, root: RunDir, manifest: object, index_map: object) -> object:
        self.decided += 1
        root.pilot.write_text("{}")
        return DECIDED


def _turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, decided: bool) -> Passes:
    root = RunDir(tmp_path / "run")
    root.root.mkdir()
    passes = Passes(root)
    monkeypatch.setattr(variants, "run", passes.run)
    monkeypatch.setattr(variants, "decide", passes.decide)
    monkeypatch.setattr(
        variants, "checked_decision", lambda cfg, rd, manifest, dirs: DECIDED if rd.pilot.is_file() else None
    )
    monkeypatch.setattr(variants, "read_model", lambda path, model: None)
    monkeypatch.setattr(variants, "share_decision", lambda rd, dirs: None)
    if decided:
        root.pilot.write_text("{}")
        for name in NAMES:
            (root.root / name / "evalscope").mkdir(parents=True)
    dirs = {name: RunDir(root.root / name) for name in NAMES}
    resolved = resolve(_cfg(), check_sampling=False)
    spine = Spine(root, Manifest.model_construct(seed=1, entries=[]), {})
    variants._run_in_turn(resolved, spine, dirs, resume=None, progress=None, finished=set())
    return passes


def test_the_pilot_pass_then_the_decision_then_every_arm_resumes_for_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _turn(tmp_path, monkeypatch, decided=False)
    # the control first in each pass; the first pass fresh, the second resuming every arm
    first = [("control", False), ("test", False), ("again", False)]
    assert passes.calls == first + [(name, True) for name, _ in first]
    assert passes.decided == 1


def test_a_resumed_run_whose_pilot_is_decided_makes_only_the_second_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    passes = _turn(tmp_path, monkeypatch, decided=True)
    assert passes.calls == [("control", True), ("test", True), ("again", True)]
    assert passes.decided == 0  # decided once: never again
