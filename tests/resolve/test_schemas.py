"""Every published JSON Schema in audits/ matches the model it is generated from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalpipe.resolve.published import PUBLISHED, render


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_committed_schema_in_sync(name: str, repo_root: Path) -> None:
    committed = repo_root / "audits" / name
    assert committed.is_file(), f"audits/{name} missing: run `make schemas`"
    assert committed.read_text() == render(PUBLISHED[name]), f"audits/{name} is stale: run `make schemas`"


#: compare.json's only free-text strings: names, paths, ids and hashes a reader looks up.  Every other string
#: is a Literal; the sentences are made where they are shown (evalpipe.report), never stored.
COMPARE_NAMES = {
    "CompareResult": {"run_a", "run_b", "run_aa", "label_a", "label_b", "label_aa", "manifest_sha256"},
    "PairedBenchmark": {"benchmark", "length", "members"},
    "Flip": {"benchmark", "source_id", "stratum", "failure_a", "failure_b"},
    "AttemptSeedCheck": {"differing_across_arms"},
    "PlacementCell": {"placement"},
    # the numerics block: the arms' labels, prompt ids, placements and group names
    "NumericsComparison": {"label_test", "label_control", "label_aa", "missing", "mismatched"},
    "NumericsPair": {"id", "placement"},
    "NumericsGroup": {"name"},
}


def _free_text(spec: dict[str, Any]) -> bool:
    """A string (or a list or union holding one) that is not an enum or a constant."""
    if spec.get("type") == "string" and "enum" not in spec and "const" not in spec:
        return True
    nested = [*spec.get("anyOf", []), *([spec["items"]] if isinstance(spec.get("items"), dict) else [])]
    return any(_free_text(x) for x in nested)


def test_compare_json_holds_no_sentence() -> None:
    from evalpipe.artifacts.schema.compare import CompareResult

    schema = CompareResult.model_json_schema(mode="validation")
    found: dict[str, set[str]] = {}
    for name, model in [("CompareResult", schema), *schema["$defs"].items()]:
        for field, spec in model.get("properties", {}).items():
            if _free_text(spec):
                found.setdefault(name, set()).add(field)
    assert found == COMPARE_NAMES
