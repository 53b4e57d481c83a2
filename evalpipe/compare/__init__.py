"""Paired comparison of two runs (e.g. raw FP8 KV vs BF16 KV) on the same manifest."""

from evalpipe.compare.paired import compare_runs, comparison_beside

__all__ = ["compare_runs", "comparison_beside"]
