"""Audit of a run directory: joins, identity checks and findings, then the summary.

``evalpipe.audit.run.build_summary`` computes it; ``evalpipe.run.audit.audit_run`` (``evalpipe audit`` and the
last stage of ``evalpipe run``) also writes it with the reports and the explorer; ``gates`` turns the findings
and scores into the verdict and its exit code.
"""
