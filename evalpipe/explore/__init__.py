"""``explorer.html``: every sample of a run (or of a paired comparison, flips first) in one offline page.

``collect`` reads the run directories through ``evalpipe.artifacts`` into typed cards, ``build`` pairs the
arms, orders the queue and keeps the file under its size limit, ``page`` writes the self-contained HTML
(data escaped into a JSON block, strict Content-Security-Policy, model text shown as text only).
"""

from evalpipe.explore.build import DEFAULT_LIMIT_BYTES, build_paired_explorer, build_run_explorer

__all__ = ["DEFAULT_LIMIT_BYTES", "build_paired_explorer", "build_run_explorer"]
