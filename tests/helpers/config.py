"""The one way tests build a run config: ``write_config(path, …)`` writes the YAML and returns its path.

A minimal valid config — one GSM8K record, an SGLang server section, the scripted server's model name —
where every part can be overridden: ``model`` and ``server`` are merged over the defaults (or the base's),
``benchmarks`` and every other top-level section (``name``, ``generation``, ``gates``, ``output_root``,
``variants``…) replace them.  ``base`` starts from a shipped config (``configs/demo.yaml``,
``configs/glm-fp8.yaml``) instead of the defaults.  ``config_data`` is the same document as a dict, for the
tests that validate a config in memory (``RunConfig.model_validate``) without a file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

#: The served model name of the scripted test server (tests/scripted_server.py) and of the defaults here.
SERVED = "scripted-model"


def entry(name: str, *, total: int = 1, **fields: Any) -> dict[str, Any]:
    """One ``benchmarks:`` entry sampling ``total`` records uniformly; ``fields`` add or replace keys
    (``subset``, ``few_shot``, ``source``, ``fingerprint``, ``sampling``…)."""
    return {
        "name": name,
        "sampling": {"stratify_by": "none", "total": total, "allocation": "uniform"},
        **fields,
    }


def config_data(
    *,
    base: Path | None = None,
    model: Mapping[str, Any] | None = None,
    server: Mapping[str, Any] | None = None,
    benchmarks: Sequence[Mapping[str, Any]] | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """The config document: ``base`` (a YAML file) or the defaults, with the overrides applied."""
    if base is not None:
        data: dict[str, Any] = yaml.safe_load(base.read_text(encoding="utf-8"))
    else:
        data = {
            "schema_version": 1,
            "name": "test-run",
            "model": {"path": "/models/none", "served_name": SERVED},
            "server": {"kind": "sglang"},
            "benchmarks": [entry("gsm8k", subset="main")],
        }
    data["model"] = {**data["model"], **(model or {})}
    data["server"] = {**data["server"], **(server or {})}
    if benchmarks is not None:
        data["benchmarks"] = [dict(b) for b in benchmarks]
    data.update(sections)
    return data


def write_config(
    path: Path,
    *,
    base: Path | None = None,
    model: Mapping[str, Any] | None = None,
    server: Mapping[str, Any] | None = None,
    benchmarks: Sequence[Mapping[str, Any]] | None = None,
    **sections: Any,
) -> Path:
    """Write ``config_data(…)`` to ``path`` as YAML (parents created) and return ``path``."""
    data = config_data(base=base, model=model, server=server, benchmarks=benchmarks, **sections)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path
