"""Audit of a run directory: joins, identity checks and findings, then the summary and the reports.

``evalpipe.audit.run.audit_run`` is the entry point (``evalpipe audit`` and the last stage of
``evalpipe run``); ``gates`` turns the findings and scores into the verdict and its exit code.
"""
