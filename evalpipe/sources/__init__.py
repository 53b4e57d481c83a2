"""Benchmark loaders: full splits → canonical records with ids, record hashes and fingerprints.

``sources.base`` holds the record types every benchmark module builds on, ``sources.hub`` the hub client; this
package names no benchmark.  Loading a configured benchmark asks its plugin, so it lives with the benchmarks:
``from evalpipe.samplers.loading import load_benchmark``.
"""

from evalpipe.sources.base import BenchmarkData, SourceRecord

__all__ = ["BenchmarkData", "SourceRecord"]
