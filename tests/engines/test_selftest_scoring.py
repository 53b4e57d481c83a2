"""The answer key scored by EvalScope's own code: positive answers correct, negative and faulted ones wrong.

Prompts are built with each registered benchmark's EvalScope adapter and its own templates (few-shot as
the demo config sets it), recognised by the answer key, and the replies are scored with the adapter's
``calculate_metrics`` (GSM8K, C-Eval, IFEval) or, for LiveCodeBench, with EvalScope's test runner
``testing_util.run_test`` and its pass@k code.  ``run_test`` installs a reliability guard (it disables
``os.kill`` and friends), so every LiveCodeBench program runs in a forked child of one worker process
instead of a freshly spawned interpreter per sample as the adapter does; the adapter's full path is
exercised on a stdin- and a functional-style item.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalpipe.benchmarks import REGISTRY, names
from evalpipe.benchmarks.base import bundled_data_dir
from evalpipe.config.loader import load_config
from evalpipe.engines.answer_key import AnswerKey, KeyItem, Reply
from evalpipe.selftest.controls import demo_config_path

MODEL = "answer-key"


@pytest.fixture(scope="module")
def key() -> AnswerKey:
    return AnswerKey.load(bundled_data_dir())


@pytest.fixture(scope="module")
def adapters() -> dict[str, Any]:
    """EvalScope's adapter of every registered benchmark."""
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    for spec in REGISTRY.values():
        spec.register_evalscope_adapter()
    cfg = TaskConfig(model=MODEL, datasets=list(names()))
    return {n: get_benchmark(n, cfg) for n in names()}


class Prompted:
    """An item as EvalScope would send it: the Sample plus the final user message text."""

    def __init__(self, sample: Any, text: str) -> None:
        self.sample = sample
        self.text = text


def _last_user_text(messages: list[Any]) -> str:
    from evalpipe.hashing import message_text

    users = [m for m in messages if getattr(m, "role", None) == "user"]
    return message_text(users[-1].content)


@pytest.fixture(scope="module")
def prompted(adapters: dict[str, Any]) -> dict[str, Prompted]:
    """Every bundled eval item of every registered benchmark, keyed ``benchmark:source_id``, with the prompt
    EvalScope builds for it: the row as materialized, through the adapter's own ``record_to_sample`` and
    input processing, with the few-shot examples of the demo config (e.g. GSM8K 4-shot from the bundled
    train split, C-Eval 5-shot from each subject's dev split) through the adapter's own few-shot path."""
    few_shot = {b.name: b.few_shot for b in load_config(demo_config_path()).benchmarks}
    out: dict[str, Prompted] = {}
    for name, spec in REGISTRY.items():
        a = adapters[name]
        data = spec.load_local(spec.bundled_dir(), None)
        if few_shot.get(name, 0) > 0:
            assert data.fewshot is not None, name
            a.few_shot_num = few_shot[name]
            shots: dict[str, list[Any]] = {}
            for rec in data.fewshot.records:
                a.current_subset_name = rec.subset
                shots.setdefault(rec.subset, []).append(a.record_to_sample(rec.raw))
            a.fewshot_dataset = shots
        for rec in data.eval.records:
            a.current_subset_name = rec.subset
            sample = a.record_to_sample(spec.materialize_row(rec, False, f"{rec.file}:{rec.row + 1}"))
            if isinstance(sample.input, str):
                sample.input = a.process_sample_str_input(sample, rec.subset)
            else:
                sample.input = a.process_sample_messages_input(sample, rec.subset)
            out[f"{name}:{rec.source_id}"] = Prompted(sample, _last_user_text(sample.input))
    return out


def _score(adapter: Any, p: Prompted, reply: Reply) -> Any:
    from evalscope.api.evaluator import TaskState
    from evalscope.api.model import ModelOutput

    out = ModelOutput.from_content(model=MODEL, content=reply.content, stop_reason=reply.finish_reason)
    state = TaskState(model=MODEL, sample=p.sample, output=out, completed=True)
    return adapter.calculate_metrics(state).score


