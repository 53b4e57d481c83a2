"""A module's published population (``BenchmarkMeta.population``: what `evalpipe plan` plans from without the
data) and the shipped sampler that takes "every problem" of it (`samplers/<name>.yaml`, `stratify_by: none`)
state the same count: a sampler asking for fewer would silently leave problems out, one asking for more would
stop the run."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from evalpipe.benchmarks import REGISTRY

SAMPLERS = Path(__file__).resolve().parents[2] / "samplers"


def test_every_all_problems_sampler_matches_its_modules_population() -> None:
    checked = {}
    for path in sorted(SAMPLERS.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
        said = re.search(r"\ball (\d+) (?:problems|questions)\b", spec.get("description", ""))
        if said is None or spec.get("stratify_by") != "none":
            continue
        population = REGISTRY[spec["benchmark"]].meta.population
        assert population == spec["total"] == int(said.group(1)), path.name
        checked[spec["benchmark"]] = population
    # HMMT Feb 2026: 33 in MathArena/hmmt_feb_2026 (dataset card: split train, num_examples 33)
    assert checked == {
        "aime24": 30,
        "aime25": 30,
        "aime26": 30,
        "gpqa_diamond": 198,
        "hmmt25": 30,
        "hmmt26": 33,
    }
