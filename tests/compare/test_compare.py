"""Paired comparison: exact discordant counts, p-values against scipy, refusals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers.config import entry, write_config
from scipy.stats import binomtest

from evalpipe.artifacts import RunDir, write_jsonl_atomic
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.cli.main import main
from evalpipe.compare import Arms, PairedDesign, compare_runs
from evalpipe.compare.paired import CompareRefused
from evalpipe.config.loader import load_config
from evalpipe.hashing import sha256_hex
from evalpipe.report.compare_markdown import compare_markdown
from evalpipe.samplers import sample_run
from evalpipe.words.compare import paired_line


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path) -> Path:
    root = tmp_path_factory.mktemp("pair")
    path = write_config(
        root / "c.yaml",
        name="pair",
        model={"path": "/m", "served_name": "m"},
        server={"kind": "endpoint", "endpoint": "http://127.0.0.1:9"},
        benchmarks=[
            entry("gsm8k", total=30),
            {"name": "live_code_bench", "sampling": {"stratify_by": "difficulty", "per_stratum": 4}},
        ],
    )
    cfg = load_config(path)
    return sample_run(cfg, dataset_root=shared_datasets, out=root / "base").rundir.root


def _run_with(
    base: Path,
    dest: Path,
    correct: set[int],
    *,
    prompt_salt: str = "",
    truncated_scored: set[int] = frozenset(),
) -> Path:
    shutil.copytree(base, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    rows = []
    for i, e in enumerate(manifest["entries"]):
        ok = i in correct
        rows.append(
            OutcomeRow(
                benchmark=e["benchmark"],
                subset=e["subset"],
                index=i,
                source_id=e["source_id"],
                stratum=e["stratum"],
                prediction_present=True,
                review_present=True,
                n_predictions=1,
                n_reviews=1,
                prompt_sha256=sha256_hex(e["source_id"] + (prompt_salt if i == 0 else "")),
                score=1.0 if ok or i in truncated_scored else 0.0,
                failure_class="ok" if ok else ("budget_exhausted" if i in truncated_scored else "wrong"),
            )
        )
    write_jsonl_atomic(RunDir(dest).outcomes, rows)
    return dest


def test_discordant_counts_pvalue_and_interval(base_run: Path, tmp_path: Path) -> None:
    n = 42  # 30 gsm8k + 12 live_code_bench
    a_correct = set(range(0, 25)) | {30, 31, 32}  # gsm8k: 25/30 ; live_code_bench 3/12
    b_correct = set(range(3, 28)) | {31, 32, 33, 34}  # gsm8k: 25/30 ; live_code_bench 4/12
    ra = _run_with(base_run, tmp_path / "a", a_correct)
    rb = _run_with(base_run, tmp_path / "b", b_correct)
    res = compare_runs(PairedDesign(Arms(ra, rb, "FP8 raw", "BF16 KV")))
    gsm = res.benchmarks[0]
    assert gsm.benchmark == "gsm8k" and gsm.n_pairs == 30
    # A-only: 0,1,2 ; B-only: 25,26,27
    assert (gsm.both_correct, gsm.a_only, gsm.b_only, gsm.both_wrong) == (22, 3, 3, 2)
    assert gsm.mcnemar_p == pytest.approx(binomtest(3, 6, 0.5).pvalue)
    assert gsm.difference == 0.0
    live_code_bench = res.benchmarks[1]
    assert (live_code_bench.a_only, live_code_bench.b_only) == (1, 2)  # 30 vs 33,34
    assert live_code_bench.mcnemar_p == pytest.approx(binomtest(1, 3, 0.5).pvalue)
    entries = json.loads((ra / "manifest.json").read_text())["entries"]
    assert {f.source_id for f in live_code_bench.flips} == {entries[i]["source_id"] for i in (30, 33, 34)}
    assert len(live_code_bench.flips) == 3 and all(
        f.benchmark == "live_code_bench" for f in live_code_bench.flips
    )
    assert res.overall is not None and res.overall.n_pairs == n
    assert res.overall.a_only == 4 and res.overall.b_only == 5
    # interval contains the point estimate and is reproducible (seeded)
    assert live_code_bench.diff_ci_low <= live_code_bench.difference <= live_code_bench.diff_ci_high
    again = compare_runs(PairedDesign(Arms(ra, rb, "FP8 raw", "BF16 KV")))
    assert again.model_dump() == res.model_dump()
    line = paired_line(live_code_bench, res.label_a, res.label_b)
    assert line.startswith("FP8 raw vs BF16 KV (live_code_bench): -8.3 pts (bootstrap 95 % [")
    assert line.endswith("McNemar p = 1, 3 flips") and live_code_bench.repeats == 1
    md = compare_markdown(res)
    assert "| gsm8k | 25/30 | 25/30 | +0.0 |" in md
    assert f"- {line}\n" in md


def test_truncated_answer_scored_1_is_incorrect_as_in_the_summary(base_run: Path, tmp_path: Path) -> None:
    """Seen with SmolLM2 on llama.cpp: EvalScope scored a budget-exhausted C-Eval answer 1. The summary
    counts it incorrect (declared failure treatment); the comparison must count it the same way."""
    ra = _run_with(base_run, tmp_path / "a", {1, 2}, truncated_scored={0})
    rb = _run_with(base_run, tmp_path / "b", {1, 2})
    gsm = compare_runs(PairedDesign(Arms(ra, rb, "a", "b"))).benchmarks[0]
    assert (gsm.a.correct, gsm.b.correct, gsm.a_only, gsm.b_only) == (2, 2, 0, 0)
    assert gsm.flips == []


def test_mcnemar_matches_statsmodels_for_lopsided_flips(base_run: Path, tmp_path: Path) -> None:
    from statsmodels.stats.contingency_tables import mcnemar

    ra = _run_with(base_run, tmp_path / "a", set(range(0, 30)))
    rb = _run_with(base_run, tmp_path / "b", set(range(0, 22)))
    gsm = compare_runs(PairedDesign(Arms(ra, rb))).benchmarks[0]
    assert (gsm.a_only, gsm.b_only) == (8, 0)
    assert gsm.mcnemar_p == pytest.approx(mcnemar([[22, 8], [0, 0]], exact=True).pvalue)
    assert gsm.mcnemar_p == pytest.approx(2 * 0.5**8)
    assert gsm.diff_ci_low > 0  # all flips one way: interval excludes 0


def test_refuses_mismatched_manifest(base_run: Path, tmp_path: Path) -> None:
    ra = _run_with(base_run, tmp_path / "a", set())
    rb = _run_with(base_run, tmp_path / "b", set())
    m = json.loads((rb / "manifest.json").read_text())
    m["entries"][0]["source_id"] = "0000000000000000"
    (rb / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(CompareRefused, match="not paired"):
        compare_runs(PairedDesign(Arms(ra, rb)))


def test_refuses_different_prompts_exit_2(base_run: Path, tmp_path: Path, capsys) -> None:
    ra = _run_with(base_run, tmp_path / "a", set())
    rb = _run_with(base_run, tmp_path / "b", set(), prompt_salt="x")
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(ra), str(rb)])
    assert exc.value.code == 2
    assert "different prompts for 1 sample" in capsys.readouterr().err


def test_cli_writes_compare_json(base_run: Path, tmp_path: Path) -> None:
    ra = _run_with(base_run, tmp_path / "a", {1, 2})
    rb = _run_with(base_run, tmp_path / "b", {2})
    rc = main(["compare", str(ra), str(rb), "--out", str(tmp_path / "cmp")])
    assert rc == 0
    data = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    assert data["schema_version"] == 10 and data["benchmarks"][0]["a_only"] == 1
    assert (tmp_path / "cmp" / "compare.md").is_file()


def _set_versions(run: Path, versions: dict[str, str] | None) -> None:
    """Rewrite run.json's benchmark versions; None: as a run.json v2 wrote it (no versions recorded)."""
    record = json.loads((run / "run.json").read_text())
    if versions is None:
        record["schema_version"] = 2
        record.pop("benchmark_versions")
    else:
        record["benchmark_versions"] = versions
    (run / "run.json").write_text(json.dumps(record))