# LiveCodeBench: EvalScope's test runner in a worker process that forks one child per program (the
# runner's reliability guard disables os.kill & co. and can be installed once per process).
_CODE_WORKER = r"""
import json, multiprocessing, sys
from evalscope.benchmarks.live_code_bench.testing_util import run_test

def check(job, conn):
    res, meta = run_test({"input_output": job["evaluation_sample"]}, test=job["code"], debug=False, timeout=6)
    conn.send({"results": [r if isinstance(r, (bool, int)) else bool(r) for r in res], "metadata": meta})

if __name__ == "__main__":
    ctx = multiprocessing.get_context("fork")  # run_test's guard can be installed once per process
    out = []
    for job in json.load(open(sys.argv[1])):
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=check, args=(job, send))
        proc.start()
        send.close()
        out.append(recv.recv() if recv.poll(60) else {"results": [-1], "metadata": {"error": "no result"}})
        proc.join(10)
    open(sys.argv[2], "w").write(json.dumps(out, default=str))
"""


def _run_code(tmp_path: Path, adapter: Any, jobs: list[tuple[Prompted, Reply]]) -> list[dict[str, Any]]:
    """pass@1 (the adapter's own pass@k code) and metadata of each (prompt, reply)."""
    from evalscope.benchmarks.live_code_bench.pass_k_utils import compute_metrics_from_results

    payload = [
        {
            "evaluation_sample": p.sample.metadata["evaluation_sample"],
            "code": adapter.extract_answer(reply.content, None),
        }
        for p, reply in jobs
    ]
    src, dst = tmp_path / "jobs.json", tmp_path / "results.json"
    src.write_text(json.dumps(payload))
    subprocess.run([sys.executable, "-c", _CODE_WORKER, str(src), str(dst)], check=True, timeout=240)
    results = json.loads(dst.read_text())
    for r in results:
        metrics = compute_metrics_from_results({0: [r["results"]]}, k_list=[1])
        r["pass"] = metrics["pass@1"] / 100 > 0  # as LiveCodeBenchAdapter.match_score
    return results


# ---------------------------------------------------------------- recognition


def test_every_prompt_is_recognised_as_its_own_item(key: AnswerKey, prompted: dict[str, Prompted]) -> None:
    assert {it.benchmark for it in key.items} == set(names())  # every registered benchmark has items
    assert set(prompted) == {it.label for it in key.items}
    for label, p in prompted.items():
        got = key.match(p.text)
        assert got is not None and got.label == label, label


def test_fewshot_examples_do_not_capture_the_match(key: AnswerKey, prompted: dict[str, Prompted]) -> None:
    """A few-shot block that happens to quote another eval item still resolves to the last question."""
    other = key.item("gsm8k", next(it.source_id for it in key.items if it.benchmark == "gsm8k"))
    target = next(it for it in key.items if it.benchmark == "gsm8k" and it is not other)
    text = f"Example:\n{other.needle}\nANSWER: \\boxed{{{other.gold}}}\n\n" + prompted[target.label].text
    assert key.match(text) is target
    assert key.match("a prompt about nothing in the bundle") is None


# ---------------------------------------------------------------- GSM8K, C-Eval, IFEval via calculate_metrics


@pytest.mark.parametrize("bench", ["gsm8k", "ceval"])
def test_positive_answers_score_correct_negative_wrong(
    bench: str, key: AnswerKey, adapters: dict[str, Any], prompted: dict[str, Prompted]
) -> None:
    for it in (i for i in key.items if i.benchmark == bench):
        p = prompted[it.label]
        pos = _score(adapters[bench], p, key.reply(it, mode="positive", faults=[]))
        neg = _score(adapters[bench], p, key.reply(it, mode="negative", faults=[]))
        assert pos.main_value == 1.0, (it.label, pos.extracted_prediction)
        assert neg.main_value == 0.0, (it.label, neg.extracted_prediction)
        assert neg.extracted_prediction == key.negative_partner(it).gold


def test_ifeval_positive_follows_every_instruction_negative_fails(
    key: AnswerKey, adapters: dict[str, Any], prompted: dict[str, Prompted]
) -> None:
    for it in (i for i in key.items if i.benchmark == "ifeval"):
        p = prompted[it.label]
        pos = _score(adapters["ifeval"], p, key.reply(it, mode="positive", faults=[]))
        neg = _score(adapters["ifeval"], p, key.reply(it, mode="negative", faults=[]))
        assert pos.value["prompt_level_strict"] == 1.0 and pos.value["inst_level_strict"] == 1.0, it.label
        assert neg.value["prompt_level_strict"] == 0.0 and neg.value["prompt_level_loose"] == 0.0, it.label


