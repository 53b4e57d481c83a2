"""Benchmarks described in YAML (``evalpipe/benchmarks/described``): the description read and refused, rows
read and refused, and registration.  Through the pipeline (EvalScope's general_qa reading, its exact_match
scoring, the answer key's positive and negative controls) the built-in ``unit_facts`` runs the contract
battery of every registered benchmark (``test_benchmark_contract.py``) and ``evalpipe demo``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.benchmarks import REGISTRY, _build, benchmark
from evalpipe.benchmarks.described import (
    DESCRIPTIONS_ENV,
    DescribedQA,
    builtin,
    from_environment,
    read_description,
)
from evalpipe.errors import ConfigError, DataError

DESCRIPTION = """\
schema_version: 1
name: {name}
display_name: My QA
version: "3"
scoring: exact_match
strata: [topic]
"""


def _folder(tmp_path: Path, name: str = "my_qa", rows: list[dict[str, object]] | None = None) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "benchmark.yaml").write_text(DESCRIPTION.format(name=name), encoding="utf-8")
    rows = rows if rows is not None else [
        {"question": "Two plus two?", "answer": "4", "topic": "sum"},
        {"question": "Capital letter after A?", "answer": "B", "topic": "letters"},
    ]
    (folder / "default_test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_the_builtin_description_is_registered_with_its_version() -> None:
    spec = benchmark("unit_facts")
    assert isinstance(spec, DescribedQA) and [b.meta.name for b in builtin()] == ["unit_facts"]
    assert spec.meta.version == "1" and spec.meta.primary_metric == "exact_match"
    assert spec.meta.stratifications == ("topic",) and spec.bundled_dir() == spec.folder
    data = spec.load_local(spec.bundled_dir(), None)
    assert [r.source_id for r in data.eval.records][:2] == ["uf-01", "uf-02"]
    assert list(REGISTRY).index("unit_facts") > list(REGISTRY).index("kv_probe")  # after the modules


def test_a_folder_is_a_benchmark(tmp_path: Path) -> None:
    spec = DescribedQA(read_description(_folder(tmp_path)), tmp_path / "my_qa")
    data = spec.load_local(spec.folder, None)
    assert [r.stratum_fields for r in data.eval.records] == [{"topic": "sum"}, {"topic": "letters"}]
    assert all(len(r.source_id) == 16 for r in data.eval.records)  # no id_field: sha256 of the row
    items = spec.key_items(data, {}, tmp_path / "solutions.json")
    assert (items[0].needle, items[0].gold, items[0].answer) == ("Two plus two?", "4", "4")
    with pytest.raises(ConfigError, match=r"my_qa is described by .*benchmark.yaml: its data is a local folder"):
        spec.load_hub(lambda subset, split: [], "hub", None, [])


def test_an_unknown_key_or_scoring_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    path = folder / "benchmark.yaml"
    path.write_text(DESCRIPTION.format(name="my_qa") + "prompt: Answer {question}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        read_description(folder)
    assert caught.value.message == f"{path}: prompt: Extra inputs are not permitted"
    path.write_text(DESCRIPTION.format(name="my_qa").replace("exact_match", "rouge"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"benchmark.yaml: scoring: Input should be 'exact_match'"):
        read_description(path)


@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ({"question": "Q?", "answer": "", "topic": "t"}, "row 1, column 'answer': answer must be non-empty text"),
        ({"question": "Q?", "answer": 4, "topic": "t"}, "row 1, column 'answer': answer must be non-empty text"),
        ({"question": "Q?", "answer": "4"}, "row 1, column 'topic': empty stratum"),
    ],
)
def test_a_bad_row_is_refused_naming_file_line_and_column(
    tmp_path: Path, row: dict[str, object], problem: str
) -> None:
    folder = _folder(tmp_path, rows=[row])
    spec = DescribedQA(read_description(folder), folder)
    with pytest.raises(DataError) as caught:
        spec.load_local(folder, None)
    assert caught.value.message == f"{folder / 'default_test.jsonl'}:1: {problem}"


def test_the_environment_adds_descriptions_and_a_taken_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = _folder(tmp_path)
    monkeypatch.setenv(DESCRIPTIONS_ENV, f"{mine}, {mine / 'benchmark.yaml'}")
    assert [b.meta.name for b in from_environment()] == ["my_qa", "my_qa"]
    monkeypatch.setenv(DESCRIPTIONS_ENV, str(mine))
    assert list(_build())[-1] == "my_qa"
    taken = _folder(tmp_path, "gsm8k")
    monkeypatch.setenv(DESCRIPTIONS_ENV, str(taken))
    with pytest.raises(ConfigError, match=r"benchmark 'gsm8k' is registered twice"):
        _build()
    monkeypatch.setenv(DESCRIPTIONS_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(ConfigError, match=r"nowhere: no benchmark.yaml there"):
        _build()


def test_registering_the_adapter_loads_no_other_evalscope_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    """EvalScope's registry loads every adapter module it ships (~1,400 modules, ~1.2 s of CPU) for ``get`` of
    a name its index does not list: registering a described benchmark must not ask it that way."""
    from evalscope.api.registry import BENCHMARK_REGISTRY

    from evalpipe.benchmarks.described.adapter import register

    def load_everything() -> None:
        raise AssertionError("every EvalScope adapter module was loaded")

    monkeypatch.setattr(BENCHMARK_REGISTRY, "_resolve_all", load_everything)
    name = "described_registration_probe"
    try:
        register(name, "Probe", "registered by a test")
        register(name, "Probe", "registered by a test")  # a second call finds it registered
        assert BENCHMARK_REGISTRY.get(name).pretty_name == "Probe"
    finally:
        dict.pop(BENCHMARK_REGISTRY, name, None)
