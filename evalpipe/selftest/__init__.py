"""Embedded self-test: bundled miniature datasets and the answer-key server.

The self-test is the pipeline's own correctness proof: the answer-key server (``answer_key_server``)
is launched through the same lifecycle code path as SGLang and answers every bundled item from its
gold answer (positive control) or from a different item's gold answer (negative control), with
planted faults the audit must find.  The datasets under ``data/`` were written for evalpipe (no item
is copied from a benchmark) in each benchmark's native schema and in the layout of the local mirror
``../shared/datasets``, so the ordinary source loaders read them; ``evalpipe.benchmarks.base.bundled_data_dir``
names their root (each benchmark's default data), so that the benchmarks need not import this package.
"""
