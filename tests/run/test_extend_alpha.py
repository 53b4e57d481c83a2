"""``--extend`` keeps the gate's α: a fixed design's look is never taken twice (``evalpipe.run.extend``).

A fixed-design gate spent all of α at its first run's look; extending it is refused with one line naming
``generation.sequential``, the way to make a gated run extendable.  A sequential run extends only under the α
split and margin it was started with (the e-processes continue; a changed split or margin is a new test on the
same units).  The type I of the paths that remain is ``tests/stats/test_gate_error_rates.py``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers.config import config_data, entry, write_config

from evalpipe.artifacts import RunDir, write_model
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError
from evalpipe.resolve import resolve
from evalpipe.run.extend import check_alpha_kept, check_versions_kept, extend_stage

BENCH = "gsm8k"
MARGIN = {"non_inferiority_margin_pts": {BENCH: 10.0}}
SEQ = {"sequential": {"alpha": 0.025, "sequential_share": 0.5}}


def _sections(generation: dict[str, Any] | None, gates: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"benchmarks": [entry(BENCH)]}
    if generation is not None:
        out["generation"] = generation
    if gates is not None:
        out["gates"] = gates
    return out


def _cfg(generation: dict[str, Any] | None = None, gates: dict[str, Any] | None = None) -> RunConfig:
    return RunConfig.model_validate(config_data(**_sections(generation, gates)))


def _old_run(
    tmp_path: Path, generation: dict[str, Any] | None = None, gates: dict[str, Any] | None = None
) -> RunDir:
    root = tmp_path / "old"
    write_config(root / "config.yaml", **_sections(generation, gates))
    (root / "manifest.json").write_text("{}", encoding="utf-8")
    return RunDir(root)


def test_a_fixed_design_gate_is_refused_in_one_line_naming_the_sequential_rule(tmp_path: Path) -> None:
    old = _old_run(tmp_path, gates=MARGIN)
    with pytest.raises(ConfigError) as caught:
        extend_stage(resolve(_cfg(gates=MARGIN)), old.root, dataset_root=None, out=None, allow_drift=False)
    message = str(caught.value)
    assert "\n" not in message and "generation.sequential" in message and "fixed design" in message
    assert message.startswith(f"--extend {old.root}: ")


def test_adding_the_sequential_rule_at_the_extension_is_refused(tmp_path: Path) -> None:
    """The old run's fixed look already spent α: a sequential rule declared afterwards cannot undo it."""
    old = _old_run(tmp_path, gates=MARGIN)
    with pytest.raises(ConfigError, match="the old run gates a non-inferiority margin with a fixed design"):
        check_alpha_kept(_cfg(generation=SEQ, gates=MARGIN), old)


@pytest.mark.parametrize(
    ("generation", "gates"),
    [
        ({"sequential": {"alpha": 0.025, "sequential_share": 1.0}}, MARGIN),
        ({"sequential": {"alpha": 0.05, "sequential_share": 0.5}}, MARGIN),
        (SEQ, {"non_inferiority_margin_pts": {BENCH: 12.0}}),
    ],
)
def test_a_changed_split_or_margin_is_refused(
    tmp_path: Path, generation: dict[str, Any], gates: dict[str, Any]
) -> None:
    old = _old_run(tmp_path, generation=SEQ, gates=MARGIN)
    with pytest.raises(ConfigError, match="must be the old run's"):
        check_alpha_kept(_cfg(generation=generation, gates=gates), old)


def test_the_same_sequential_design_and_an_ungated_run_extend(tmp_path: Path) -> None:
    check_alpha_kept(
        _cfg(generation=SEQ, gates=MARGIN), _old_run(tmp_path / "a", generation=SEQ, gates=MARGIN)
    )
    check_alpha_kept(_cfg(), _old_run(tmp_path / "b"))  # no margin: no α to spend (an MDE-only extension)


def _with_versions(run: RunDir, versions: dict[str, str] | None) -> RunDir:
    """The old run's run.json recording ``versions`` (None: a run.json v2, which recorded none)."""
    record = RunRecord(
        run_id="old", config_name="c", config_path="", config_sha256="0" * 64, created_at="t",
        evalpipe_version="0", dataset_locations={}, benchmark_versions=versions or {},
    )  # fmt: skip
    write_model(run.run_record, record)
    return run


def test_a_benchmark_whose_version_changed_since_the_old_run_is_not_extended(tmp_path: Path) -> None:
    old = _with_versions(_old_run(tmp_path), {BENCH: "0"})
    with pytest.raises(ConfigError) as refused:
        check_versions_kept(resolve(_cfg()), old)
    assert refused.value.message.endswith("a benchmark changed version since the old run; start a new run")
    assert refused.value.details == [f"{BENCH}: version 0 in the old run, 1 now"]
    check_versions_kept(resolve(_cfg()), _with_versions(_old_run(tmp_path / "same"), {BENCH: "1"}))
    check_versions_kept(resolve(_cfg()), _with_versions(_old_run(tmp_path / "older"), None))  # unknown: not checked
