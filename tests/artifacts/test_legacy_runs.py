"""Runs written by earlier evalpipe commits still open with today's: audit, compare, explore, replay, reproduce.

``tests/fixtures/old_runs/<date>-<commit>/run.tar.gz`` holds a paired run (two arms, ``faults`` and ``clean``,
and the root's compare.json) written by that commit, and the oldest one also a ``publish`` bundle of its
``faults`` arm, and one an extension of another (``run --extend``); ``tests/fixtures/old_runs/README.md``
says how they were made.  Between them they hold compare.json v1 to v4, run.json v1 and v2, summary.json v1
to v3, extension.json v1.  Each test unpacks a fresh copy (the
commands write beside the files they read) and checks that the old versions were read — not rewritten —
and give the numbers the old commit wrote.
"""

from __future__ import annotations

import hashlib
import json
import re
import tarfile
from pathlib import Path
from typing import Any, cast

import pytest
from fixtures_rundir import run_cli

from evalpipe.artifacts import read_jsonl, read_model, recorded_run
from evalpipe.artifacts.schema.bundle import BundleIndex
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.artifacts.schema.evalscope import EvalscopeTasks, IndexMap, PromptHashRecord
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.run import ExtensionRecord, RunRecord
from evalpipe.artifacts.schema.server import LaunchRecord, PreflightReport, ServerVerification
from evalpipe.artifacts.schema.sources import SourcesRecord
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.artifacts.schema.timings import StageTimings
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.config.models import RunConfig
from evalpipe.plan.mde import measured, token_cost
from evalpipe.report.compare_markdown import compare_markdown

OLD_RUNS = Path(__file__).parents[1] / "fixtures" / "old_runs"
#: fixture directory -> the versions its files were written at (compare.json, run.json, summary.json)
FIXTURES = {
    "2026-12-03-6f89fa1": {"compare": 1, "run": 1, "summary": 1},
    "2026-12-04-2d2c482": {"compare": 2, "run": 1, "summary": 1},
    "2026-12-04-2d2c482-extended": {"compare": 2, "run": 1, "summary": 1, "extension": 1},
    "2026-12-05-1dccca2": {"compare": 3, "run": 2, "summary": 2},
    "2026-12-05-0e06fc0": {"compare": 4, "run": 2, "summary": 3},
}
WHOLE_FILES = {
    "bundle.json": BundleIndex,
    "compare.json": CompareResult,
    "context_fit.json": ContextFit,
    "evalscope_tasks.json": EvalscopeTasks,
    "extension.json": ExtensionRecord,
    "index_map.json": IndexMap,
    "launch.json": LaunchRecord,
    "manifest.json": Manifest,
    "preflight.json": PreflightReport,
    "provenance.json": Provenance,
    "run.json": RunRecord,
    "sources.json": SourcesRecord,
    "summary.json": Summary,
    "timings.json": StageTimings,
    "verification.json": ServerVerification,
}
LOGS = {
    "outcomes.jsonl": OutcomeRow,
    "requests.jsonl": RequestAttempt,
    "prompt_hashes.jsonl": PromptHashRecord,
}
#: compare.json numbers that must not move between the old writer and today's compare
PAIRED_NUMBERS = (
    "n_pairs",
    "difference",
    "diff_ci_low",
    "diff_ci_high",
    "both_correct",
    "a_only",
    "b_only",
    "both_wrong",
    "mcnemar_p",
)


def gsm8k_samples(name: str) -> int:
    """GSM8K's samples in a fixture: the extended run grew them from 5 to 8."""
    return 8 if "extension" in FIXTURES[name] else 5


