"""Render a ``Summary`` as ``report.md`` / ``report.html`` (render only; never recompute)."""
