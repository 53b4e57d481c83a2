"""Benchmark loaders: full splits → canonical records with ids, record hashes and fingerprints."""

from typing import Any

from evalpipe.sources.base import BenchmarkData, SourceRecord

__all__ = ["BenchmarkData", "SourceRecord", "load_benchmark"]


def __getattr__(name: str) -> Any:
    # ``sources.load`` needs the benchmark registry, whose modules need ``sources.base``: import lazily
    if name == "load_benchmark":
        from evalpipe.sources.load import load_benchmark

        return load_benchmark
    raise AttributeError(name)
