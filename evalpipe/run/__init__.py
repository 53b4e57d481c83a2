"""The stages of ``evalpipe run`` in the order they run (``pipeline``), the variants around them
(``variants``, ``parallel_variants``, ``variant_process``), what a run records about itself (``provenance``,
``stage_clock``) and what it shows while it runs (``progress``)."""
