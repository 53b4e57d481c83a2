"""The bundled miniature datasets: native schema and mirror layout, invented content, recognisable
items, IFEval checks that need no NLTK data, and a demo config whose sample holds every planted fault."""

from __future__ import annotations

import csv
import inspect
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from evalpipe.benchmarks import REGISTRY, described
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.config.loader import load_config, resolve_sampling_rule
from evalpipe.config.models import AnswerKeyConfig
from evalpipe.engines.answer_key import FAULTS, AnswerKey
from evalpipe.samplers.loading import load_local

DATA = bundled_data_dir()
LIVE_CODE_BENCH_FILE = "code_generation_lite_v5_v6_subset.jsonl"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8-sig", newline="") as fh:
        return next(csv.reader(fh))


@pytest.fixture(scope="module")
def key() -> AnswerKey:
    return AnswerKey.load(DATA)


# ---------------------------------------------------------------- schema and layout


def test_same_layout_and_fields_as_the_local_mirror(shared_datasets: Path) -> None:
    no_copy_here = {  # invented miniatures only: no local copy of these benchmarks exists here
        "longbench_v2",  # tests/make_longbench_miniature.py
        *("aime24", "aime25", "aime26", "hmmt25", "hmmt26", "gpqa_diamond"),  # hub only (GPQA: never copied)
        *("general_mcq", "general_qa"),  # your own files: there is no real copy of these
        "kv_probe",  # generated from its probe.json: there is nothing to copy
    }
    assert {p.name for p in DATA.iterdir() if p.is_dir()} - no_copy_here == {
        p.name for p in shared_datasets.iterdir() if p.is_dir()
    }
    for split in ("test", "train"):
        assert {tuple(r) for r in _jsonl(DATA / "gsm8k" / f"{split}.jsonl")} == {("question", "answer")}
    real_ifeval = set(_jsonl(shared_datasets / "ifeval" / "input_data.jsonl")[0])
    assert {frozenset(r) for r in _jsonl(DATA / "ifeval" / "input_data.jsonl")} == {frozenset(real_ifeval)}
    real_val = _header(next((shared_datasets / "ceval" / "val").glob("*_val.csv")))
    real_dev = _header(next((shared_datasets / "ceval" / "dev").glob("*_dev.csv")))
    for path in (DATA / "ceval" / "val").iterdir():
        assert _header(path) == real_val, path
    for path in (DATA / "ceval" / "dev").iterdir():
        assert _header(path) == real_dev, path
    real_code = _jsonl(shared_datasets / "livecodebench" / LIVE_CODE_BENCH_FILE)
    ours = _jsonl(next((DATA / "livecodebench").glob("*.jsonl")))
    assert {tuple(r) for r in ours} == {tuple(real_code[0])}  # same fields, same order
    for r in ours:
        for field in ("public_test_cases", "metadata"):
            assert isinstance(r[field], str)  # JSON strings, as in the real file
        tests = json.loads(r["public_test_cases"])
        assert tests and all(set(t) == {"input", "output", "testtype"} for t in tests)
        meta = json.loads(r["metadata"])
        if r["platform"] == "leetcode":
            assert {t["testtype"] for t in tests} == {"functional"} and set(meta) == {"func_name"}
            assert (
                r["starter_code"].startswith("class Solution:")
                and f"def {meta['func_name']}(" in r["starter_code"]
            )
        else:
            assert (r["platform"], r["metadata"], r["starter_code"]) == ("atcoder", "{}", "")
            assert {t["testtype"] for t in tests} == {"stdin"}
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", r["contest_date"]) and r["_version"] in (
            "v5",
            "v6",
        )


def test_sizes_strata_and_gold_answers() -> None:
    gsm = load_local("gsm8k", DATA / "gsm8k")
    assert len(gsm.eval.records) == 12 and len(gsm.fewshot.records) >= 4
    for rec in gsm.eval.records + gsm.fewshot.records:
        assert re.search(r"\n#### -?\d+(\.\d+)?$", rec.raw["answer"]), rec.raw["answer"]

    from evalscope.benchmarks.ceval.ceval_adapter import SUBJECT_MAPPING

    ceval = load_local("ceval", DATA / "ceval")
    subjects = Counter(r.subset for r in ceval.eval.records)
    assert len(subjects) == 3 and set(subjects) <= set(SUBJECT_MAPPING) and sum(subjects.values()) == 12
    dev = Counter(r.subset for r in ceval.fewshot.records)
    assert dev == dict.fromkeys(subjects, 5)
    assert all(r.raw["explanation"].strip() for r in ceval.fewshot.records)

    ifeval = load_local("ifeval", DATA / "ifeval")
    counts = Counter(r.stratum_fields["instruction_count"] for r in ifeval.eval.records)
    assert counts == {1: 4, 2: 4, 3: 4}

    code = load_local("live_code_bench", DATA / "livecodebench")
    combos = Counter((r.stratum_fields["difficulty"], r.raw["platform"]) for r in code.eval.records)
    assert combos == {(d, p): 2 for d in ("easy", "medium", "hard") for p in ("atcoder", "leetcode")}


def test_solutions_cover_exactly_their_items_and_every_bundled_record_is_an_item(key: AnswerKey) -> None:
    sol = json.loads((DATA / "solutions.json").read_text(encoding="utf-8"))
    answered = set(sol) & set(REGISTRY)
    assert answered == {"live_code_bench", "ifeval"}  # the answers their data cannot supply
    for name in answered:
        assert set(sol[name]) == {i.source_id for i in key.items if i.benchmark == name}, name
    # one item per evaluation record of every registered benchmark's bundled miniature (sizes: above and in
    # each benchmark's own tests)
    bundled = {
        name: len(spec.load_local(spec.bundled_dir(), None).eval.records) for name, spec in REGISTRY.items()
    }
    assert key.counts() == bundled and all(bundled.values())