@pytest.mark.parametrize("bench", ["gsm8k", "ceval"])
def test_truncated_reply_has_no_final_answer(
    bench: str, key: AnswerKey, adapters: dict[str, Any], prompted: dict[str, Prompted]
) -> None:
    """The truncate fault's text for each benchmark it can target scores wrong (nothing extractable)."""
    from evalpipe.engines.answer_key import truncated_response

    for it in (i for i in key.items if i.benchmark == bench):
        reply = Reply(truncated_response(it), "length", "truncate")
        score = _score(adapters[bench], prompted[it.label], reply)
        assert score.main_value == 0.0 and score.extracted_prediction == "", it.label


def test_truncate_fault_only_on_its_target(key: AnswerKey) -> None:
    target = key.fault_targets["truncate"]
    faults = ["truncate"]
    assert key.reply(target, mode="positive", faults=faults).finish_reason == "length"
    assert key.reply(target, mode="positive", faults=[]).finish_reason == "stop"
    others = [it for it in key.items if it is not target]
    assert all(key.reply(it, mode="positive", faults=faults).fault is None for it in others)


# ---------------------------------------------------------------- LiveCodeBench


def _code_items(key: AnswerKey) -> list[KeyItem]:
    return [it for it in key.items if it.benchmark == "live_code_bench"]


def test_live_code_bench_reference_solutions_pass_negative_and_faults_fail(
    tmp_path: Path, key: AnswerKey, adapters: dict[str, Any], prompted: dict[str, Prompted]
) -> None:
    from evalpipe.engines.answer_key import truncated_response

    items = _code_items(key)
    assert {it.func_name is None for it in items} == {True, False}  # stdin and functional styles
    jobs: list[tuple[Prompted, Reply]] = []
    for it in items:
        p = prompted[it.label]
        # The index_error and truncate faults as they would answer this item if it were their target.
        as_target = AnswerKey(key.items, {**key.fault_targets, "index_error": it}, key.data_dir)
        jobs.append((p, key.reply(it, mode="positive", faults=[])))
        jobs.append((p, key.reply(it, mode="negative", faults=[])))
        jobs.append((p, as_target.reply(it, mode="positive", faults=["index_error"])))
        jobs.append((p, Reply(truncated_response(it), "length", "truncate")))
    results = _run_code(tmp_path, adapters["live_code_bench"], jobs)
    for i, it in enumerate(items):
        pos, neg, ie, trunc = results[4 * i : 4 * i + 4]
        assert pos["pass"] and all(r is True for r in pos["results"]), (it.label, pos["metadata"])
        assert not neg["pass"], (it.label, neg["metadata"])
        assert not ie["pass"] and ie["metadata"].get("error_code") == -4, (it.label, ie["metadata"])
        assert "IndexError" in ie["metadata"]["error"], ie["metadata"]
        assert not trunc["pass"], (it.label, trunc["metadata"])


def test_live_code_bench_adapter_end_to_end(
    key: AnswerKey, adapters: dict[str, Any], prompted: dict[str, Prompted]
) -> None:
    """LiveCodeBenchAdapter.calculate_metrics (one spawned checker per reply, ~3 s each) on the
    index_error target (stdin style: reference passes, planted reply fails with IndexError) and on a
    functional-style item (reference passes, negative fails)."""
    a = adapters["live_code_bench"]
    it = key.fault_targets["index_error"]
    good = _score(a, prompted[it.label], key.reply(it, mode="positive", faults=[]))
    bad = _score(a, prompted[it.label], key.reply(it, mode="positive", faults=["index_error"]))
    assert good.value["acc"] == 1.0, good.metadata
    assert bad.value["acc"] == 0.0
    meta = json.loads(bad.metadata["final_metadata"][0][0])
    assert meta["error_code"] == -4 and "IndexError" in meta["error"], meta
    fn = next(i for i in _code_items(key) if i.func_name is not None)
    assert _score(a, prompted[fn.label], key.reply(fn, mode="positive", faults=[])).value["acc"] == 1.0
    assert _score(a, prompted[fn.label], key.reply(fn, mode="negative", faults=[])).value["acc"] == 0.0
