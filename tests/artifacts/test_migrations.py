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
from evalpipe.artifacts.schema.compare import CompareResult
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
    assert record.schema_version == 3 and record.no_speed is False
    assert record.benchmark_versions == {}  # unknown: the run predates benchmark versions
    assert path.read_bytes() == before


def test_newer_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run_record(4)), encoding="utf-8")
    with pytest.raises(ArtifactError) as caught:
        read_model(path, RunRecord)
    message = caught.value.message
    assert "\n" not in message and str(path) in message
    assert "schema_version 4 is newer than this evalpipe understands (3)" in message
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


def _v4_block(**fields: object) -> dict[str, object]:
    """A compare.json v4 block as its writer left it: the numbers and the sentences made from them."""
    score = {"correct": 4, "scored": 5, "score": 0.8, "ci_low": 0.4, "ci_high": 0.96}
    return {
        "benchmark": "gsm8k", "n_pairs": 5, "a": score, "b": score, "difference": -0.2, "diff_ci_low": -0.6,
        "diff_ci_high": 0.0, "both_correct": 4, "a_only": 0, "b_only": 1, "both_wrong": 0, "mcnemar_p": 1.0,
        "flips": [], "line": "A vs B (gsm8k): -20.0 pts [-60.0, +0.0], McNemar p = 1, 0 flips",
        **fields,
    }  # fmt: skip


def test_compare_v4_keeps_the_numbers_its_sentences_were_made_from(tmp_path: Path) -> None:
    """compare.json v5 dropped the sentences: a v4 file's sentences go, what only they said (the attempts, the
    MDE's noise model, the sequence seed) is read back into the typed fields, and the file then validates."""
    sequential = {
        "margin_pts": 5.0, "alpha": 0.05, "bets": "planned", "planned_n": 5, "cap": 8,
        "order": 'sha256(f"42:sequence:{benchmark}:{source_id}") ascending (evalpipe.hashing.sequence_key)',
        "units_available": 5, "units_used": 5, "verdict": "inconclusive", "stop_reason": "units exhausted",
        "e_value_non_inferior": 1.2, "e_value_inferior": 0.8, "cs_low": -0.5, "cs_high": 0.3,
        "units_unsent_share": 0.0, "output_tokens_unsent_share": None, "sentence": "sequential: inconclusive …",
    }  # fmt: skip
    bucket = _v4_block(
        length="short",
        line="A vs B (gsm8k short): -20.0 pts [-60.0, +0.0], McNemar p = 1, 0 flips (first of 3 attempts)",
    )
    block = _v4_block(
        line="A vs B (gsm8k): -20.0 pts [-60.0, +0.0], McNemar p = 1, 0 flips (first of 3 attempts)",
        aa_sentence="A/A: the score changed on 0 of 5 samples (0 better the first time, 0 the second)",
        noise_vs_ab={"ab_changed": 1, "aa_changed": 0, "ab_only": 1, "aa_only": 0, "p_value": 1.0,
                     "exceeds": False, "sentence": "A/B changed 1 of 5 answers, …"},
        mde_pts=None,
        mde_basis="A/A mean squared difference 0.0250 over 5 samples with repeats (within-sample variance 0.0312 "
        "per attempt, between 0.0000); normal approximation (score test), 3 attempt(s) per arm",
        mde_sentence="this sample (5 samples) cannot detect a drop of any size with 80 % power; …",
        non_inferiority={"margin_pts": 5.0, "lower_bound_pts": -60.0, "upper_bound_pts": 10.0,
                         "verdict": "inconclusive", "sentence": "inconclusive: …", "basis": "fixed"},
        sequential=sequential,
        by_length=[bucket],
        length_verdict="gsm8k: the candidate is behind at no length (short)",
    )  # fmt: skip
    raw = {
        "schema_version": 4, "run_a": "/a", "run_b": "/b", "label_a": "A", "label_b": "B",
        "manifest_sha256": "0" * 64, "bootstrap_resamples": 10, "bootstrap_seed": 1,
        "method": "paired bootstrap (percentile, 10 resamples …)", "benchmarks": [block], "overall": _v4_block(),
    }  # fmt: skip
    lifted = upgrade(tmp_path / "compare.json", raw, "CompareResult", 5)
    assert "method" not in lifted and raw["method"]  # the input is not mutated
    (got,) = lifted["benchmarks"]
    assert not {"line", "aa_sentence", "mde_sentence", "length_verdict"} & set(got)
    assert got["repeats"] == got["by_length"][0]["repeats"] == 3 and lifted["overall"]["repeats"] == 1
    assert got["mde_basis"] == {
        "noise": "A/A", "second_moment": 0.025, "within": 0.0312, "between": 0.0,
        "method": "normal approximation (score test)", "repeats": 3, "power": 0.8, "alpha": 0.05,
    }  # fmt: skip
    assert got["noise_vs_ab"]["n_samples"] == 5 and "sentence" not in got["noise_vs_ab"]
    assert "sentence" not in got["non_inferiority"]
    assert got["sequential"]["sequence_seed"] == 42
    assert not {"order", "sentence"} & set(got["sequential"])
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    read = read_model(path, CompareResult)
    assert read.schema_version == 10 and read.scoring == "summary rule" and read.benchmarks[0].mde_basis is not None


