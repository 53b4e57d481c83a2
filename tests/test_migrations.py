"""Every bump of an artifact's ``schema_version`` has a migration step; older files are lifted in memory,
never rewritten; newer files are refused with one line naming the file and both versions."""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import pytest
from pydantic import BaseModel

import evalpipe.artifacts.schema
from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.migrations import STEPS, TABLE, upgrade
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.errors import ArtifactError, ExitCode

#: packages whose models are files a stage writes (every versioned model is in artifacts/schema, the speed
#: stage's too; its barrier file stays beside its code)
MODEL_MODULES = [
    *(
        f"evalpipe.artifacts.schema.{m.name}"
        for m in pkgutil.iter_modules(evalpipe.artifacts.schema.__path__)
    ),
    "evalpipe.speed.barrier",
]


def versioned_models() -> dict[str, int]:
    """Class name -> current ``schema_version`` of every versioned artifact model."""
    out: dict[str, int] = {}
    for name in MODEL_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if not (isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == name):
                continue
            field = value.model_fields.get("schema_version")
            if field is None or not isinstance(field.default, int):
                continue
            assert out.get(value.__name__, field.default) == field.default, (
                f"two models named {value.__name__}"
            )
            out[value.__name__] = field.default
    return out


def test_every_bump_has_one_step() -> None:
    models = versioned_models()
    assert {"CompareResult", "RunRecord", "Summary", "Manifest"} <= set(models)
    missing = [
        f"{name} {v} -> {v + 1}"
        for name, current in models.items()
        for v in range(1, current)
        if (name, v) not in TABLE
    ]
    assert not missing, f"schema_version bumped without a step in evalpipe/artifacts/migrations.py: {missing}"
    stray = [f"{s.model} {s.from_version}" for s in STEPS if s.from_version >= models.get(s.model, 0)]
    assert not stray, f"steps for no model or past its current version: {stray}"
    assert len(TABLE) == len(STEPS), "two steps from the same version"


def run_record(version: int) -> dict[str, object]:
    return {
        "schema_version": version,
        "run_id": "r",
        "config_name": "c",
        "config_path": "/c.yaml",
        "config_sha256": "0" * 64,
        "created_at": "2026-12-01T00:00:00+00:00",
        "evalpipe_version": "0.1.0",
        "dataset_locations": {},
    }


def test_older_file_is_lifted_in_memory_and_left_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_record(1)), encoding="utf-8")
    before = path.read_bytes()
    record = read_model(path, RunRecord)
    assert record.schema_version == 2 and record.no_speed is False
    assert path.read_bytes() == before


def test_newer_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_record(3)), encoding="utf-8")
    with pytest.raises(ArtifactError) as caught:
        read_model(path, RunRecord)
    message = caught.value.message
    assert "\n" not in message and str(path) in message
    assert "schema_version 3 is newer than this evalpipe understands (2)" in message
    assert caught.value.exit_code == ExitCode.USAGE  # as before migrations: exit 2, one line


def test_newer_row_of_a_log_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "outcomes.jsonl"
    path.write_text(json.dumps({"schema_version": 2}) + "\n", encoding="utf-8")
    with pytest.raises(ArtifactError, match=r"outcomes.jsonl:1: schema_version 2 is newer"):
        read_jsonl(path, OutcomeRow)


def test_a_gap_in_the_steps_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="no migration from version 1 to 2"):
        upgrade(tmp_path / "x.json", {"schema_version": 1}, "NoSuchModel", 2)


def test_upgrade_does_not_mutate_its_input(tmp_path: Path) -> None:
    raw = {"schema_version": 1, "benchmarks": []}
    out = upgrade(tmp_path / "compare.json", raw, "CompareResult", 4)
    assert out["schema_version"] == 4 and raw["schema_version"] == 1


def test_summary_v2_speed_seed_workload_is_read_as_lead_workload(tmp_path: Path) -> None:
    """Summary v3 renamed ``speed.seed_workload`` ('seed' meant the random seed everywhere else): a v2 file's
    value moves to ``lead_workload``; a summary without a speed part is unchanged but for its version."""
    raw = {
        "schema_version": 2,
        "run_id": "r",
        "speed": {"variant": "a", "seed_workload": "in128", "rows": []},
    }
    lifted = upgrade(tmp_path / "summary.json", raw, "Summary", 3)
    assert (
        lifted["speed"] == {"variant": "a", "lead_workload": "in128", "rows": []}
        and lifted["schema_version"] == 3
    )
    assert raw["speed"]["seed_workload"] == "in128"  # the parsed input is not mutated
    assert upgrade(tmp_path / "s.json", {"schema_version": 2, "speed": None}, "Summary", 3) == {
        "schema_version": 3,
        "speed": None,
    }
