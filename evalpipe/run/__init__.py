"""A run, stage by stage: ``sample`` (or ``extend``: the larger selection for ``--extend``) → ``pipeline`` (one
run directory: a ``spec.RunSpec`` of ``options`` — origin, server target, coordination — whose ``stages``
preflight → launch → materialize → EvalScope → speed → stop → outcomes → audit are declared in
``stages`` and run by ``runner``) → ``variants`` (each variant on the same manifest, then the paired
comparison, then each variant's audit; at the same time through ``parallel_variants`` and one ``evalpipe.run.variant_process`` each).
Alongside: ``provenance`` (what produced the run), ``stage_clock`` (``timings.json``) and ``progress`` (what
the stages ask of a progress display)."""
