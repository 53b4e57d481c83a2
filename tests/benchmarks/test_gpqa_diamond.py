"""GPQA-Diamond's choice order: evalpipe's re-derivation equals what EvalScope's adapter renders.

The adapter shuffles the four answers with a seed taken from sha256 of the stripped question (EvalScope
1.14 ``GPQAAdapter._process_input``); evalpipe records the order per index-map entry so a reviewer can
re-derive the letters.  Invented items only (GPQA's questions are never copied anywhere in evalpipe).
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers.registry_controls import RegistryControls

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.evalscope import IndexMap
from evalpipe.benchmarks import REGISTRY
from evalpipe.benchmarks.gpqa_diamond import choice_order, target_letter


def _adapter() -> Any:
    from evalscope.api.registry import get_benchmark
    from evalscope.config import TaskConfig

    return get_benchmark("gpqa_diamond", TaskConfig(datasets=["gpqa_diamond"]))


def _rows() -> list[dict[str, Any]]:
    spec = REGISTRY["gpqa_diamond"]
    return [dict(r.canonical) for r in spec.load_local(spec.bundled_dir(), None).eval.records]


def _invented(question: str) -> dict[str, Any]:
    return {
        "Question": question,
        "Correct Answer": " right ",
        "Incorrect Answer 1": "wrong one",
        "Incorrect Answer 2": "wrong two",
        "Incorrect Answer 3": "wrong three",
    }


@pytest.mark.parametrize("source", ["bundled", "many"])
def test_recorded_order_is_the_order_the_adapter_renders(source: str) -> None:
    adapter = _adapter()
    rows = _rows() if source == "bundled" else [_invented(f"  Invented question {i}?\n") for i in range(40)]
    orders = set()
    for row in rows:
        rendered = adapter._process_input(row)  # the adapter's own shuffle
        order = choice_order(row)
        assert rendered["choices"] == [str(row[f]).strip() for f in order]
        assert rendered["answer"] == target_letter(row) == "ABCD"[order.index("Correct Answer")]
        orders.add(tuple(order))
    if source == "many":
        assert len(orders) > 1  # the order does depend on the question


def test_order_depends_on_the_stripped_question_only() -> None:
    row = _invented("What is it?")
    assert choice_order(row) == choice_order({**row, "Question": "  What is it?\n"})
    assert choice_order(row) == choice_order({**row, "Correct Answer": "another text"})


def test_index_map_entry_carries_the_order() -> None:
    spec = REGISTRY["gpqa_diamond"]
    for row in _rows():
        assert spec.choice_order(row) == choice_order(row)
        assert sorted(choice_order(row)) == sorted(
            ["Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"]
        )


@pytest.mark.parametrize("name", ["gpqa_diamond"])
def test_run_records_the_rendered_order_and_scores_by_it(
    name: str, registry_controls: RegistryControls
) -> None:
    """Through the pipeline (the session's answer-key controls): every GPQA entry of index_map.json
    carries the order, and the positive control — whose letters come from that order — scores 1."""
    index_map = read_model(registry_controls.rundir("positive").index_map, IndexMap)
    rows = {r["Record ID"]: r for r in _rows()}
    entries = index_map.for_benchmark(name)
    assert entries and {e.source_id for e in entries} <= set(rows)
    for e in entries:
        assert e.choice_order == choice_order(rows[e.source_id])
    assert all(r.score == 1.0 for r in registry_controls.outcomes("positive", name))
