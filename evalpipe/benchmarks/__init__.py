"""The benchmark registry: one module per benchmark, one line per built-in benchmark below.

Nothing outside ``evalpipe/benchmarks/`` names a benchmark: a run's plugins are looked up once, by the resolve
step (``evalpipe.resolve``), and its stages take them from the resolved run; what reads a recorded run or lists
the registered ones asks this registry (``benchmark(name)``, ``find(name)``, ``names()``, ``REGISTRY``).  A built-in benchmark is a module
(or package) here declaring ``BENCHMARK`` plus one line in ``_MODULES``; the order there is the order of
the benchmark enum in the published config schema (``make schemas``).

A benchmark outside evalpipe registers as an installed package's entry point in the group
``evalpipe.benchmarks`` (``[project.entry-points."evalpipe.benchmarks"] my_bench = "my_evals.my_bench"``: the
name is the benchmark's, the value the module declaring ``BENCHMARK``), registered after the built-ins in
the order of their names — installing the package is all it takes, in every process (the EvalScope worker
and the answer-key server see the same installed packages).  Or through the environment, for a module that
is not installed: ``EVALPIPE_BENCHMARK_MODULES`` lists
importable modules (comma-separated, e.g. ``my_evals.my_bench``), each declaring ``BENCHMARK`` like a
built-in one, registered after the built-ins in that order.  It is read once, when the registry is first
asked for a benchmark, so it must be set in the environment of the process (child processes inherit it: the EvalScope worker, the answer-key server).
A module is named after its benchmark (its EvalScope adapter name); a name registered twice is refused.
The three ways are ``evalpipe.registry.Registry``'s, shared with the server kinds.

A simple question/answer benchmark needs no module at all: a folder with ``benchmark.yaml`` and its rows,
built in under ``described/`` or listed in ``EVALPIPE_BENCHMARK_DESCRIPTIONS`` (``evalpipe.benchmarks.described``),
registered after the modules.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import import_module
from types import MappingProxyType

from evalpipe.benchmarks import described
from evalpipe.benchmarks.base import Benchmark, KeyItem
from evalpipe.errors import ConfigError
from evalpipe.registry import Registered, Registry

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


def _registry() -> Registry[Benchmark]:
    return Registry(
        sort="benchmark",
        attribute="BENCHMARK",
        cls=Benchmark,
        name_of=lambda spec: spec.meta.name,
        builtins=_MODULES,
        import_builtin=lambda m: import_module(f"evalpipe.benchmarks.{m}"),
        group=ENTRY_POINT_GROUP,
        environment=PLUGINS_ENV,
        module_named_after=True,
    )


def _build() -> Mapping[str, Benchmark]:
    """The built-in modules in ``_MODULES`` order, then the built-in benchmarks described in YAML
    (``evalpipe.benchmarks.described``), then installed packages' entry points and the environment's modules
    (``evalpipe.registry``), then the descriptions ``EVALPIPE_BENCHMARK_DESCRIPTIONS`` lists."""
    modules = _registry().build()
    found = {name: modules[name] for name in _MODULES}
    for spec in described.builtin():
        _add_described(found, modules, spec)
    found.update({name: spec for name, spec in modules.items() if name not in found})
    for spec in described.from_environment():
        _add_described(found, modules, spec)
    return MappingProxyType(found)


def _add_described(found: dict[str, Benchmark], modules: Mapping[str, Benchmark], spec: described.DescribedQA) -> None:
    if spec.meta.name in found or spec.meta.name in modules:
        raise ConfigError(
            f"benchmark {spec.meta.name!r} is registered twice ({spec.folder / described.DESCRIPTION_FILE} "
            "describes a benchmark of a registered name)"
        )
    found[spec.meta.name] = spec


#: Every registered benchmark by name, in registration order (read-only; built on the first lookup).
REGISTRY: Mapping[str, Benchmark] = Registered("benchmark", _build)

__all__ = [
    "ENTRY_POINT_GROUP",
    "PLUGINS_ENV",
    "REGISTRY",
    "Benchmark",
    "KeyItem",
    "benchmark",
    "display_name",
    "find",
    "length_buckets",
    "names",
    "primary_metric",
    "stratifications",
]


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def find(name: str) -> Benchmark | None:
    return REGISTRY.get(name)


def benchmark(name: str) -> Benchmark:
    return REGISTRY[name]  # KeyError naming the registered ones


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
