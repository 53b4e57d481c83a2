"""``evalpipe benchmarks``: every registered benchmark, with its adapter, id rule, strata, local layout and
answer-key coverage — derived from the registry, so a newly registered module appears without an edit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalpipe.benchmarks import REGISTRY, names

REPO = Path(__file__).resolve().parents[2]


def test_lists_every_registered_benchmark_with_its_facts() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "benchmarks", "--json"],
        capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["name"] for r in rows] == list(names())
    for row in rows:
        meta = REGISTRY[row["name"]].meta
        assert row["adapter"].startswith(meta.name)
        assert row["id_rule"] == meta.id_rule and row["id_rule"]  # every built-in module states its rule
        assert row["local_layout"] == meta.local_layout and row["local_layout"]
        assert row["strata"] == list(meta.stratifications)
        assert row["bundled_records"] > 0
        assert row["answer_key"] == f"yes: {row['bundled_records']}/{row['bundled_records']} bundled items"


def test_table_names_each_benchmark() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.entry", "benchmarks"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env={"COLUMNS": "250", "PATH": ""},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for name in names():
        assert name in proc.stdout
    assert "Record ID" in proc.stdout and "source.id_column" in proc.stdout