def test_benchmark_versions_are_recorded_and_a_different_one_refuses(base_run: Path, tmp_path: Path) -> None:
    ra = _run_with(base_run, tmp_path / "a", {0, 1})
    rb = _run_with(base_run, tmp_path / "b", {0})
    res = compare_runs(PairedDesign(Arms(ra, rb, "a", "b")))
    assert res.benchmark_versions == {"gsm8k": "1", "live_code_bench": "1"}
    assert "Same benchmark versions in both runs: gsm8k v1, live_code_bench v1." in compare_markdown(res)
    _set_versions(rb, {"gsm8k": "2", "live_code_bench": "1"})
    with pytest.raises(CompareRefused) as refused:
        compare_runs(PairedDesign(Arms(ra, rb, "a", "b")))
    assert "different versions of a benchmark" in refused.value.message
    assert refused.value.details == [f"gsm8k: version 1 in {ra} vs version 2 in {rb}"]


def test_a_run_without_versions_pairs_and_the_report_says_it_is_unknown(
    base_run: Path, tmp_path: Path
) -> None:
    ra = _run_with(base_run, tmp_path / "a", {0, 1})
    rb = _run_with(base_run, tmp_path / "b", {0})
    _set_versions(rb, None)
    res = compare_runs(PairedDesign(Arms(ra, rb, "a", "b")))
    assert res.benchmark_versions == {"gsm8k": None, "live_code_bench": None}
    assert "version not recorded by an older run for gsm8k, live_code_bench" in compare_markdown(res)
