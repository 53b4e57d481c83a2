"""``JsonlTail``: a log read as another process appends to it gives, over its reads, exactly the rows
``read_jsonl`` gives for the whole file — each complete line once, a line still being written on a later
read, a replaced or shortened file from its start."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evalpipe.artifacts import JsonlTail, read_jsonl
from evalpipe.artifacts.schema.sequential import SequenceRecord
from evalpipe.errors import ArtifactError


def _line(index: int, correct: float = 1.0) -> bytes:
    return (
        SequenceRecord(subset="main", index=index, correct=correct, sent=True).model_dump_json().encode()
        + b"\n"
    )


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)


def test_each_read_gives_the_lines_appended_since_and_a_partial_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "arm.jsonl"
    tail = JsonlTail(path, SequenceRecord)
    assert tail.read() == (False, [])  # no file yet
    _append(path, _line(0) + _line(1))
    restarted, rows = tail.read()
    assert not restarted and [r.index for r in rows] == [0, 1]
    assert tail.read() == (False, [])  # nothing new: nothing parsed again
    half = _line(2)
    _append(path, half[:10])  # a line being written
    assert tail.read() == (False, [])
    _append(path, half[10:] + b"\n" + _line(4))  # its end, a blank line and one more
    restarted, rows = tail.read()
    assert not restarted and [r.index for r in rows] == [2, 4]
    assert [r.index for r in read_jsonl(path, SequenceRecord)] == [0, 1, 2, 4]


def test_a_replaced_or_shortened_file_is_read_from_its_start(tmp_path: Path) -> None:
    path = tmp_path / "arm.jsonl"
    tail = JsonlTail(path, SequenceRecord)
    path.write_bytes(_line(0) + _line(1))
    assert [r.index for r in tail.read()[1]] == [0, 1]
    replacement = tmp_path / "new.jsonl"
    replacement.write_bytes(_line(0, 0.0) + _line(1, 0.0) + _line(2, 0.0))
    os.replace(replacement, path)  # another inode
    restarted, rows = tail.read()
    assert restarted and [(r.index, r.correct) for r in rows] == [(0, 0.0), (1, 0.0), (2, 0.0)]
    path.write_bytes(_line(7))  # the same inode, shorter
    restarted, rows = tail.read()
    assert restarted and [r.index for r in rows] == [7]
    path.unlink()
    assert tail.read() == (True, [])


def test_a_malformed_line_names_the_file_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "arm.jsonl"
    tail = JsonlTail(path, SequenceRecord)
    path.write_bytes(_line(0))
    tail.read()
    _append(path, b"{not json\n")
    with pytest.raises(ArtifactError, match=r"arm\.jsonl:2: malformed JSON line"):
        tail.read()
