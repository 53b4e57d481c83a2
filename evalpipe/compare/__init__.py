"""Paired comparison of two runs (e.g. raw FP8 KV vs BF16 KV) on the same manifest."""

from evalpipe.compare.paired import compare_noise, compare_runs, comparison_beside
from evalpipe.compare.paired_design import AAPair, Arms, Bootstrap, GatePolicy, PairedDesign

__all__ = [
    "AAPair",
    "Arms",
    "Bootstrap",
    "GatePolicy",
    "PairedDesign",
    "compare_noise",
    "compare_runs",
    "comparison_beside",
]