def unpack(name: str, dest: Path) -> Path:
    with tarfile.open(OLD_RUNS / name / "run.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return dest


def raw(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("name", FIXTURES)
def test_every_versioned_file_reads_at_its_old_version(name: str, tmp_path: Path) -> None:
    root = unpack(name, tmp_path)
    read = 0
    for path in sorted(root.rglob("*")):
        if "evalscope" in path.relative_to(root).parts[:-1]:
            continue  # EvalScope's own outputs
        if path.name in WHOLE_FILES:
            before = path.read_bytes()
            model = read_model(path, WHOLE_FILES[path.name])
            assert model.schema_version == WHOLE_FILES[path.name].model_fields["schema_version"].default
            assert path.read_bytes() == before, f"{path} rewritten on read"
            read += 1
        elif path.name in LOGS:
            assert read_jsonl(path, LOGS[path.name]), path
            read += 1
    assert read >= 30
    versions = FIXTURES[name]
    assert raw(root / "run" / "compare.json")["schema_version"] == versions["compare"]
    assert raw(root / "run" / "faults" / "run.json")["schema_version"] == versions["run"]
    assert raw(root / "run" / "faults" / "summary.json")["schema_version"] == versions["summary"]
    if "extension" in versions:
        extension = root / "run" / "faults" / "extension.json"
        assert raw(extension)["schema_version"] == versions["extension"]
        assert read_model(extension, ExtensionRecord).prior_generations == []  # v1: read as one generation


@pytest.mark.parametrize("name", FIXTURES)
def test_audit_recomputes_the_old_summary(name: str, tmp_path: Path) -> None:
    run = unpack(name, tmp_path) / "run" / "faults"
    old = raw(run / "summary.json")
    assert run_cli(["audit", str(run)]) == 0
    new = raw(run / "summary.json")
    assert new["schema_version"] == Summary.model_fields["schema_version"].default
    assert new["verdict"] == old["verdict"] == "pass"

    def scores(summary: dict[str, Any]) -> list[tuple[str, int, int]]:
        return [(b["benchmark"], b["correct"], b["scored"]) for b in summary["benchmarks"]]

    assert scores(new) == scores(old)
    n = gsm8k_samples(name)
    assert scores(old) == [("ceval", 3, 3), ("gsm8k", n - 1, n)]
    assert (run / "explorer.html").is_file()


@pytest.mark.parametrize("name", FIXTURES)
def test_compare_gives_the_old_numbers(name: str, tmp_path: Path) -> None:
    root = unpack(name, tmp_path) / "run"
    old = raw(root / "compare.json")
    assert old["schema_version"] == FIXTURES[name]["compare"]
    out = tmp_path / "again"
    assert run_cli(["compare", str(root / "faults"), str(root / "clean"), "--out", str(out)]) == 0
    new = raw(out / "compare.json")
    for before, after in zip(
        [*old["benchmarks"], old["overall"]], [*new["benchmarks"], new["overall"]], strict=True
    ):
        assert after["benchmark"] == before["benchmark"]
        assert {k: after[k] for k in PAIRED_NUMBERS} == {k: before[k] for k in PAIRED_NUMBERS}
        assert after["a"] == before["a"] and after["b"] == before["b"]
    gsm8k = next(b for b in old["benchmarks"] if b["benchmark"] == "gsm8k")
    assert (gsm8k["a_only"], gsm8k["b_only"]) == (0, 1)  # the truncated answer is the one flip


def _reworded(old: str) -> str:
    """The old commit's compare.md and paired-control lines as today's renderers word them: every interval not
    the verdict's is labelled descriptive, and the verdict's column is named for the interval it prints."""
    for before, after in (
        (
            "95 % paired-bootstrap interval; exact McNemar test on discordant pairs.",
            "95 % paired-bootstrap interval (descriptive); exact McNemar test on discordant pairs; a verdict is "
            "printed with the interval of the test that decided it.",
        ),
        ("| 95 % CI | McNemar p |", "| Bootstrap 95 % CI (descriptive) | McNemar p |"),
        ("| Non-inferiority |", "| Non-inferiority (the deciding interval, pts) |"),
        ("Bonett–Price 95 % interval [", "Bonett–Price 95 % interval (descriptive) ["),
    ):
        old = old.replace(before, after)
    return re.sub(r" pts \[([^\]]+)\], McNemar", r" pts (bootstrap 95 % [\1], descriptive), McNemar", old)


def test_the_v4_sentences_are_written_again_from_the_numbers(tmp_path: Path) -> None:
    """compare.json v4 stored its sentences; v5 stores only the numbers they were made from.  Read through the
    migration, today's renderers give the old commit's compare.md and the audit's paired-control and power
    lines byte for byte."""
    root = unpack("2026-12-05-0e06fc0", tmp_path) / "run"
    old_md = (root / "compare.md").read_text(encoding="utf-8")
    # the old page linked its explorer.html, which the fixture does not keep: the same page without the link
    linked = re.compile(r"\nRead the flips side by side, every sample of both runs: [^\n]*\n")
    assert len(linked.findall(old_md)) == 1
    result = read_model(root / "compare.json", CompareResult)
    assert compare_markdown(result) == _reworded(linked.sub("", old_md))

    faults = root / "faults"
    old = raw(faults / "summary.json")
    assert run_cli(["audit", str(faults)]) == 0
    new = raw(faults / "summary.json")
    assert old["paired_control"].startswith("answer-key + faults vs answer-key clean (ceval): +0.0 pts")
    assert new["paired_control"] == _reworded(old["paired_control"])

    def power(summary: dict[str, Any]) -> list[str]:
        return [x for x in summary["limitations"] if x.startswith("Power (")]

    assert len(power(old)) == 3 and power(new) == power(old)  # ceval, gsm8k and all


@pytest.mark.parametrize("name", FIXTURES)
def test_explore_reads_the_old_compare(name: str, tmp_path: Path) -> None:
    root = unpack(name, tmp_path) / "run"
    before = (root / "compare.json").read_bytes()
    assert run_cli(["explore", str(root)]) == 0
    page = (root / "explorer.html").read_text(encoding="utf-8")
    assert "answer-key + faults" in page and "answer-key clean" in page
    assert (root / "compare.json").read_bytes() == before
    assert run_cli(["explore", str(root / "clean")]) == 0


@pytest.mark.parametrize("name", FIXTURES)
def test_plan_measures_the_old_pair_where_it_now_lies(name: str, tmp_path: Path) -> None:
    """``plan --from`` reads the arms beside the unpacked compare.json, not at the paths it recorded (gone)."""
    root = unpack(name, tmp_path) / "run"
    recorded = Path(raw(root / "compare.json")["run_b"])
    assert not recorded.is_relative_to(tmp_path)
    manifest = read_model(root / "manifest.json", Manifest)
    noise, accuracy, _ = measured(root, manifest, "gsm8k")
    assert noise is not None and noise.source == "ab"
    assert noise.between == pytest.approx(1 / gsm8k_samples(name))  # the truncated answer: one flip
    assert accuracy == 1.0
    cost = token_cost(cast(RunConfig, _Budget()), root, manifest, "gsm8k")
    assert cost.measured and cost.output_per_attempt < 2048  # the control's tokens, not the budget's bound


class _Budget:
    """The one thing ``token_cost`` asks of the config: the benchmark's output budget."""

    def max_tokens_for(self, name: str) -> int:
        return 2048


def test_a_run_naming_the_former_rules_folder_still_opens(tmp_path: Path) -> None:
    """A run whose config copy names ``../sampling-rules/`` (the samplers' folder's former name) opens as before:
    its manifest holds the rules it drew with, so audit, compare, explore, replay and ``verify-sample`` never look
    the folder up; only a new run from such a config is refused, naming the file under ``samplers/``."""
    root = unpack("2026-12-05-0e06fc0", tmp_path) / "run"
    for arm in ("faults", "clean"):
        copy = root / arm / "config.yaml"
        text = copy.read_text(encoding="utf-8")
        assert "../samplers/demo/" in text
        copy.write_text(text.replace("../samplers/", "../sampling-rules/"), encoding="utf-8")
        record = raw(root / arm / "run.json")  # as a run started from that config records it
        record["config_sha256"] = hashlib.sha256(copy.read_bytes()).hexdigest()
        (root / arm / "run.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    faults = root / "faults"
    assert run_cli(["audit", str(faults)]) == 0
    assert raw(faults / "summary.json")["verdict"] == "pass"
    assert run_cli(["compare", str(faults), str(root / "clean"), "--out", str(tmp_path / "again")]) == 0
    assert run_cli(["explore", str(root), "--out", str(tmp_path / "explorer.html")]) == 0
    assert run_cli(["verify-sample", str(faults), "--dataset-root", str(bundled_data_dir())]) == 0
    out = tmp_path / "replayed"
    assert run_cli(["replay", str(faults), "--dataset-root", str(bundled_data_dir()), "--out", str(out)]) == 0


def test_replay_of_an_old_run(tmp_path: Path) -> None:
    """The 2026-12-05 run's ``faults`` arm (run.json and summary.json v2) replayed from its response log."""
    run = unpack("2026-12-05-1dccca2", tmp_path) / "run" / "faults"
    out = tmp_path / "replayed"
    code = run_cli(["replay", str(run), "--dataset-root", str(bundled_data_dir()), "--out", str(out)])
    assert code == 0
    old = [(r.source_id, r.score) for r in read_jsonl(run / "outcomes.jsonl", OutcomeRow)]
    assert [(r.source_id, r.score) for r in read_jsonl(out / "outcomes.jsonl", OutcomeRow)] == old


def test_reproduce_an_old_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The oldest bundle (summary.json and run.json v1) re-derives its sample and replays identically."""
    bundle = unpack("2026-12-03-6f89fa1", tmp_path) / "bundle"
    assert raw(bundle / "summary.json")["schema_version"] == 1
    out = tmp_path / "reproduced"
    code = run_cli(["reproduce", str(bundle), "--dataset-root", str(bundled_data_dir()), "--out", str(out)])
    assert code == 0
    assert "REPRODUCED" in capsys.readouterr().out


def test_recorded_run_prefers_the_arm_beside_the_file(tmp_path: Path) -> None:
    here, there = tmp_path / "root", tmp_path / "elsewhere"
    for arm in (here / "clean", there / "clean"):
        arm.mkdir(parents=True)
        (arm / "manifest.json").write_text("{}", encoding="utf-8")
    sha = hashlib.sha256(b"{}").hexdigest()
    assert recorded_run(str(there / "clean"), here, sha) == here / "clean"
    assert recorded_run(str(there / "clean"), tmp_path / "empty", sha) == there / "clean"
    assert (
        recorded_run(str(there / "clean"), here, "0" * 64) == there / "clean"
    )  # neither matches: as recorded
    (here / "clean" / "manifest.json").write_text("{ }", encoding="utf-8")
    assert recorded_run(str(there / "clean"), here, sha) == there / "clean"  # beside, but another manifest
