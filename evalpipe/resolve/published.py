"""JSON Schemas published in ``audits/`` (kept in sync with the models by a test).

The models name plugins with plain strings (``evalpipe.config.registry_names``); a published schema lists the
names registered here — each string marked with the registry it names gets that registry's names as its
``enum`` — so an editor validating a config against ``audits/config.schema.json`` knows every benchmark and
server kind, as it did when those fields were literals.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalpipe.artifacts import atomic_write_text
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.artifacts.schema.fleet import FleetRecord
from evalpipe.artifacts.schema.manifest import Manifest
from evalpipe.artifacts.schema.reviews import ReviewsFile
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.speed import SpeedArtifact
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.benchmarks import names, stratifications
from evalpipe.config.models import RunConfig
from evalpipe.config.registry_names import REGISTRY_MARKER
from evalpipe.server.kinds.registry import kinds
from evalpipe.speed.clients.registry import clients


def registry_names() -> dict[str, tuple[str, ...]]:
    """Each registry's names, in registry order (the order the schema's ``enum`` lists them)."""

    return {
        "benchmarks": names(),
        "stratifications": stratifications(),
        "server_kinds": tuple(k.name for k in kinds()),
        "speed_clients": tuple(c.name for c in clients()),
    }


def fill_registry_names(schema: Any, names: dict[str, tuple[str, ...]]) -> Any:
    """``schema`` with every registry-marked string given its registry's names as ``enum`` (marker removed)."""
    if isinstance(schema, list):
        return [fill_registry_names(v, names) for v in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: fill_registry_names(v, names) for k, v in schema.items() if k != REGISTRY_MARKER}
    if REGISTRY_MARKER in schema:
        out["enum"] = list(names[schema[REGISTRY_MARKER]])
    return out


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    filled: dict[str, Any] = fill_registry_names(model.model_json_schema(mode="validation"), registry_names())
    return filled


def config_schema() -> dict[str, Any]:

    schema = _schema(RunConfig)
    with_kind_settings(schema)
    return schema


def with_kind_settings(schema: dict[str, Any]) -> None:
    """``schema`` (the config's) told what ``server.settings`` holds for each registered kind: one
    ``if kind is K then settings is K's settings_model`` per kind, the models under ``$defs`` — so an editor
    checks the settings the resolve step will."""

    defs = schema.setdefault("$defs", {})
    rules = []
    for kind in kinds():
        model = kind.settings_model
        own = model.model_json_schema(mode="validation", ref_template="#/$defs/{model}")
        defs.update(own.pop("$defs", {}))
        defs.setdefault(model.__name__, own)
        rules.append(
            {
                "if": {"properties": {"kind": {"const": kind.name}}, "required": ["kind"]},
                "then": {"properties": {"settings": {"$ref": f"#/$defs/{model.__name__}"}}},
            }
        )
    defs["ServerConfig"]["allOf"] = rules


def manifest_schema() -> dict[str, Any]:

    return _schema(Manifest)


def run_schema() -> dict[str, Any]:

    return _schema(RunRecord)


def summary_schema() -> dict[str, Any]:

    return _schema(Summary)


def compare_schema() -> dict[str, Any]:

    return _schema(CompareResult)


def context_fit_schema() -> dict[str, Any]:

    return _schema(ContextFit)


def fleet_schema() -> dict[str, Any]:

    return _schema(FleetRecord)


def speed_schema() -> dict[str, Any]:

    return _schema(SpeedArtifact)


def speed_compare_schema() -> dict[str, Any]:

    return _schema(SpeedComparison)


def reviews_schema() -> dict[str, Any]:

    return _schema(ReviewsFile)


# file name in audits/ → schema builder; later stages add theirs here.
PUBLISHED: dict[str, Callable[[], dict[str, Any]]] = {
    "config.schema.json": config_schema,
    "manifest.schema.json": manifest_schema,
    "run.schema.json": run_schema,
    "compare.schema.json": compare_schema,
    "summary.schema.json": summary_schema,
    "context_fit.schema.json": context_fit_schema,
    "fleet.schema.json": fleet_schema,
    "speed.schema.json": speed_schema,
    "speed_compare.schema.json": speed_compare_schema,
    "reviews.schema.json": reviews_schema,
}


def render(builder: Callable[[], dict[str, Any]]) -> str:
    return json.dumps(builder(), indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def write_all(directory: Path) -> list[Path]:

    written = []
    for name, builder in PUBLISHED.items():
        path = Path(directory) / name
        atomic_write_text(path, render(builder))
        written.append(path)
    return written
