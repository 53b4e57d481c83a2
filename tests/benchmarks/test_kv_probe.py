"""The KV-cache probe's own guarantees: items regenerate byte for byte from the spec, evidence lands on the
token offsets asked for (page edges included) and is measured in the served prompt, lengths beyond the
server's context are dropped with one line, and the prompt head measured is EvalScope's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.benchmarks import benchmark
from evalpipe.benchmarks.kv_probe import dropped_line
from evalpipe.benchmarks.kv_probe.generate import HEAD, Measure, generate
from evalpipe.benchmarks.kv_probe.spec import ProbeSpec
from evalpipe.benchmarks.kv_probe.tokens import WordCounter
from evalpipe.errors import DataError

SPEC = {
    "seed": 5,
    "tasks": ["word", "multi_value", "variable_tracking"],
    "lengths": [256, 512],
    "page_size": 64,
}


def _write(tmp_path: Path, spec: dict[str, object]) -> Path:
    (tmp_path / "probe.json").write_text(json.dumps(spec), encoding="utf-8")
    return tmp_path


def test_head_is_evalscopes_trivia_qa_template() -> None:
    from evalscope.benchmarks.trivia_qa.trivia_qa_adapter import PROMPT_TEMPLATE

    assert PROMPT_TEMPLATE.split("{content}", 1)[0] == HEAD


def test_items_regenerate_byte_for_byte_and_depend_on_the_seed(tmp_path: Path) -> None:
    spec = benchmark("kv_probe")
    (tmp_path / "a").mkdir()
    a = spec.load_local(_write(tmp_path / "a", SPEC), None)
    b = spec.load_local(tmp_path / "a", None)
    assert [(r.source_id, r.record_sha256) for r in a.eval.records] == [
        (r.source_id, r.record_sha256) for r in b.eval.records
    ]
    (tmp_path / "c").mkdir()
    c = spec.load_local(_write(tmp_path / "c", {**SPEC, "seed": 6}), None)
    assert [r.source_id for r in c.eval.records] == [r.source_id for r in a.eval.records]
    assert not {r.record_sha256 for r in c.eval.records} & {r.record_sha256 for r in a.eval.records}


def test_evidence_lands_on_page_edges_and_offsets_are_measured() -> None:
    spec = ProbeSpec.model_validate(SPEC)
    m = Measure(WordCounter(), "")
    items = list(generate(spec, m, [256, 512]))
    assert {i["probe"]["placement"] for i in items} == {"d10", "d50", "d90", "page_before", "page_after"}
    for item in items:
        probe, context = item["probe"], item["entity_pages"]["wiki_context"]
        text = m.base + context
        starts = m.counter.starts(text)
        # the token at each measured offset is the first word of an evidence sentence
        words = [text[starts[o] :].split(" ", 1)[0] for o in probe["offsets"]]
        assert set(words) <= {"The", "One", "VAR"}, (item["question_id"], words)
        if probe["placement"].startswith("page"):
            first = probe["offsets"][0]
            assert first == probe["targets"][0]
            assert first % 64 == (63 if probe["placement"] == "page_before" else 0)
        assert abs(probe["context_tokens"] - probe["length"]) <= 16
        assert item["answer"]["aliases"][0].split(" ")[0] in context


def test_lengths_beyond_the_context_are_dropped_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = benchmark("kv_probe").load_local(_write(tmp_path, {**SPEC, "context_length": 700}), None)
    assert {r.stratum_fields["length"] for r in data.eval.records} == {"256"}
    assert capsys.readouterr().err.strip() == dropped_line([512], 700, 256)


def test_a_bad_spec_names_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"probe.json: lengths: .*1000.*not on the grid"):
        benchmark("kv_probe").load_local(_write(tmp_path, {**SPEC, "lengths": [1000]}), None)


def test_a_right_answer_stated_as_a_sentence_scores_by_evalscopes_own_rule() -> None:
    """The accepted answers include the value stated as the question's sentence, in the normal form EvalScope's
    TriviaQA extraction gives a sentence answer, so EvalScope's ``acc`` (whole-alternative match) scores it 1 —
    and a wrong value still 0."""
    from evalscope.benchmarks.trivia_qa.trivia_qa_adapter import normalize_answer
    from evalscope.metrics.nlp.metrics import Accuracy

    from evalpipe.benchmarks.kv_probe.spec import TASKS
    from evalpipe.benchmarks.kv_probe.tasks import Draw, build

    acc = Accuracy(allow_inclusion=True)
    for task in ("word", "two_digit", "repeated_key", "single_key", "multi_key"):
        item = build(task, Draw(7, f"{task}-0"))
        value = item.answers[0]
        said = item.question.replace("What is the", "The").rstrip("?") + f" is {value}."
        assert acc.apply([normalize_answer(said)], [list(item.answers)]) == [1.0], (task, said, item.answers)
        assert acc.apply([normalize_answer(said.replace(value, "0"))], [list(item.answers)]) == [0.0]
    assert set(TASKS) >= {"word", "two_digit"}