def test_ifeval_uses_only_checks_that_need_no_downloaded_data() -> None:
    """NLTK's punkt/punkt_tab (sentence counting, word_tokenize) cannot be downloaded here; langdetect
    is avoided too (probabilistic).  Read from the checkers' own source, so an EvalScope change shows."""
    from evalscope.benchmarks.ifeval.instructions_registry import INSTRUCTION_DICT

    used = {i for r in _jsonl(DATA / "ifeval" / "input_data.jsonl") for i in r["instruction_id_list"]}
    assert used <= set(INSTRUCTION_DICT)
    for instruction_id in used:
        src = inspect.getsource(INSTRUCTION_DICT[instruction_id].check_following)
        for needs_data in ("count_sentences", "word_tokenize", "nltk", "langdetect"):
            assert needs_data not in src, (instruction_id, needs_data)


def test_items_are_invented_not_copied(shared_datasets: Path, key: AnswerKey) -> None:
    real: set[str] = set()
    real |= {r["question"] for r in _jsonl(shared_datasets / "gsm8k" / "test.jsonl")}
    real |= {r["question"] for r in _jsonl(shared_datasets / "gsm8k" / "train.jsonl")}
    real |= {r["prompt"] for r in _jsonl(shared_datasets / "ifeval" / "input_data.jsonl")}
    real |= {r["question_content"] for r in _jsonl(shared_datasets / "livecodebench" / LIVE_CODE_BENCH_FILE)}
    for path in (shared_datasets / "ceval" / "val").glob("*.csv"):
        with path.open(encoding="utf-8", newline="") as fh:
            real |= {row["question"] for row in csv.DictReader(fh)}
    assert not [it.label for it in key.items if it.needle in real]


def test_every_needle_identifies_one_item(key: AnswerKey) -> None:
    """No item's question text occurs inside another bundled text (eval or few-shot)."""
    texts = [it.needle for it in key.items]
    texts += [r.raw["question"] for r in load_local("gsm8k", DATA / "gsm8k").fewshot.records]
    texts += [r.raw["question"] for r in load_local("ceval", DATA / "ceval").fewshot.records]
    for it in key.items:
        holders = [t for t in texts if it.needle in t]
        assert holders == [it.needle], it.label


def test_negative_partner_is_another_item_with_a_different_gold(key: AnswerKey) -> None:
    for it in key.items:
        partner = key.negative_partner(it)
        assert partner.benchmark == it.benchmark and partner is not it and partner.gold != it.gold
        assert (partner.func_name is None) == (it.func_name is None)  # code: same style (stdin/functional)


# ---------------------------------------------------------------- fault targets and the demo config


def test_fault_list_matches_the_config_contract(key: AnswerKey) -> None:
    declared = AnswerKeyConfig.model_fields["faults"].annotation.__args__[0].__args__
    assert set(declared) == set(FAULTS) == set(key.fault_targets)
    assert key.fault_targets["index_error"].benchmark == "live_code_bench"
    assert len({t.label for t in key.fault_targets.values()}) == len(FAULTS)  # one item per fault


def test_demo_config_validates_with_the_same_plan_kinds_as_the_real_run(repo_root: Path) -> None:
    demo = load_config(repo_root / "configs" / "demo.yaml")
    real = load_config(repo_root / "configs" / "glm-fp8.yaml")
    assert demo.server.kind == "answer_key" and demo.server.answer_key is not None
    assert demo.server.answer_key.mode == "positive" and set(demo.server.answer_key.faults) == set(FAULTS)
    # the demo adds the benchmarks described in YAML (no twin in a real run): each reads its own folder
    yaml_only = {b.meta.name: b.bundled_dir() for b in described.builtin()}
    assert [b.name for b in demo.benchmarks if b.name not in yaml_only] == [b.name for b in real.benchmarks]
    for bench in demo.benchmarks:
        if bench.name in yaml_only:
            assert bench.source.local and demo.resolve_path(bench.source.local).resolve() == yaml_only[bench.name]
            continue
        assert bench.source.local and demo.resolve_path(bench.source.local).resolve().is_relative_to(DATA)
        assert bench.few_shot == real.benchmark(bench.name).few_shot
        d, r = resolve_sampling_rule(demo, bench.name), resolve_sampling_rule(real, bench.name)
        assert (d.stratify_by, d.allocation, d.per_stratum is None) == (
            r.stratify_by,
            r.allocation,
            r.per_stratum is None,
        )


def test_demo_sample_contains_every_fault_target(tmp_path: Path, repo_root: Path, key: AnswerKey) -> None:
    """`evalpipe sample` on the demo config selects each announced fault item (else a fault never fires)."""
    from evalpipe.samplers.run import sample_run

    cfg = load_config(repo_root / "configs" / "demo.yaml")
    manifest = sample_run(cfg, out=tmp_path / "run").manifest
    selected = {(e.benchmark, e.source_id) for e in manifest.entries}
    for fault, item in key.fault_targets.items():
        assert (item.benchmark, item.source_id) in selected, fault
    sizes = Counter(e.benchmark for e in manifest.entries)
    assert sizes == {"ifeval": 6, "ceval": 3, "gsm8k": 5, "live_code_bench": 3, "unit_facts": 6}
