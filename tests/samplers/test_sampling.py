"""Sources + samplers on the real benchmark files in ../shared/datasets."""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from helpers.config import entry, write_config

from evalpipe.cli.main import main
from evalpipe.config.loader import load_config
from evalpipe.errors import ConfigError, DataError, FingerprintMismatch
from evalpipe.samplers import largest_remainder, sample_run, verify_sample
from evalpipe.samplers.loading import load_local
from evalpipe.samplers.run import build_manifest
from evalpipe.sources.base import BenchmarkData


@pytest.fixture(scope="module")
def glm_cfg(repo_root: Path):
    return load_config(repo_root / "configs" / "glm-fp8.yaml")


@pytest.fixture(scope="module")
def reference(glm_cfg, shared_datasets: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("ref") / "run"
    return sample_run(glm_cfg, dataset_root=shared_datasets, out=out)


@pytest.fixture(scope="module")
def original(shared_datasets: Path) -> Callable[[str], BenchmarkData]:
    """``load_local`` of a benchmark's real files, read once for the module's tests (they compare other copies
    of the same files with it and only read it)."""
    return functools.cache(lambda name: load_local(name, shared_datasets / name))


# ------------------------------------------------------------------ reference run

#: sha256 of the glm-fp8 manifest: the selection, ids, record hashes and the file's layout are the spine of
#: every recorded sign-off run, so a refactoring must leave it byte-identical.
GLM_FP8_MANIFEST_SHA256 = "e9800b864da4e99d1e62581cbf9e928b99dcca40e073399f49e0024f3216caba"


def test_reference_manifest_is_byte_identical(reference) -> None:
    assert hashlib.sha256(reference.rundir.manifest.read_bytes()).hexdigest() == GLM_FP8_MANIFEST_SHA256


def test_reference_run_has_160_entries(reference) -> None:
    m = reference.manifest
    counts = {b.benchmark: b.sample_size for b in m.benchmarks}
    assert counts == {"ifeval": 40, "ceval": 52, "gsm8k": 50, "live_code_bench": 18}
    assert len(m.entries) == 160
    assert len({(e.benchmark, e.source_id) for e in m.entries}) == 160  # without replacement


def test_ifeval_proportional_allocation_23_13_4(reference) -> None:
    block = reference.manifest.sampling_for("ifeval")
    assert [(s.stratum, s.population, s.selected) for s in block.strata] == [
        ("1", 305, 23),
        ("2", 179, 13),
        ("3", 57, 4),
    ]
    instructions = sum(int(e.stratum) for e in reference.manifest.entries_for("ifeval"))
    assert instructions == 61


def test_ceval_one_per_subject_and_live_code_bench_six_per_difficulty(reference) -> None:
    ceval = reference.manifest.entries_for("ceval")
    assert len({e.subset for e in ceval}) == 52 and all(e.subset == e.stratum for e in ceval)
    live_code_bench = reference.manifest.sampling_for("live_code_bench")
    assert [(s.stratum, s.population, s.selected) for s in live_code_bench.strata] == [
        ("easy", 84, 6),
        ("hard", 154, 6),
        ("medium", 104, 6),
    ]
    hard = next(e for e in reference.manifest.entries_for("live_code_bench") if e.stratum == "hard")
    assert hard.weight == pytest.approx(154 / 6)


def test_run_dir_files(reference) -> None:
    rd = reference.rundir
    for p in (rd.manifest, rd.sampled_ids, rd.sources, rd.run_record, rd.config_copy):
        assert p.is_file(), p
    rows = list(csv.DictReader(rd.sampled_ids.open()))
    assert len(rows) == 160
    assert list(rows[0]) == ["benchmark", "stratum", "source_id", "record_sha256"]
    assert not list(rd.root.glob(".*.tmp"))  # atomic writes leave no temp files


def test_selection_rule_rederived_independently(reference, shared_datasets: Path) -> None:
    """A reviewer's few-line re-derivation of the GSM8K selection from the raw file."""
    questions = [json.loads(line)["question"] for line in (shared_datasets / "gsm8k" / "test.jsonl").open()]
    ids = [hashlib.sha256(q.encode()).hexdigest()[:16] for q in questions]
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"42:gsm8k:{i}".encode()).hexdigest())
    assert [e.source_id for e in reference.manifest.entries_for("gsm8k")] == ranked[:50]


