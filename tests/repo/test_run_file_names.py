"""Run-directory files are named in one place: ``evalpipe/artifacts/rundir.py``.

Outside ``evalpipe/artifacts/`` (in ``evalpipe/``, ``tools/`` and ``perf/``), a string constant that is a
``.json``/``.jsonl`` file name (or a relative path ending in one) is refused, f-string parts included, unless ``ALLOWED`` lists it for that module with the reason
it is not a file of a run directory.  A stage that needs a run file asks ``RunDir`` for it; a finding that
names one derives the name from ``RunDir`` too.  An entry of ``ALLOWED`` that no longer occurs is refused as
well, so the list stays as short as the code needs.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from helpers.source_trees import parsed

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("evalpipe", "tools", "perf")

#: A file name, possibly behind folders: ``speed.json``, ``server/fleet.json``, ``requests.jsonl.gz``.
FILE_NAME = re.compile(r"^(?:[\w.-]+/)*[\w-][\w.-]*\.jsonl?(?:\.gz)?$")

_MODEL_DIR = "a file of a model or tokenizer directory (Hugging Face layout), not of a run directory"
_CLIENT = "the benchmark client's own output file, named by that tool, kept verbatim under speed/"
_PROBE = "the probe benchmark's data file, in its dataset directory"
_BUNDLED = "the self-test's bundled data (package data), not a run's"
_ANSWER_KEY = "the answer-key engine's data directory, not a run's"
_BARRIER = (
    "inside the speed barrier's folder (RunDir.speed_barrier): the exchange between a parent and its variant "
    "processes that this module alone reads and writes"
)

#: (module relative to the repository, literal) → why it is not a run-directory file.
ALLOWED: dict[tuple[str, str], str] = {
    ("evalpipe/benchmarks/kv_probe/tokens.py", "tokenizer.json"): _MODEL_DIR,
    ("evalpipe/benchmarks/kv_probe/tokens.py", "tokenizer_config.json"): _MODEL_DIR,
    ("evalpipe/numerics/prompts.py", "tokenizer.json"): _MODEL_DIR,
    ("evalpipe/run/context_fit.py", "tokenizer.json"): _MODEL_DIR,
    ("evalpipe/run/context_fit.py", "config.json"): _MODEL_DIR,
    ("evalpipe/tokenizer.py", "tokenizer.json"): _MODEL_DIR,
    ("evalpipe/server/preflight_rules.py", "config.json"): _MODEL_DIR,
    ("evalpipe/server/kinds/sglang/dsa_facts.py", "config.json"): _MODEL_DIR,
    ("tools/gpu/sglang/dsa_model.py", "config.json"): "a model directory the script writes: " + _MODEL_DIR,
    ("tools/gpu/sglang/dsa_model.py", "tokenizer.json"): "a model directory the script writes: " + _MODEL_DIR,
    ("tools/gpu/sglang/dsa_model.py", "tokenizer_config.json"): "a model directory the script writes: "
    + _MODEL_DIR,
    ("tools/gpu/sglang/dsa_model.py", "weights_source.json"): "beside the weights the script writes: "
    + _MODEL_DIR,
    ("tools/gpu/sglang/dequant.py", "model_source.json"): "beside a checkpoint the script makes: "
    + _MODEL_DIR,
    ("evalpipe/benchmarks/kv_probe/spec.py", "probe.json"): _PROBE,
    ("evalpipe/benchmarks/kv_probe/__init__.py", "probe.json"): _PROBE,
    ("perf/bench_kv_probe.py", "probe.json"): _PROBE,
    ("evalpipe/engines/answer_key.py", "solutions.json"): _ANSWER_KEY,
    ("evalpipe/engines/answer_key.py", "faults.json"): _ANSWER_KEY,
    ("evalpipe/selftest/controls.py", "faults.json"): _BUNDLED,
    ("perf/bench_lcb_review.py", "code_generation_lite_selftest.jsonl"): _BUNDLED,
    ("perf/bench_lcb_review.py", "solutions.json"): _BUNDLED,
    ("perf/bench_sampling.py", "synthetic.jsonl"): "a synthetic dataset the benchmark writes, not a run's",
    (
        "evalpipe/replay/publish.py",
        "bundle.json",
    ): "the index of a published bundle, a folder built from a run",
    (
        "tools/measure_speed_kv.py",
        "summary.json",
    ): "the script's own result file in its --out folder, not a run's",
    ("evalpipe/speed/clients/evalscope_perf.py", "benchmark_summary.json"): _CLIENT,
    ("evalpipe/speed/clients/evalscope_perf.py", "benchmark_percentile.json"): _CLIENT,
    ("evalpipe/speed/clients/sglang_bench.py", "bench_serving.jsonl"): _CLIENT,
    ("evalpipe/speed/barrier.py", "release.json"): _BARRIER,
    ("evalpipe/speed/barrier.py", "started.json"): _BARRIER,
    **{
        (
            "evalpipe/resolve/published.py",
            f"{name}.schema.json",
        ): "a published JSON Schema's file name under audits/"
        for name in (
            "config",
            "manifest",
            "run",
            "compare",
            "summary",
            "context_fit",
            "fleet",
            "speed",
            "speed_compare",
            "reviews",
        )
    },
}


@cache  # the module's two tests ask for the same walk (every scanned file parsed)
def file_name_literals() -> frozenset[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for path in sorted(p for folder in SCANNED for p in (ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("evalpipe/artifacts/"):
            continue
        for node in ast.walk(parsed(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and FILE_NAME.match(node.value):
                found.add((rel, node.value))
    return frozenset(found)


def test_run_directory_files_are_named_by_rundir_only() -> None:
    refused = sorted(f"{rel}: {name!r}" for rel, name in file_name_literals() - ALLOWED.keys())
    assert not refused, (
        "file names outside evalpipe/artifacts/ (name run-directory files through RunDir, or list a file that "
        "is not one in ALLOWED with the reason):\n" + "\n".join(refused)
    )


def test_the_allow_list_holds_no_stale_entry() -> None:
    stale = sorted(f"{rel}: {name!r}" for rel, name in ALLOWED.keys() - file_name_literals())
    assert not stale, "ALLOWED lists literals no module holds any more:\n" + "\n".join(stale)


def test_the_pattern_sees_names_and_paths_but_not_prose() -> None:
    for name in ("speed.json", "server/fleet.json", "responses.jsonl.gz", "torn_repairs.jsonl"):
        assert FILE_NAME.match(name), name
    for text in (".jsonl", "see speed.json", "``speed.json``", "speed.json → ", "speed.yaml"):
        assert not FILE_NAME.match(text), text
