"""What a paired run hands the command line (``evalpipe.run.variants``), without running one: which
comparison each variant's one audit cites when there are several controls, and the verdict that exits.
The paired demo (``test_aa_control_e2e``) checks the same on a real run with one control."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from evalpipe.artifacts import RunDir
from evalpipe.run.variants import PairedOutcome, _cite, _Cited


def test_with_two_controls_each_variant_cites_the_comparison_it_is_an_arm_of() -> None:
    cited: dict[str, _Cited] = {}
    with_b: Any = SimpleNamespace(name="test vs b")
    with_c: Any = SimpleNamespace(name="test vs c")
    _cite(cited, ("test", "b", "b_again"), with_b, None)
    _cite(cited, ("test", "c", None), with_c, None)
    assert {name: c.comparison.name for name, c in cited.items()} == {
        "test": "test vs b",  # the variant under test: its comparison with the first control
        "b": "test vs b",
        "b_again": "test vs b",  # the A/A arm of that comparison
        "c": "test vs c",
    }


def test_the_verdict_is_the_summary_with_the_worst_exit_code(tmp_path: Path) -> None:
    def result(code: int | None) -> Any:
        return SimpleNamespace(summary=None if code is None else SimpleNamespace(exit_code=code))

    outcome = PairedOutcome(RunDir(tmp_path), {"a": result(0), "b": result(3), "c": result(1)}, [])
    assert outcome.verdict is outcome.results["b"].summary
    assert PairedOutcome(RunDir(tmp_path), {"a": result(None)}, []).verdict is None