def test_verify_sample_cli_identical(reference, shared_datasets: Path, capsys) -> None:
    code = _run_cli(["verify-sample", str(reference.rundir.root), "--dataset-root", str(shared_datasets)])
    assert code == 0
    assert "identical: 160 entries" in capsys.readouterr().out


def test_verify_sample_names_one_sample(reference, shared_datasets: Path, capsys) -> None:
    entry = reference.manifest.entries_for("ceval")[-1]
    key = f"ceval/{entry.source_id}"
    args = ["verify-sample", str(reference.rundir.root), "--dataset-root", str(shared_datasets), "--sample"]
    assert _run_cli([*args, key]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    rank = sorted(e.rank_key for e in reference.manifest.entries_for("ceval") if e.stratum == entry.stratum)
    assert line == (
        f"sample {key}: re-derived identically (stratum {entry.stratum}, rank {rank.index(entry.rank_key) + 1} "
        f"of {entry.stratum_selected} selected from {entry.stratum_population}, record sha256 {entry.record_sha256})"
    )
    assert _run_cli([*args, "ceval/not-an-id"]) == 2
    assert "--sample ceval/not-an-id: not a sample of" in capsys.readouterr().err


# ------------------------------------------------------------------ order / format independence


def _shuffled_copy(src: Path, dst: Path, rng: random.Random) -> None:
    for path in src.rglob("*"):
        if path.is_dir():
            continue
        target = dst / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".jsonl":
            lines = [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]
            rng.shuffle(lines)
            target.write_bytes(b"\n".join(lines) + b"\n")
        elif path.suffix == ".csv":
            with path.open(newline="", encoding="utf-8") as fh:
                rows = list(csv.reader(fh))
            header, body = rows[0], rows[1:]
            rng.shuffle(body)
            with target.open("w", newline="", encoding="utf-8") as fh:
                csv.writer(fh).writerows([header, *body])
        else:
            shutil.copyfile(path, target)


def test_shuffled_rows_give_byte_identical_manifest(
    reference, glm_cfg, shared_datasets: Path, tmp_path: Path
) -> None:
    shuffled = tmp_path / "shuffled"
    _shuffled_copy(shared_datasets, shuffled, random.Random(7))
    result = sample_run(glm_cfg, dataset_root=shuffled, out=tmp_path / "run")
    assert result.rundir.manifest.read_bytes() == reference.rundir.manifest.read_bytes()
    assert result.rundir.sampled_ids.read_bytes() == reference.rundir.sampled_ids.read_bytes()


def _hashes(data) -> dict[str, str]:
    return {r.source_id: r.record_sha256 for r in data.eval.records}


def test_lf_normalized_ceval_hashes_identical(original, shared_datasets: Path, tmp_path: Path) -> None:
    lf = tmp_path / "ceval"
    for split in ("val", "dev"):
        (lf / split).mkdir(parents=True)
        for p in (shared_datasets / "ceval" / split).glob("*.csv"):
            (lf / split / p.name).write_bytes(p.read_bytes().replace(b"\r\n", b"\n"))
    ceval = original("ceval")
    normalized = load_local("ceval", lf)
    assert any("\r\n" in r.raw["question"] for r in ceval.eval.records)  # the hazard is real
    assert _hashes(ceval) == _hashes(normalized)
    assert ceval.eval.fingerprint == normalized.eval.fingerprint
    assert ceval.fewshot.fingerprint == normalized.fewshot.fingerprint


def test_parquet_copy_with_integer_ids_and_null_kwargs(original, shared_datasets: Path, tmp_path: Path) -> None:
    # C-Eval: integer ids and an explicit empty explanation column (as the HF loader has it).
    pq = tmp_path / "ceval"
    for split in ("val", "dev"):
        (pq / split).mkdir(parents=True)
        for p in (shared_datasets / "ceval" / split).glob("*.csv"):
            df = pd.read_csv(p, dtype=str, keep_default_na=False)
            df["id"] = df["id"].astype(int)
            if "explanation" not in df:
                df["explanation"] = ""
            df.to_parquet(pq / split / f"{p.stem}.parquet")
    assert _hashes(original("ceval")) == _hashes(load_local("ceval", pq))

    # IFEval: the HF copy fills every kwargs key with null.
    rows = [json.loads(line) for line in (shared_datasets / "ifeval" / "input_data.jsonl").open()]
    all_keys = sorted({k for r in rows for kw in r["kwargs"] for k in kw})
    for r in rows:
        r["kwargs"] = [{k: kw.get(k) for k in all_keys} for kw in r["kwargs"]]
    (tmp_path / "ifeval").mkdir()
    pd.DataFrame(rows).to_parquet(tmp_path / "ifeval" / "input_data.parquet")
    assert _hashes(original("ifeval")) == _hashes(load_local("ifeval", tmp_path / "ifeval"))

    # GSM8K parquet
    (tmp_path / "gsm8k").mkdir()
    for split in ("test", "train"):
        pd.read_json(shared_datasets / "gsm8k" / f"{split}.jsonl", lines=True).to_parquet(
            tmp_path / "gsm8k" / f"{split}.parquet"
        )
    assert _hashes(original("gsm8k")) == _hashes(load_local("gsm8k", tmp_path / "gsm8k"))


def test_changing_the_seed_changes_the_selection(glm_cfg, reference) -> None:
    datasets = reference.datasets  # glm_cfg's benchmarks as sample_run loaded them from the real files
    m42, _ = build_manifest(glm_cfg, datasets)
    m43, _ = build_manifest(glm_cfg, datasets, seed=43)
    ids42 = [(e.benchmark, e.source_id) for e in m42.entries]
    ids43 = [(e.benchmark, e.source_id) for e in m43.entries]
    assert len(ids43) == 160 and ids42 != ids43
    assert len(set(ids42) & set(ids43)) < 60


# ------------------------------------------------------------------ allocation arithmetic


def test_largest_remainder_examples() -> None:
    assert largest_remainder(40, {"1": 305, "2": 179, "3": 57}) == {"1": 23, "2": 13, "3": 4}
    # exact ties broken by stratum name ascending
    assert largest_remainder(1, {"b": 1, "a": 1}) == {"a": 1, "b": 0}
    assert largest_remainder(2, {"c": 1, "b": 1, "a": 1}) == {"a": 1, "b": 1, "c": 0}
    # natural order: "2" before "10"
    assert largest_remainder(1, {"10": 1, "2": 1}) == {"2": 1, "10": 0}
    assert largest_remainder(10, {"x": 3, "y": 3, "z": 4}) == {"x": 3, "y": 3, "z": 4}
    assert largest_remainder(7, {"x": 1, "y": 1, "z": 1}) == {"x": 3, "y": 2, "z": 2}
    for total in range(0, 60):
        alloc = largest_remainder(total, {"a": 17, "b": 5, "c": 31})
        assert sum(alloc.values()) == total


# ------------------------------------------------------------------ pins and bad input


def _cfg(tmp_path: Path, *benchmarks: dict[str, Any]) -> Path:
    """A config attaching to an endpoint (nothing is launched) with these ``benchmarks:`` entries."""
    return write_config(
        tmp_path / "cfg.yaml",
        name="t",
        model={"path": "/m", "served_name": "m"},
        server={"kind": "endpoint", "endpoint": "http://127.0.0.1:9"},
        benchmarks=benchmarks,
    )


def test_pin_mismatch_refused_then_allowed_with_drift(tmp_path: Path, shared_datasets: Path, capsys) -> None:
    pin = "0" * 64
    path = _cfg(tmp_path, entry("gsm8k", total=3, fingerprint=pin))
    with pytest.raises(SystemExit) as exc:
        main(["sample", str(path), "--dataset-root", str(shared_datasets), "--out", str(tmp_path / "r1")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert pin in err and "found:" in err
    assert not (tmp_path / "r1" / "manifest.json").exists()

    cfg = load_config(path)
    with pytest.raises(FingerprintMismatch):
        sample_run(cfg, dataset_root=shared_datasets, out=tmp_path / "r2")
    result = sample_run(cfg, dataset_root=shared_datasets, out=tmp_path / "r3", allow_drift=True)
    ident = result.manifest.sampling_for("gsm8k").dataset
    assert ident.drift_allowed and ident.pinned_fingerprint == pin and ident.fingerprint != pin


def test_pin_match_accepted(original, tmp_path: Path, shared_datasets: Path) -> None:
    fp = original("gsm8k").eval.fingerprint
    path = _cfg(tmp_path, entry("gsm8k", total=3, fingerprint=fp))
    result = sample_run(load_config(path), dataset_root=shared_datasets, out=tmp_path / "r")
    assert not result.manifest.sampling_for("gsm8k").dataset.drift_allowed


GSM = entry("gsm8k", total=2)


def _gsm_dir(tmp_path: Path, test_lines: list[str]) -> Path:
    root = tmp_path / "data"
    (root / "gsm8k").mkdir(parents=True)
    (root / "gsm8k" / "test.jsonl").write_text("".join(line + "\n" for line in test_lines))
    (root / "gsm8k" / "train.jsonl").write_text(json.dumps({"question": "q", "answer": "#### 1"}) + "\n")
    return root


def _run_cli(args: list[str]) -> int:
    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)


def test_malformed_jsonl_line_names_file_and_line(tmp_path: Path, capsys) -> None:
    good = json.dumps({"question": "a", "answer": "#### 1"})
    root = _gsm_dir(tmp_path, [good, "{not json", good])
    code = _run_cli(
        ["sample", str(_cfg(tmp_path, GSM)), "--dataset-root", str(root), "--out", str(tmp_path / "r")]
    )
    assert code == 2
    assert f"{root / 'gsm8k' / 'test.jsonl'}:2: malformed JSON line" in capsys.readouterr().err


def test_missing_required_field(tmp_path: Path) -> None:
    root = _gsm_dir(tmp_path, [json.dumps({"question": "a"})])
    with pytest.raises(DataError, match=r"test.jsonl:1: missing required field\(s\): answer"):
        load_local("gsm8k", root / "gsm8k")


def test_duplicate_source_ids(tmp_path: Path) -> None:
    line = json.dumps({"question": "same", "answer": "#### 1"})
    root = _gsm_dir(tmp_path, [line, line])
    cfg = load_config(_cfg(tmp_path, GSM))
    with pytest.raises(DataError, match="duplicate source id"):
        sample_run(cfg, dataset_root=root, out=tmp_path / "r")


def test_missing_file_and_dir(tmp_path: Path, capsys) -> None:
    code = _run_cli(["sample", str(_cfg(tmp_path, GSM)), "--dataset-root", str(tmp_path / "nowhere")])
    assert code == 2 and "dataset directory not found" in capsys.readouterr().err
    (tmp_path / "d" / "gsm8k").mkdir(parents=True)
    with pytest.raises(DataError, match=re.escape("test.{jsonl,csv,parquet}: file not found")):
        load_local("gsm8k", tmp_path / "d" / "gsm8k")


def test_malformed_csv_row_names_line(tmp_path: Path) -> None:
    d = tmp_path / "ceval"
    (d / "val").mkdir(parents=True)
    (d / "dev").mkdir(parents=True)
    (d / "val" / "law_val.csv").write_text("id,question,A,B,C,D,answer\n0,q,a,b,c,d,A\n1,q,a,b,c\n")
    (d / "dev" / "law_dev.csv").write_text("id,question,A,B,C,D,answer,explanation\n0,q,a,b,c,d,A,e\n")
    with pytest.raises(DataError, match=r"law_val.csv:3: expected 7 columns"):
        load_local("ceval", d)
    (d / "val" / "law_val.csv").write_text("id,question,A,B,C,D,answer\n0,q,a,b,c,d,E\n")
    with pytest.raises(DataError, match=r"law_val.csv:2: field 'answer' must be one of A/B/C/D"):
        load_local("ceval", d)


def test_short_stratum_is_an_error_unless_allowed(tmp_path: Path, shared_datasets: Path) -> None:
    body = {"name": "live_code_bench", "sampling": {"stratify_by": "difficulty", "per_stratum": 90}}
    cfg = load_config(_cfg(tmp_path, body))
    with pytest.raises(ConfigError, match="easy: asks 90 of 84"):
        sample_run(cfg, dataset_root=shared_datasets, out=tmp_path / "r")
    cfg2 = load_config(_cfg(tmp_path, {**body, "sampling": {**body["sampling"], "allow_short": True}}))
    result = sample_run(cfg2, dataset_root=shared_datasets, out=tmp_path / "r2")
    easy = result.manifest.sampling_for("live_code_bench").strata[0]
    assert (easy.stratum, easy.selected, easy.shortfall) == ("easy", 84, 6)


def test_live_code_bench_version_filter(tmp_path: Path, shared_datasets: Path) -> None:
    body = {
        "name": "live_code_bench",
        "subset": "release_v6",
        "sampling": {"stratify_by": "difficulty", "per_stratum": 2, "filter": {"versions": ["v6"]}},
    }
    result = sample_run(load_config(_cfg(tmp_path, body)), dataset_root=shared_datasets, out=tmp_path / "r")
    block = result.manifest.sampling_for("live_code_bench")
    assert block.filtered_population == 175
    assert [s.population for s in block.strata] == [43, 80, 52]


def test_verify_sample_reports_tampered_record(shared_datasets: Path, tmp_path: Path, capsys) -> None:
    # GSM8K alone: the check is per record and the victim is a GSM8K record (the other benchmarks' files
    # would only be copied, sampled and re-read unchanged)
    data = tmp_path / "data"
    shutil.copytree(shared_datasets / "gsm8k", data / "gsm8k")
    for p in data.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    cfg = load_config(_cfg(tmp_path, entry("gsm8k", total=50)))
    result = sample_run(cfg, dataset_root=data, out=tmp_path / "run")
    victim = result.manifest.entries_for("gsm8k")[0]
    test = data / "gsm8k" / "test.jsonl"
    lines = test.read_text().splitlines()
    for i, line in enumerate(lines):
        rec = json.loads(line)
        if hashlib.sha256(rec["question"].encode()).hexdigest()[:16] == victim.source_id:
            rec["answer"] = rec["answer"] + " (edited)"
            lines[i] = json.dumps(rec)
    test.write_text("\n".join(lines) + "\n")
    code = _run_cli(["verify-sample", str(result.rundir.root), "--sample", f"gsm8k/{victim.source_id}"])
    assert code == 1
    out = capsys.readouterr().out
    assert f"gsm8k {victim.source_id}: record_sha256" in out
    assert out.startswith(
        f"sample gsm8k/{victim.source_id}: record_sha256 {victim.record_sha256} (recorded) != "
    )
    vr = verify_sample(result.rundir.root)
    assert not vr.identical


def test_fast_canonical_json_matches_stdlib_definition() -> None:
    import random as _random

    from evalpipe.hashing import _canonical_json_stdlib, _normalize, canonical_json

    rng = _random.Random(3)
    alphabet = ["a", "é", "中", "\n", "\r\n", '"', "\\", "\t", "\x00", "\x1f", "\x7f", "/", "\u2028", "😀"]
    for _ in range(300):
        rec = {
            "s": "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))),
            "i": rng.randrange(-(10**12), 10**12),
            "big": 10**30,
            "f": rng.choice([0.1, 1.5e-7, 2.5, 1e300]),
            "l": [None, True, False, {"z": 1, "a": [1, "x"]}],
        }
        assert canonical_json(rec) == _canonical_json_stdlib(_normalize(rec))
        no_float = {k: v for k, v in rec.items() if k != "f"}
        assert canonical_json(no_float) == _canonical_json_stdlib(_normalize(no_float))


def test_hub_rows_hash_like_the_local_mirror(original, monkeypatch, tmp_path: Path) -> None:
    """Without a local mirror the hub ids EvalScope declares are used; rows as a hub client returns them
    (integer ids, empty explanation) go through the same canonicalisation. No network: the client is stubbed."""
    import evalpipe.sources.hub as hub
    from evalpipe.samplers.loading import load_benchmark

    local = original("ceval")
    by_subject: dict[tuple[str, str], list[dict]] = {}
    for split, recs in (("val", local.eval.records), ("dev", local.fewshot.records)):
        for r in recs:
            row = {**r.raw, "id": int(r.raw["id"]), "explanation": r.raw.get("explanation", "")}
            by_subject.setdefault((r.subset, split), []).append(row)
    asked: list[tuple[str, str | None, str]] = []

    def fake_split(bench, repo, subset, split):
        asked.append((repo, subset, split))
        return iter(by_subject.get((subset, split), []))

    monkeypatch.setattr(hub, "load_split", fake_split)
    monkeypatch.setattr(hub, "hub_unreachable", lambda backend: None)  # as if the hub answered
    body = {"name": "ceval", "sampling": {"stratify_by": "subject", "per_stratum": 1}}
    data = load_benchmark(load_config(_cfg(tmp_path, body)), "ceval")
    assert data.kind == "hub" and data.hub_id == "evalscope/ceval"
    assert {r[0] for r in asked} == {"evalscope/ceval"} and len(asked) == 2 * 52
    assert data.eval.fingerprint == local.eval.fingerprint
    assert data.fewshot.fingerprint == local.fewshot.fingerprint


def test_read_benchmarks_manifest_bytes_do_not_carry_the_generated_field(reference) -> None:
    """``ManifestEntry.generated`` exists for generated benchmarks (the KV-cache probe); a manifest of read
    benchmarks must be written byte for byte as by a model that never had the field, or every pinned
    manifest_sha256 (compare.json, reviews, explorer) of an earlier run would stop matching a re-sampling."""
    from pydantic import create_model

    from evalpipe.artifacts.schema.base import Artifact, Row
    from evalpipe.artifacts.schema.manifest import Manifest, ManifestEntry

    kept = {n: (f.annotation, f) for n, f in ManifestEntry.model_fields.items() if n != "generated"}
    entry_without = create_model("ManifestEntry", __base__=Row, **kept)  # type: ignore[call-overload]
    fields = {n: (f.annotation, f) for n, f in Manifest.model_fields.items()}
    fields["entries"] = (list[entry_without], ...)  # type: ignore[valid-type]
    manifest_without = create_model("Manifest", __base__=Artifact, **fields)  # type: ignore[call-overload]
    written = reference.rundir.manifest.read_bytes()
    assert b'"generated"' not in written
    old = manifest_without.model_validate(json.loads(written))
    assert (old.model_dump_json(indent=2) + "\n").encode() == written
