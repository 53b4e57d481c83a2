"""Older artifact versions lifted to the current one, in memory, before validation.

Every bump of a model's ``schema_version`` has one step here, keyed by the model's class name (the models
themselves are not imported: this module sits under every package that reads a file).  ``read_model`` and
``read_jsonl`` (``evalpipe.artifacts.io``) run the steps from the file's version up to the model's on the
parsed JSON and validate the result; the file on disk is never rewritten.  A file newer than the model is
refused before any step runs (``check_schema_version``).

What each bump changed, from the models' history (``git log -p`` on ``evalpipe/artifacts/schema/``, formerly
``evalpipe/schema/``): every change so far only added fields (or widened a ``Literal``), and each added field's
default says what an older writer meant — an A/A control, a gate basis, a ``--no-speed`` flag or a fleet watch
that did not exist then.  So the steps below set the version and change nothing else; each says why that is
right.  A bump that renames, removes, retypes or newly requires a field must transform the data in its step
(``tests/test_migrations.py`` fails when a bump has no step).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalpipe.errors import ArtifactError

Raw = dict[str, Any]


@dataclass(frozen=True)
class Step:
    """Lift ``model``'s JSON from ``from_version`` to ``from_version + 1``."""

    model: str
    from_version: int
    what_changed: str
    lift: Callable[[Raw], Raw] | None = None  # None: the added fields' defaults hold for the old writer


STEPS: tuple[Step, ...] = (
    Step(
        "CompareResult",
        1,
        "v2 (801d7a2): per block the Bonett-Price paired interval and test, A/B and A/A discordance, noise vs "
        "A/B, MDE, non_inferiority; run_aa/label_aa. All optional: a v1 file had no A/A control and no margin, "
        "so None is what it measured.",
    ),
    Step(
        "CompareResult",
        2,
        "v3 (d76b08a): a block's sequential result (generation.sequential). None: the block was not judged "
        "unit by unit; non_inferiority stayed the fixed 95 % interval, as v3 still wrote it.",
    ),
    Step(
        "CompareResult",
        3,
        "v4 (fe10a91): non_inferiority.basis/alpha/critical_value and the block's operating characteristic. "
        "None is the model's documented reading of an older file: the fixed 95 % interval (z = 1.96), which is "
        "the rule v1-v3 judged by; its stored sentence says so.",
    ),
    Step(
        "RunRecord",
        1,
        "v2 (92bd3da): no_speed and speed_gate_waived. False: v1 had no --no-speed, so the config's speed "
        "section (if any) ran.",
    ),
    Step(
        "ExtensionRecord",
        1,
        "v2 (21ea59c): prior_generations. Empty: the extended run is read as one generation, as v1 runs were "
        "judged (the model's documented reading).",
    ),
    Step(
        "Summary",
        1,
        "v2 (fd21561, fd1b81e, 92bd3da): explorer, reviews, speed_not_measured, the fleet's watch events. "
        "None/empty: v1 had no explorer, no review export, no --no-speed and no fleet watch.",
    ),
    Step(
        "Summary",
        2,
        "v3: speed.seed_workload renamed lead_workload (the workload whose throughput fills the results table: "
        "'seed' meant the random seed elsewhere). The value moves unchanged.",
        lift=lambda raw: _renamed_speed_workload(raw),
    ),
    Step(
        "FleetRecord",
        1,
        "v2 (fd21561): the watch during the evaluation (events, earlier_events, watch_interval_s). Empty/None: "
        "v1 took the start and end snapshots only.",
    ),
)

def _renamed_speed_workload(raw: Raw) -> Raw:
    speed = raw.get("speed")
    if isinstance(speed, dict) and "seed_workload" in speed:
        speed = {("lead_workload" if k == "seed_workload" else k): v for k, v in speed.items()}
        return {**raw, "speed": speed}
    return raw


#: (model class name, from_version) -> step
TABLE: dict[tuple[str, int], Step] = {(s.model, s.from_version): s for s in STEPS}


def upgrade(path: Path, raw: Any, model: str, current: int) -> Any:
    """``raw`` (parsed JSON of ``path``) lifted to ``current``; other values unchanged.  ``raw`` is not
    mutated: every step works on a copy."""
    if not isinstance(raw, dict):
        return raw
    found = raw.get("schema_version")
    if not isinstance(found, int) or found >= current:
        return raw
    out: Raw = dict(raw)
    for version in range(found, current):
        step = TABLE.get((model, version))
        if step is None:
            raise ArtifactError(
                f"{path}: {model} schema_version {found} cannot be read: no migration from version {version} "
                f"to {version + 1} (this evalpipe writes {current})"
            )
        if step.lift is not None:
            out = step.lift(out)
        out["schema_version"] = version + 1
    return out
