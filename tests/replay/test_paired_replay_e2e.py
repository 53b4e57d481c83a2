"""End to end without GPUs: paired variants on the answer-key server, publish, replay, reproduce.

A small slice of the demo (GSM8K + C-Eval, with the truncation and HTTP-500 faults) keeps it fast: the
session's ``paired_demo`` run, shared with the A/A and speed tests.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from helpers.paired_demo import PairedDemo
from scipy.stats import binomtest

from evalpipe.artifacts import read_jsonl
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.cli.main import main
from evalpipe.selftest.controls import fault_targets


def _cli(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.fixture(scope="module")
def paired(paired_demo: PairedDemo) -> PairedDemo:
    """The session's paired demo run (``helpers/paired_demo.py``): faults (truncate + HTTP 500 once), clean and
    clean_again on one manifest; read-only (the bundle is published into its own directory)."""
    return paired_demo


def test_variants_share_the_manifest_and_compare_exactly(paired) -> None:
    root, results = paired.rundir, paired.results
    compares = [c.compare_json for c in paired.comparisons]
    assert set(results) == {"faults", "clean", "clean_again"}
    manifests = {(root.root / v / "manifest.json").read_bytes() for v in results}
    assert len(manifests) == 1 and manifests == {(root.root / "manifest.json").read_bytes()}
    for r in results.values():
        assert r.summary is not None and r.summary.server.verified
    cmp = json.loads(compares[0].read_text())
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    trunc_bench, trunc_id = fault_targets()["truncate"]
    gsm = by["gsm8k"]
    assert (gsm["a_only"], gsm["b_only"]) == (0, 1)
    assert [f["source_id"] for f in gsm["flips"]] == [trunc_id] and trunc_bench == "gsm8k"
    assert gsm["flips"][0]["failure_a"] == "budget_exhausted" and gsm["flips"][0]["failure_b"] == "ok"
    assert gsm["mcnemar_p"] == pytest.approx(binomtest(0, 1, 0.5).pvalue)
    assert (by["ceval"]["a_only"], by["ceval"]["b_only"]) == (0, 0)
    assert (
        len(gsm["flips"]) == 1
        and "McNemar p = 1, 1 flip\n" in compares[0].with_name("compare.md").read_text()
    )


@pytest.fixture(scope="module")
def bundle(paired, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = paired.rundir
    dest = tmp_path_factory.mktemp("bundle") / "signoff"
    assert _cli(["publish", str(root.root / "faults"), str(dest)]) == 0
    return dest


def test_publish_then_replay_in_a_clean_directory_is_identical(bundle: Path, tmp_path: Path) -> None:
    index = json.loads((bundle / "bundle.json").read_text())
    assert {f["path"] for f in index["files"]} >= {"summary.json", "manifest.json", "responses.jsonl.gz"}
    assert index["total_bytes"] < 1_000_000
    clean = tmp_path / "elsewhere" / "bundle"
    shutil.copytree(bundle, clean)
    assert _cli(["replay", str(clean), "--out", str(tmp_path / "replay")]) == 0
    replayed = list(read_jsonl(tmp_path / "replay" / "outcomes.jsonl", OutcomeRow))
    original = list(read_jsonl(bundle / "outcomes.jsonl", OutcomeRow))
    assert [(r.source_id, r.score) for r in replayed] == [(r.source_id, r.score) for r in original]


def _tamper_response(bundle: Path, source_id: str) -> None:
    """Change the boxed answer of the response the evaluation used for ``source_id``."""
    used = next(
        r.response_id for r in read_jsonl(bundle / "outcomes.jsonl", OutcomeRow) if r.source_id == source_id
    )
    path = bundle / "responses.jsonl.gz"
    members = gzip.decompress(path.read_bytes()).decode().splitlines()
    out = b""
    for line in members:
        rec = json.loads(line)
        attempt = rec["attempt_id"]
        body = json.loads(rec["body"]) if rec.get("body") else None
        if body and body.get("id") == used:
            text = body["choices"][0]["message"]["content"]
            body["choices"][0]["message"]["content"] = re.sub(r"\\boxed\{(-?\d+)\}", r"\\boxed{999999}", text)
            assert body["choices"][0]["message"]["content"] != text
            rec["body"] = json.dumps(body)
        out += gzip.compress((json.dumps(rec) + "\n").encode())
        assert attempt
    path.write_bytes(out)


def test_tampered_response_is_reported_for_the_exact_sample(bundle: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "bundle"
    shutil.copytree(bundle, copy)
    attempts = list(read_jsonl(copy / "requests.jsonl", RequestAttempt))
    assert attempts
    victim = next(
        r.source_id
        for r in read_jsonl(copy / "outcomes.jsonl", OutcomeRow)
        if r.benchmark == "gsm8k" and r.failure_class == "ok"
    )
    _tamper_response(copy, victim)
    assert _cli(["replay", str(copy), "--out", str(tmp_path / "replay")]) == 1
    out = capsys.readouterr().out
    assert f"gsm8k {victim}: score 1.0 → 0.0" in out
    assert "responses.jsonl.gz: content differs from bundle.json" in out
    # only that sample differs
    assert len([line for line in out.splitlines() if line.strip().startswith(("gsm8k ", "ceval "))]) == 1


def test_reproduce_reports_a_tampered_dataset_record(bundle: Path, tmp_path: Path, capsys) -> None:
    data = tmp_path / "data"
    shutil.copytree(bundled_data_dir(), data)
    manifest = json.loads((bundle / "manifest.json").read_text())
    victim = next(e for e in manifest["entries"] if e["benchmark"] == "ceval")
    subject, rid = victim["source_id"].split("/")
    csv_path = data / "ceval" / "val" / f"{subject}_val.csv"
    with csv_path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    for row in rows[1:]:
        if row[header.index("id")] == rid:  # change the gold answer of one sampled question
            row[header.index("answer")] = "B" if row[header.index("answer")] != "B" else "C"
    csv_path.chmod(0o644)
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    code = _cli(["reproduce", str(bundle), "--dataset-root", str(data), "--out", str(tmp_path / "replay")])
    out = capsys.readouterr().out
    assert code == 1
    assert f"ceval {victim['source_id']}: record_sha256" in out
    assert "NOT REPRODUCED" in out


def test_reproduce_untouched_bundle(bundle: Path, tmp_path: Path, capsys) -> None:
    code = _cli(
        ["reproduce", str(bundle), "--dataset-root", str(bundled_data_dir()), "--out", str(tmp_path / "r")]
    )
    assert code == 0, capsys.readouterr().out
    assert "REPRODUCED" in capsys.readouterr().out
