"""Benchmark loaders: full splits → canonical records with ids, record hashes and fingerprints.

``sources.base`` holds the record types every benchmark module builds on; ``sources.load`` (which asks the
benchmark registry) loads a configured benchmark: ``from evalpipe.sources.load import load_benchmark``.
"""

from evalpipe.sources.base import BenchmarkData, SourceRecord

__all__ = ["BenchmarkData", "SourceRecord"]
