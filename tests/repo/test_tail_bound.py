"""perf/tail_bound.py's processor-sharing model against hand-computed schedules."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "perf" / "tail_bound.py"
_spec = importlib.util.spec_from_file_location("tail_bound", _PATH)
assert _spec is not None and _spec.loader is not None
tail_bound = importlib.util.module_from_spec(_spec)
sys.modules["tail_bound"] = tail_bound
_spec.loader.exec_module(tail_bound)


def test_a_lone_tail_per_benchmark_is_what_pipelining_removes_on_a_linear_server() -> None:
    # two benchmarks, each 3 short answers (1 token) and one long (10), 4 slots, a GPU-like server:
    # a linear server gives every request 1 token per tick however many are in flight.  Sequential: each
    # benchmark ends when its long answer does, at 10 → 20.  Pipelined (queue a10 b10 a1 b1 a1 b1 a1 b1): both
    # long answers start at once, the short ones take the other two slots three ticks in turn → 10
    work = {"a": [10, 1, 1, 1], "b": [10, 1, 1, 1]}
    sequential, pipelined = tail_bound.bound(work, 4, [1.0, 2.0, 3.0, 4.0])
    assert sequential == pytest.approx(20.0)
    assert pipelined == pytest.approx(10.0)


def test_on_a_server_with_flat_throughput_no_schedule_saves_anything() -> None:
    work = {"a": [10, 1, 1, 1], "b": [7, 3, 2]}
    sequential, pipelined = tail_bound.bound(work, 4, [1.0, 1.0, 1.0, 1.0])
    assert pipelined == pytest.approx(sequential) == pytest.approx(25.0)  # 25 tokens at 1 token per tick
