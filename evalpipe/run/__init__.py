"""A run, stage by stage: ``sample`` (or ``extend``: the larger selection for ``--extend``) → ``pipeline`` (the
stages of one run directory: materialize → preflight → launch → EvalScope → speed → outcomes → audit) →
``variants`` (each variant on the same manifest, then the paired comparison; at the same time through
``parallel_variants`` and one ``evalpipe.cli.variant_process`` each).  Alongside: ``provenance`` (what produced the run),
``stage_clock`` (``timings.json``) and ``progress`` (what the stages ask of a progress display)."""
