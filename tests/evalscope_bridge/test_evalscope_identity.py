"""Cache-row identity checks and cache repair (no EvalScope process needed)."""

from __future__ import annotations

import json
from pathlib import Path

from evalpipe.evalscope_bridge.identity import (
    Expected,
    check_row,
    check_subset_cache,
    contains_question,
    row_prompt_sha256,
    verify_and_repair,
)
from evalpipe.evalscope_bridge.layout import read_lines
from evalpipe.hashing import prompt_sha256

TEMPLATE = "{q}\nPlease reason step by step, and put your final answer within \\boxed{{}}."


def messages(question: str, answer: str, template: str = TEMPLATE) -> list[dict]:
    return [
        {"id": "u", "role": "user", "content": template.format(q=question), "source": None},
        {"id": "a", "role": "assistant", "content": answer, "source": "generate", "model": "m"},
    ]


def pred(index: int, question: str, answer: str, template: str = TEMPLATE) -> dict:
    return {
        "index": index,
        "model": "m",
        "model_output": {
            "id": f"r{index}",
            "choices": [{"message": {"role": "assistant", "content": answer}}],
        },
        "messages": messages(question, answer, template),
    }


def review(index: int, question: str, answer: str, template: str = TEMPLATE) -> dict:
    return {
        "index": index,
        "target": ["1"],
        "messages": messages(question, answer, template),
        "sample_score": {"score": {"value": {"acc": 1.0}, "main_score_name": "acc"}},
    }


def rendered_hash(question: str, template: str = TEMPLATE) -> str:
    return prompt_sha256([{"role": "user", "content": template.format(q=question)}])


QUESTIONS = ["How many apples?\r\nCount them.", "How many pears?", "How many plums?"]
EXPECTED = {i: Expected(f"id{i}", q, rendered_hash(q)) for i, q in enumerate(QUESTIONS)}


def write_jsonl(path: Path, rows: list[dict | bytes]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        for row in rows:
            fh.write(row if isinstance(row, bytes) else json.dumps(row, ensure_ascii=False).encode() + b"\n")


def test_question_check_normalises_line_endings() -> None:
    assert contains_question("Q: a\r\nb\n", "a\nb")
    assert contains_question("Q: a\nb", "a\r\nb")
    assert not contains_question("Q: a b", "a\nb")
    assert not contains_question(None, "a")


def test_prompt_hash_is_over_the_sent_messages_only() -> None:
    row = pred(0, "q", "answer text")
    assert row_prompt_sha256(row) == rendered_hash("q")
    assert row_prompt_sha256({**row, "messages": messages("q", "another answer")}) == rendered_hash("q")


def test_check_row_verdicts() -> None:
    q1 = QUESTIONS[1]
    good = pred(1, q1, "x")
    assert check_row(good, EXPECTED[1]).ok
    assert check_row(pred(1, QUESTIONS[2], "x"), EXPECTED[1]).reason == "question_mismatch"
    other_template = "Answer briefly.\n{q}"  # same question, different rendering (e.g. few-shot changed)
    v = check_row(pred(1, q1, "x", other_template), EXPECTED[1])
    assert (v.ok, v.reason) == (False, "prompt_hash_mismatch")
    assert v.found_prompt_sha256 == rendered_hash(q1, other_template)
    assert check_row(good, Expected("id1", q1, None)).reason == "no_recorded_hash"
    assert check_row(good, None).reason == "unknown_index"
    assert check_row(None, EXPECTED[1]).reason == "unreadable"


def test_subset_check_keeps_good_rows_drops_and_records_the_rest(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    revs = tmp_path / "r.jsonl"
    write_jsonl(
        preds,
        [
            pred(0, QUESTIONS[0], "apples"),  # CRLF question: identity holds after normalisation
            pred(1, QUESTIONS[2], "plums!"),  # moved: the answer to question 2 filed under index 1
            pred(2, QUESTIONS[2], "plums (first try)"),
            pred(2, QUESTIONS[2], "plums"),  # duplicate: the last valid one is kept
            pred(7, QUESTIONS[0], "beyond the subset"),
            b'{"index": 1, "model": "m", "mess',  # torn by a crash, then appended after
            b"\n",
        ],
    )
    write_jsonl(
        revs,
        [
            review(0, QUESTIONS[0], "apples"),
            review(1, QUESTIONS[2], "plums!"),
            review(2, QUESTIONS[2], "plums (first try)"),  # reviews a superseded prediction
        ],
    )
    original = preds.read_bytes()
    result = verify_and_repair("gsm8k", "main", preds, revs, EXPECTED)
    got = sorted((r.artifact, r.index, r.reason) for r in result.repairs)
    assert got == [
        ("prediction", 1, "question_mismatch"),
        ("prediction", 1, "unreadable"),
        ("prediction", 7, "unknown_index"),
        ("review", 1, "question_mismatch"),
        ("review", 2, "prediction_mismatch"),
    ]
    assert result.superseded == 1
    moved = next(r for r in result.repairs if r.artifact == "prediction" and r.reason == "question_mismatch")
    assert moved.expected_source_id == "id1"
    assert moved.expected_prompt_sha256 == EXPECTED[1].prompt_sha256
    assert moved.found_prompt_sha256 == rendered_hash(QUESTIONS[2])
    assert moved.found_content_sha256 is not None
    # the caches now hold only the verified rows, byte-for-byte as EvalScope wrote them
    kept = read_lines(preds)
    assert [(ln.index, ln.data["model_output"]["choices"][0]["message"]["content"]) for ln in kept] == [
        (0, "apples"),
        (2, "plums"),
    ]
    assert all(ln.raw in original for ln in kept)
    assert [ln.index for ln in read_lines(revs)] == [0]


def test_nothing_rewritten_when_every_row_verifies(tmp_path: Path) -> None:
    preds, revs = tmp_path / "p.jsonl", tmp_path / "r.jsonl"
    write_jsonl(preds, [pred(i, q, "a") for i, q in enumerate(QUESTIONS)])
    write_jsonl(revs, [review(i, q, "a") for i, q in enumerate(QUESTIONS)])
    before = (preds.stat().st_mtime_ns, revs.stat().st_mtime_ns)
    result = verify_and_repair("gsm8k", "main", preds, revs, EXPECTED)
    assert not result.repairs and not result.changed
    assert (preds.stat().st_mtime_ns, revs.stat().st_mtime_ns) == before


def test_missing_cache_files_are_no_repairs(tmp_path: Path) -> None:
    result = check_subset_cache("gsm8k", "main", [], [], EXPECTED)
    assert result.repairs == [] and result.kept_predictions == []
    assert not verify_and_repair(
        "gsm8k", "main", tmp_path / "none.jsonl", tmp_path / "no.jsonl", EXPECTED
    ).repairs
