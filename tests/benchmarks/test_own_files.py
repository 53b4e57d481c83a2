"""Your own dataset (``general_mcq``, ``general_qa``): ids, strata and the one-line refusals of bad files.

Every file here is invented in the test.  The contract test covers the bundled miniatures (ids stable,
hashes format-independent, answer-key controls through the pipeline); this file covers what the config
adds — the id and stratification columns — and the bad rows, in-process and through ``evalpipe sample``
(one line naming file, row and column; exit 2).
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalpipe.benchmarks import REGISTRY
from evalpipe.benchmarks.base import UserColumns
from evalpipe.errors import ConfigError, DataError
from evalpipe.hashing import sha256_json

REPO = Path(__file__).resolve().parents[2]

MCQ = [
    {"qid": "q1", "topic": "space", "question": "Which planet is largest?", "A": "Mars", "B": "Jupiter",
     "C": "Venus", "answer": "B"},
    {"qid": "q2", "topic": "space", "question": "Which star is closest to Earth?", "A": "The Sun",
     "B": "Sirius", "C": "Vega", "answer": "A"},
    {"qid": "q3", "topic": "math", "question": "What is 7 times 8?", "A": "54", "B": "56", "C": "64",
     "answer": "B"},
]  # fmt: skip


def _csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _mcq(columns: UserColumns = UserColumns()) -> Any:
    return REGISTRY["general_mcq"].with_columns(columns)


def _qa(columns: UserColumns = UserColumns()) -> Any:
    return REGISTRY["general_qa"].with_columns(columns)


def test_without_an_id_column_the_id_is_the_first_16_hex_of_the_canonical_sha256(tmp_path: Path) -> None:
    path = _csv(tmp_path / "mine.csv", MCQ)
    data = _mcq().load_local(path, None)
    for rec, row in zip(data.eval.records, MCQ, strict=True):
        assert rec.canonical == row  # every column, as read (a CSV gives text)
        assert rec.source_id == sha256_json(row)[:16] == rec.record_sha256[:16]
        assert rec.stratum_fields == {"column": None}


def test_id_and_stratify_columns_name_ids_and_strata(tmp_path: Path) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    _csv(folder / "default_val.csv", MCQ)
    data = _mcq(UserColumns("qid", "topic")).load_local(folder, None)
    assert [r.source_id for r in data.eval.records] == ["q1", "q2", "q3"]
    assert [r.stratum_fields["column"] for r in data.eval.records] == ["space", "space", "math"]
    assert data.fewshot is None  # no default_dev file


def test_general_qa_reads_question_or_query_and_answer_or_response(tmp_path: Path) -> None:
    rows = [{"question": "Name a primary color.", "answer": "red"}, {"query": "Say hi.", "response": "hi"}]
    data = _qa().load_local(_jsonl(tmp_path / "default.jsonl", rows), None)
    assert [r.canonical for r in data.eval.records] == rows
    spec = REGISTRY["general_qa"]
    assert [spec.question_text(r.raw) for r in data.eval.records] == ["Name a primary color.", "Say hi."]


def _bad_mcq(tmp_path: Path, change: dict[str, Any], row: int = 1) -> Path:
    rows = [dict(r) for r in MCQ]
    rows[row].update(change)
    return _csv(tmp_path / "bad.csv", rows)


@pytest.mark.parametrize(
    ("change", "columns", "message"),
    [
        ({"answer": ""}, UserColumns(), r"bad.csv:3: row 2, column 'answer': missing answer$"),
        ({"question": "  "}, UserColumns(), r"bad.csv:3: row 2, column 'question': empty question$"),
        ({"answer": "D"}, UserColumns(), r"row 2, column 'answer': answer 'D' is not one of the option"),
        ({"B": ""}, UserColumns(), r"bad.csv:3: row 2, column 'B': empty option$"),
        ({"qid": "q1"}, UserColumns("qid"), r"bad.csv:3: row 2, column 'qid': duplicate id 'q1' \(first at line 2\)"),
        ({"qid": ""}, UserColumns("qid"), r"bad.csv:3: row 2, column 'qid': empty id"),
        ({"topic": ""}, UserColumns(None, "topic"), r"row 2, column 'topic': empty stratum"),
        (dict(MCQ[0]), UserColumns(), r"bad.csv:3: row 2: the same record as line 2 \(duplicate id [0-9a-f]{16}"),
    ],
)  # fmt: skip
def test_bad_mcq_rows_name_file_row_and_column(
    change: dict[str, Any], columns: UserColumns, message: str, tmp_path: Path
) -> None:
    with pytest.raises(DataError, match=message):
        _mcq(columns).load_local(_bad_mcq(tmp_path, change), None)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"question": "Q?", "answer": "a"}, {"question": "", "answer": "b"}],
         r"bad.jsonl:2: row 2, column 'question': empty question"),
        ([{"question": "Q?", "answer": "a"}, {"question": "R?", "answer": None}],
         r"bad.jsonl:2: row 2, column 'answer': missing answer"),
        ([{"messages": [{"role": "user", "content": "hi"}], "answer": "a"}],
         r"bad.jsonl:1: row 1, column 'messages': chat-format rows are not supported"),
    ],
)  # fmt: skip
def test_bad_qa_rows_name_file_row_and_column(
    rows: list[dict[str, Any]], message: str, tmp_path: Path
) -> None:
    with pytest.raises(DataError, match=message):
        _qa().load_local(_jsonl(tmp_path / "bad.jsonl", rows), None)


def test_columns_apply_only_to_your_own_files() -> None:
    with pytest.raises(ConfigError, match=r"source\.id_column/stratify_column apply only"):
        REGISTRY["gsm8k"].with_columns(UserColumns("id"))


def _config(tmp_path: Path, source: dict[str, Any], sampling: dict[str, Any] | None = None) -> Path:
    raw = yaml.safe_load((REPO / "configs" / "demo.yaml").read_text(encoding="utf-8"))
    raw.pop("variants", None)
    raw.pop("gates", None)
    raw.update(
        name="own-files",
        output_root=str(tmp_path / "results"),
        benchmarks=[
            {
                "name": "general_mcq",
                "few_shot": 0,
                "source": source,
                "sampling": sampling or {"stratify_by": "none", "total": 2, "allocation": "uniform"},
            }
        ],
    )
    path = tmp_path / "own.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


def _evalpipe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


def test_a_bad_file_stops_evalpipe_sample_with_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = _bad_mcq(tmp_path, {"qid": "q1"})
    proc = _evalpipe("sample", str(_config(tmp_path, {"local": str(bad), "id_column": "qid"})))
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{bad}:3: row 2, column 'qid': duplicate id 'q1'" in lines[0], proc.stderr


def test_evalpipe_sample_stratifies_by_the_configured_column(tmp_path: Path) -> None:
    good = _csv(tmp_path / "mine.csv", MCQ)
    plan = {"stratify_by": "column", "per_stratum": 1}
    source = {"local": str(good), "id_column": "qid", "stratify_column": "topic"}
    out = tmp_path / "run"
    proc = _evalpipe("sample", str(_config(tmp_path, source, plan)), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    entries = manifest["entries"]
    assert sorted(e["stratum"] for e in entries) == ["math", "space"]
    assert {e["source_id"] for e in entries} <= {"q1", "q2", "q3"}


def test_config_refuses_columns_for_a_fixed_schema_and_a_column_plan_without_column(tmp_path: Path) -> None:
    from evalpipe.resolve import load_run

    good = _csv(tmp_path / "mine.csv", MCQ)
    with pytest.raises(ConfigError, match="stratify_column names no column"):
        load_run(_config(tmp_path, {"local": str(good)}, {"stratify_by": "column", "per_stratum": 1}))
    with pytest.raises(ConfigError, match="there is no hub copy"):
        load_run(_config(tmp_path, {"local": str(good), "hub": "someone/somewhere"}))


def test_verify_sample_rederives_your_file_and_sees_an_edit(tmp_path: Path) -> None:
    good = _csv(tmp_path / "mine.csv", MCQ)
    source = {"local": str(good), "id_column": "qid", "stratify_column": "topic"}
    out = tmp_path / "run"
    config = _config(tmp_path, source, {"stratify_by": "column", "per_stratum": 1})
    assert _evalpipe("sample", str(config), "--out", str(out)).returncode == 0
    same = _evalpipe("verify-sample", str(out))
    assert same.returncode == 0, same.stdout + same.stderr
    edited = [dict(r) for r in MCQ]
    for row in edited:
        row["question"] += " (edited)"
    _csv(good, edited)
    changed = _evalpipe("verify-sample", str(out))
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "general_mcq: dataset fingerprint" in changed.stdout and "record_sha256" in changed.stdout
