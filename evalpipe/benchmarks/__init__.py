"""The benchmark registry: one module per benchmark, one line per built-in benchmark below.

Everything outside ``evalpipe/benchmarks/`` asks this registry (``benchmark(name)``, ``find(name)``,
``names()``, ``REGISTRY`` to iterate) and never names a benchmark.  A built-in benchmark is a module
(or package) here declaring ``BENCHMARK`` plus one line in ``_MODULES``; the order there is the order of
``BenchmarkName`` in the config schema.

A benchmark outside evalpipe registers as an installed package's entry point in the group
``evalpipe.benchmarks`` (``[project.entry-points."evalpipe.benchmarks"] my_bench = "my_evals.my_bench"``: the
name is the benchmark's, the value the module declaring ``BENCHMARK``), registered after the built-ins in
the order of their names — installing the package is all it takes, in every process (the EvalScope worker
and the answer-key server see the same installed packages).  Or through the environment, for a module that
is not installed: ``EVALPIPE_BENCHMARK_MODULES`` lists
importable modules (comma-separated, e.g. ``my_evals.my_bench``), each declaring ``BENCHMARK`` like a
built-in one, registered after the built-ins in that order.  It is read once, when this package is first
imported — before the config models build ``BenchmarkName`` from the registry — so it must be set in the
environment of the process (child processes inherit it: the EvalScope worker, the answer-key server).
A module is named after its benchmark (its EvalScope adapter name); a name registered twice is refused.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from importlib import import_module
from importlib.metadata import entry_points
from types import MappingProxyType, ModuleType

from evalpipe.benchmarks.base import Benchmark, KeyItem
from evalpipe.errors import ConfigError

#: Environment variable naming extra benchmark modules (comma-separated import paths).
PLUGINS_ENV = "EVALPIPE_BENCHMARK_MODULES"
#: Entry-point group of installed packages' benchmark modules (name = the benchmark, value = its module).
ENTRY_POINT_GROUP = "evalpipe.benchmarks"

# Module names under evalpipe/benchmarks/, each declaring ``BENCHMARK`` (its EvalScope adapter name).
_MODULES = (
    "ifeval",
    "ceval",
    "gsm8k",
    "live_code_bench",
    "math_500",
    "longbench_v2",
    "aime24",
    "aime25",
    "aime26",
    "hmmt25",
    "hmmt26",
    "gpqa_diamond",
    "general_mcq",
    "general_qa",
    "kv_probe",
)


def _declared(module: ModuleType, origin: str) -> Benchmark:
    path = module.__name__
    spec = getattr(module, "BENCHMARK", None)
    if not isinstance(spec, Benchmark):
        raise ConfigError(f"{origin}: module {path} declares no BENCHMARK (a Benchmark instance)")
    if spec.meta.name != path.rpartition(".")[2]:
        raise ConfigError(
            f"{origin}: module {path} declares benchmark {spec.meta.name!r}; "
            "a benchmark module is named after its benchmark (its EvalScope adapter name)"
        )
    return spec


def _plugin(path: str, origin: str) -> ModuleType:
    try:
        return import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (path == exc.name or path.startswith(exc.name + ".")):  # not a dependency
            where = "is it on PYTHONPATH?" if origin == PLUGINS_ENV else "is its package installed whole?"
            raise ConfigError(f"{origin}: benchmark module {path!r} not found ({where})") from None
        raise


def _installed() -> list[tuple[str, str]]:
    """``(origin, module)`` of every installed package's ``evalpipe.benchmarks`` entry point, by name."""
    found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    out = []
    for ep in found:
        dist = ep.dist.name if ep.dist is not None else "an installed package"
        origin = f"entry point {ENTRY_POINT_GROUP}:{ep.name} of {dist}"
        if ep.attr or ep.name != ep.module.rpartition(".")[2]:
            raise ConfigError(
                f"{origin}: the value must be the module declaring BENCHMARK, named after the benchmark "
                f'(e.g. {ep.name} = "my_package.{ep.name}"), got {ep.value!r}'
            )
        out.append((origin, ep.module))
    return out


def _build() -> Mapping[str, Benchmark]:
    """The built-in modules in ``_MODULES`` order, then installed packages' entry points, then the
    environment's."""
    declared = [
        (_declared(import_module(f"evalpipe.benchmarks.{m}"), "evalpipe/benchmarks/__init__.py"), "evalpipe")
        for m in _MODULES
    ]
    declared += [(_declared(_plugin(module, origin), origin), origin) for origin, module in _installed()]
    extra = [p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(",") if p.strip()]
    declared += [(_declared(_plugin(p, PLUGINS_ENV), PLUGINS_ENV), PLUGINS_ENV) for p in extra]
    registry: dict[str, Benchmark] = {}
    where: dict[str, str] = {}
    for spec, origin in declared:
        name = spec.meta.name
        if name in registry:
            also = f"{PLUGINS_ENV}: {', '.join(extra)}" if origin == PLUGINS_ENV else origin
            raise ConfigError(f"benchmark {name!r} is registered twice ({where[name]}; {also})")
        registry[name], where[name] = spec, origin
    return MappingProxyType(registry)


#: Every registered benchmark by name, in registration order (read-only).
REGISTRY: Mapping[str, Benchmark] = _build()

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "REGISTRY",
    "Benchmark",
    "KeyItem",
    "benchmark",
    "code_benchmarks",
    "display_name",
    "find",
    "length_buckets",
    "names",
    "primary_metric",
    "punkt_needed",
    "stratifications",
]


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def find(name: str) -> Benchmark | None:
    return REGISTRY.get(name)


def benchmark(name: str) -> Benchmark:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no benchmark named {name!r} (registered: {', '.join(REGISTRY)})") from None


def code_benchmarks(names: Sequence[str]) -> list[str]:
    """Those of ``names`` whose benchmark executes model-written code."""
    out = []
    for name in names:
        spec = find(name)
        if spec is not None and spec.meta.executes_code:
            out.append(name)
    return out


def punkt_needed(names: Sequence[str]) -> str | None:
    """Display names of those of ``names`` whose scoring needs NLTK punkt_tab (None: none)."""
    needing = [benchmark(n).meta.display_name for n in names if benchmark(n).meta.nltk_module]
    return ", ".join(needing) or None


def display_name(name: str) -> str:
    spec = REGISTRY.get(name)
    return spec.meta.display_name if spec else name


def primary_metric(name: str) -> str:
    spec = REGISTRY.get(name)
    return spec.meta.primary_metric if spec else "score"


def stratifications() -> tuple[str, ...]:
    """Every stratification some benchmark offers ("none" first), in registry order."""
    out = ["none"]
    for spec in REGISTRY.values():
        out += [s for s in spec.meta.stratifications if s not in out]
    return tuple(out)


def length_buckets(benchmark: str, stratify_by: str, strata: list[str]) -> list[tuple[str, dict[str, str]]]:
    """``[(length bucket, {stratum: bucket})]`` in the benchmark's length order; [] without a length stratum."""
    spec = REGISTRY.get(benchmark)
    if spec is None:
        return []
    bucket_of: dict[str, str] = {}
    for stratum in strata:
        bucket = spec.length_bucket(stratify_by, stratum)
        if bucket is None:
            return []
        bucket_of[stratum] = bucket
    present = set(bucket_of.values())
    declared = spec.meta.length_order
    order = [b for b in declared if b in present] + sorted(present - set(declared))
    return [(b, bucket_of) for b in order]