def test_compare_v5_sequential_intervals_are_kept_as_descriptive(tmp_path: Path) -> None:
    """compare.json v6 prints beside a sequential verdict the margins its e-processes have not rejected; a v5
    file's interval there was the two-sided empirical-Bernstein sequence, which can contradict the verdict
    (non-inferior within 20 with a lower bound of -38.8): kept, marked descriptive, and worded apart."""
    from evalpipe.words.compare import verdict_sentence
    from evalpipe.words.sentences import sequential_sentence

    sequential = {
        "margin_pts": 20.0, "alpha": 0.05, "bets": "planned", "planned_n": 80, "cap": 120, "sequence_seed": 7,
        "units_available": 80, "units_used": 38, "verdict": "non-inferior", "stop_reason": "crossing",
        "e_value_non_inferior": 20.4, "e_value_inferior": 0.05, "cs_low": -0.388, "cs_high": 0.388,
        "units_unsent_share": 0.5, "output_tokens_unsent_share": None,
    }  # fmt: skip
    gate = {"margin_pts": 20.0, "lower_bound_pts": -38.8, "upper_bound_pts": 38.8, "verdict": "non-inferior",
            "basis": "sequential crossing", "alpha": 0.05}  # fmt: skip
    block = _v4_block(sequential=sequential, non_inferiority=gate)
    for key in ("line",):
        block.pop(key)
    raw = {
        "schema_version": 5, "run_a": "/a", "run_b": "/b", "label_a": "A", "label_b": "B",
        "manifest_sha256": "0" * 64, "bootstrap_resamples": 10, "bootstrap_seed": 1, "benchmarks": [block],
    }  # fmt: skip
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    read = read_model(path, CompareResult)
    assert "interval" not in raw["benchmarks"][0]["sequential"]  # the input is not mutated
    (got,) = read.benchmarks
    assert got.sequential is not None and got.non_inferiority is not None
    assert got.sequential.interval == got.non_inferiority.interval == "descriptive"
    said = verdict_sentence(got.non_inferiority)
    head, _, rest = said.partition(". Descriptive")
    assert head.startswith("non-inferior within 20 pts") and "-38.8" not in head and "-38.8" in rest
    seq_head, _, seq_rest = sequential_sentence(got.sequential).partition(". Descriptive")
    assert "non-inferior" in seq_head and "-38.8" not in seq_head and "-38.8" in seq_rest


def test_compare_v4_basis_that_does_not_read_back_is_dropped(tmp_path: Path) -> None:
    """An MDE basis in no form v2-v4 wrote is not guessed at: the MDE stays, its basis is None."""
    raw = {"schema_version": 4, "benchmarks": [_v4_block(mde_pts=7.4, mde_basis="something else")]}
    (got,) = upgrade(tmp_path / "compare.json", raw, "CompareResult", 5)["benchmarks"]
    assert got["mde_pts"] == 7.4 and got["mde_basis"] is None
