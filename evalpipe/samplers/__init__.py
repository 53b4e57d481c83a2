"""Seeded, stratified, order-independent selection → the sample manifest."""

from evalpipe.samplers.allocate import largest_remainder
from evalpipe.samplers.run import SampleResult, build_manifest, sample_run, verify_sample

__all__ = ["SampleResult", "build_manifest", "largest_remainder", "sample_run", "verify_sample"]
