"""Your own multiple-choice file through a real model: evalpipe changes no score.

A small invented CSV in EvalScope's custom-MCQ layout (``default_val.csv``) is run by ``evalpipe run``
(``general_mcq`` with ``source.local`` and ``source.id_column``) against SmolLM2 on llama.cpp, then by a
bare EvalScope ``run_task`` (no evalpipe, no proxy) reading **the same CSV file** against a fresh server
with the same settings.  Per row: the same response text and the same score.  The rows are matched by
their id column — evalpipe's materialised index is manifest order, the bare run's index is file order.
Scores of a 135M model are never asserted.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.server_process import assert_group_gone
from test_real_model import BARE_SCRIPT, ENGINE_ARGS, KV, _require_engine

from evalpipe.engines.llamacpp import spawn
from evalpipe.processes.group import stop_group

MAX_TOKENS = 32
ROWS = [
    {"qid": "fruit", "question": "Which of these is a fruit?", "A": "Carrot", "B": "Apple", "C": "Potato",
     "D": "Onion", "answer": "B"},
    {"qid": "legs", "question": "How many legs does a spider have?", "A": "Six", "B": "Four", "C": "Eight",
     "D": "Ten", "answer": "C"},
    {"qid": "ice", "question": "What is ice made of?", "A": "Frozen water", "B": "Sand", "C": "Salt",
     "D": "Glass", "answer": "A"},
]  # fmt: skip


def _write_set(folder: Path) -> Path:
    folder.mkdir(parents=True)
    with (folder / "default_val.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(ROWS[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(ROWS)
    return folder


def _config(tmp: Path, own: Path) -> Path:
    cmd = ["{python}", "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--host", "{host}",
           "--port", "{port}", "--served-model-name", "{served_name}", "--kv-cache-dtype", "{kv_cache_dtype}",
           *ENGINE_ARGS]  # fmt: skip
    cfg = {
        "schema_version": 1,
        "name": "real-model-own-mcq",
        "model": {"path": "SmolLM2-135M-Instruct.Q4_1.gguf", "served_name": "smollm2"},
        "server": {"kind": "command", "command": cmd, "port": 0, "kv_cache_dtype": KV,
                   "launch_timeout_s": 120, "stop_timeout_s": 10},
        "generation": {"temperature": 0.0, "seed": 42, "concurrency": 1, "request_timeout_s": 300,
                       "default_max_tokens": MAX_TOKENS},
        "benchmarks": [
            {"name": "general_mcq", "few_shot": 0, "source": {"local": str(own), "id_column": "qid"},
             "sampling": {"stratify_by": "none", "total": len(ROWS), "allocation": "uniform"}},
        ],
        "output_root": str(tmp / "results"),
    }  # fmt: skip
    path = tmp / "own-mcq.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _main_value(score: dict[str, Any]) -> float:
    name = score.get("main_score_name")
    return float(score["value"][name] if name else next(iter(score["value"].values())))


@pytest.mark.timeout(900)  # two llama.cpp servers and two EvalScope runs: minutes on a busy 2-core host
def test_own_mcq_file_scores_as_bare_evalscope_on_the_same_file(tmp_path: Path) -> None:
    _require_engine()
    own = _write_set(tmp_path / "my_mcq_set")
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "run", str(_config(tmp_path, own)), "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    outcomes = _jsonl(out / "outcomes.jsonl")
    assert sorted(o["source_id"] for o in outcomes) == sorted(r["qid"] for r in ROWS)

    server, base = spawn(
        ["--model", "smollm2", "--served-model-name", "smollm2", "--kv-cache-dtype", KV, *ENGINE_ARGS],
        tmp_path / "bare-server.log",
    )
    try:
        task = {
            "model": "smollm2", "eval_type": "openai_api", "api_url": base + "/v1",
            "datasets": ["general_mcq"],
            "dataset_args": {"general_mcq": {"dataset_id": str(own), "subset_list": ["default"],
                                             "few_shot_num": 0}},
            "generation_config": {"temperature": 0.0, "max_tokens": MAX_TOKENS, "seed": 42},
            "eval_batch_size": 1, "work_dir": str(tmp_path / "bare"), "no_timestamp": True,
        }  # fmt: skip
        (tmp_path / "task.json").write_text(json.dumps(task), encoding="utf-8")
        (tmp_path / "bare.py").write_text(BARE_SCRIPT, encoding="utf-8")
        env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_OFFLINE": "1"}  # fmt: skip
        done = subprocess.run(
            [sys.executable, str(tmp_path / "bare.py"), str(tmp_path / "task.json")],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        stop_group(server, 30.0)
        assert_group_gone(server.pid)
    (pred_file,) = (tmp_path / "bare").glob("predictions/*/general_mcq_default.jsonl")
    (rev_file,) = (tmp_path / "bare").glob("reviews/*/general_mcq_default.jsonl")
    preds = {r["index"]: r for r in _jsonl(pred_file)}
    reviews = {r["index"]: r for r in _jsonl(rev_file)}
    file_row = {r["qid"]: i for i, r in enumerate(ROWS)}  # the bare run's index is the file's row
    for o in outcomes:
        i = file_row[o["source_id"]]
        text = preds[i]["model_output"]["choices"][0]["message"]["content"]
        if isinstance(text, list):
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == o["response_sha256"], o["source_id"]
        assert o["failure_class"] != "scoring_error", o
        assert _main_value(reviews[i]["sample_score"]["score"]) == o["score"], o["source_id"]
