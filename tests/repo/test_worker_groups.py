"""The xdist worker groups (``tests/helpers/worker_groups.py``): a module stays on one worker, the readers of a
shared session run share one, and a reader missing from the list is caught at collection."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from helpers.worker_groups import READERS, SLOW_FIRST, group_of, slow_first, unlisted_readers


def _item(nodeid: str, *fixtures: str) -> pytest.Item:
    return SimpleNamespace(nodeid=nodeid, fixturenames=list(fixtures))  # type: ignore[return-value]  # duck-typed


def test_a_module_is_its_own_group_and_the_readers_of_a_shared_run_share_its_group() -> None:
    assert group_of("tests/report/test_report.py::test_x[a]") == group_of("tests/report/test_report.py::test_y")
    assert group_of("tests/report/test_report.py::test_x") == "tests/report/test_report.py"
    for run, modules in READERS.items():
        assert {group_of(f"{m}::test_x") for m in modules} == {run}


def test_an_unlisted_reader_is_named() -> None:
    listed = READERS["paired_demo"][0]
    items = [
        _item(f"{listed}::test_a", "paired_demo", "tmp_path"),
        _item("tests/test_new.py::test_b[x]", "registry_controls"),
        _item("tests/test_new.py::test_c", "tmp_path"),
    ]
    assert unlisted_readers(items) == ["tests/test_new.py: registry_controls"]
    assert unlisted_readers(items[:1] + items[2:]) == []


def test_slow_groups_come_first_and_the_rest_keep_their_order() -> None:
    shared = READERS[SLOW_FIRST[2]][0]  # a reader of a shared run sorts with its run
    ids = ["tests/test_a.py::t1", f"{SLOW_FIRST[1]}::t2", "tests/test_b.py::t3", f"{shared}::t4",
           f"{SLOW_FIRST[0]}::t5", "tests/test_a.py::t6", f"{SLOW_FIRST[1]}::t7"]  # fmt: skip
    ordered = [item.nodeid for item in slow_first([_item(i) for i in ids])]
    assert ordered == [ids[4], ids[1], ids[6], ids[3], ids[0], ids[2], ids[5]]
