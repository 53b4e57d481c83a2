"""The benchmark registry: one module per benchmark, one line per benchmark below.

Everything outside ``evalpipe/benchmarks/`` asks this registry (``benchmark(name)``, ``names()``)
and never names a benchmark.  A new benchmark is a new module declaring ``BENCHMARK`` plus one line in
``_MODULES``; the order there is the order of ``BenchmarkName`` in the config schema.
"""

from __future__ import annotations

from importlib import import_module

from evalpipe.benchmarks.base import Benchmark, KeyItem

# Module names under evalpipe/benchmarks/, each declaring ``BENCHMARK`` (its EvalScope adapter name).
_MODULES = (
    "ifeval",
    "ceval",
    "gsm8k",
    "live_code_bench",
    "math_500",
    "longbench_v2",
)


def _load(module: str) -> Benchmark:
    spec = import_module(f"evalpipe.benchmarks.{module}").BENCHMARK
    if spec.name != module:
        raise RuntimeError(f"evalpipe/benchmarks/{module}.py declares BENCHMARK.name {spec.name!r}")
    return spec


REGISTRY: dict[str, Benchmark] = {m: _load(m) for m in _MODULES}

__all__ = ["REGISTRY", "Benchmark", "KeyItem", "benchmark", "display_name", "find", "names", "primary_metric"]


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def find(name: str) -> Benchmark | None:
    return REGISTRY.get(name)


def benchmark(name: str) -> Benchmark:
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"no benchmark named {name!r} (registered: {', '.join(REGISTRY)})") from None


def display_name(name: str) -> str:
    spec = REGISTRY.get(name)
    return spec.display_name if spec else name


def primary_metric(name: str) -> str:
    spec = REGISTRY.get(name)
    return spec.primary_metric if spec else "score"


def stratifications() -> tuple[str, ...]:
    """Every stratification some benchmark offers ("none" first), in registry order."""
    out = ["none"]
    for spec in REGISTRY.values():
        out += [s for s in spec.stratifications if s not in out]
    return tuple(out)


def length_buckets(benchmark: str, stratify_by: str, strata: list[str]) -> list[tuple[str, dict[str, str]]]:
    """``[(length bucket, {stratum: bucket})]`` in the benchmark's length order; [] without a length stratum."""
    spec = REGISTRY.get(benchmark)
    if spec is None or spec.length_bucket is None:
        return []
    bucket_of = {s: spec.length_bucket(stratify_by, s) for s in strata}
    if any(b is None for b in bucket_of.values()):
        return []
    present = {b for b in bucket_of.values() if b is not None}
    order = [b for b in spec.length_order if b in present] + sorted(present - set(spec.length_order))
    return [(b, bucket_of) for b in order]  # type: ignore[misc]
