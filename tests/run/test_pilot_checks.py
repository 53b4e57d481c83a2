"""``pilot.json`` is checked before a resume trusts it (``run.pilot.checked_decision``): against the config, the
manifest, its own counts and the arms' copies — each disagreement refused in one line naming the file and the
field, nothing rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.config import config_data, entry

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry
from evalpipe.artifacts.schema.pilot import PilotBlock, PilotDecision
from evalpipe.config.models import RunConfig
from evalpipe.errors import ArtifactError
from evalpipe.run.pilot import checked_decision
from evalpipe.stats.pilot_rule import chance_discordance

ARMS = ("test", "control", "again")
UNITS, PILOT, ATTEMPTS = 10, 4, 3


def _cfg() -> RunConfig:
    return RunConfig.model_validate(
        config_data(
            benchmarks=[entry("gsm8k", subset="main", total=UNITS)],
            generation={
                "sequential": {"sequential_share": 1.0, "pilot": {"share": 0.4, "attempts": ATTEMPTS}}
            },
            variants=[{"name": "test"}, {"name": "control"}, {"name": "again", "repeat_of": "control"}],
            gates={"non_inferiority_margin_pts": {"gsm8k": 10.0}},
            design={"gsm8k": {"accuracy": 0.8, "discordance": 0.1, "basis": "test"}},
        )
    )


def _manifest() -> Manifest:
    entries = [
        ManifestEntry(
            benchmark="gsm8k",
            subset="main",
            stratum="all",
            source_id=f"s{i}",
            record_sha256="0" * 64,
            rank_key=f"{i:04d}",
            stratum_population=UNITS,
            stratum_selected=UNITS,
            weight=1.0,
        )
        for i in range(UNITS)
    ]
    return Manifest.model_construct(seed=1, entries=entries)


def _decision(**changes: object) -> PilotDecision:
    block = PilotBlock(
        block="gsm8k", members=["gsm8k"], units=UNITS, pilot_units=PILOT, judged=PILOT, discordant=1,
        accuracy=0.8, entries=[f"gsm8k/s{i}" for i in range(PILOT)], agreement_entries=["gsm8k/s0"], paired=1,
        within=1.0, within_squares=1.0,
    )  # fmt: skip
    expected = PILOT * chance_discordance(0.8)
    decision = PilotDecision(
        test="test", control="control", share=0.4, threshold=0.7, attempts_if_above=ATTEMPTS, agreement=0.25,
        blocks=[block], discordant=1, expected=expected, ratio=1 / expected, attempts=2, statement="s",
        decided_at="2026-12-07T12:00:00+00:00",
    )  # fmt: skip
    return decision.model_copy(update=changes)


def _run(
    tmp_path: Path, root: PilotDecision | None, copies: dict[str, PilotDecision]
) -> tuple[RunDir, list[Path]]:
    rd = RunDir(tmp_path / "run")
    dirs = [rd.root / arm for arm in ARMS]
    for d in dirs:
        d.mkdir(parents=True)
    if root is not None:
        write_model(rd.pilot, root)
    for arm, copy in copies.items():
        write_model(RunDir(rd.root / arm).pilot, copy)
    return rd, dirs


def test_a_decision_that_agrees_with_everything_is_trusted(tmp_path: Path) -> None:
    rd, dirs = _run(tmp_path, _decision(), {arm: _decision() for arm in ARMS})
    assert checked_decision(_cfg(), rd, _manifest(), dirs) == _decision()
    rd2, dirs2 = _run(tmp_path / "none", None, {})
    assert checked_decision(_cfg(), rd2, _manifest(), dirs2) is None  # no pilot decided yet


BLOCK = _decision().blocks[0]


@pytest.mark.parametrize(
    ("decision", "field"),
    [
        (_decision(attempts=ATTEMPTS + 1), "field attempts"),  # beyond what the task holds
        (_decision(attempts=1), "field attempts"),  # not what the rule gives its counts (2)
        (_decision(attempts_if_above=2), "field attempts_if_above"),
        (_decision(control="again"), "field control"),
        (_decision(discordant=2), "field discordant"),
        (_decision(expected=0.5), "field expected"),
        (
            _decision(blocks=[BLOCK.model_copy(update={"entries": ["gsm8k/elsewhere"]})]),
            "field blocks[0].entries",
        ),
        (_decision(blocks=[BLOCK.model_copy(update={"pilot_units": 9})]), "field blocks[0].pilot_units"),
        (_decision(blocks=[BLOCK.model_copy(update={"accuracy": 0.5})]), "field blocks[0].accuracy"),
    ],
)
def test_a_decision_the_config_manifest_or_its_counts_contradict_is_refused(
    tmp_path: Path, decision: PilotDecision, field: str
) -> None:
    rd, dirs = _run(tmp_path, decision, {})
    before = rd.pilot.read_bytes()
    with pytest.raises(ArtifactError) as refused:
        checked_decision(_cfg(), rd, _manifest(), dirs)
    assert str(refused.value).startswith(f"{rd.pilot}: {field}")
    assert rd.pilot.read_bytes() == before


def test_an_arms_copy_that_differs_from_the_root_is_refused_naming_it(tmp_path: Path) -> None:
    rd, dirs = _run(tmp_path, _decision(), {"test": _decision(), "control": _decision(discordant=3)})
    with pytest.raises(ArtifactError) as refused:
        checked_decision(_cfg(), rd, _manifest(), dirs)
    assert str(refused.value).startswith(f"{RunDir(rd.root / 'control').pilot}: field discordant differs")


def test_a_root_decision_removed_while_the_arms_hold_copies_is_refused(tmp_path: Path) -> None:
    rd, dirs = _run(tmp_path, None, {"control": _decision()})
    with pytest.raises(ArtifactError) as refused:
        checked_decision(_cfg(), rd, _manifest(), dirs)
    assert str(refused.value).startswith(f"{rd.pilot}: missing, but {RunDir(rd.root / 'control').pilot}")
