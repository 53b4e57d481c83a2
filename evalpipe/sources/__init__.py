"""Benchmark loaders: full splits → canonical records with ids, record hashes and fingerprints."""

from evalpipe.sources.base import BenchmarkData, SourceRecord
from evalpipe.sources.registry import load_benchmark

__all__ = ["BenchmarkData", "SourceRecord", "load_benchmark"]
