"""The words: one number format per unit and the sentences the statistics' typed results read as.

The analysis writes numbers (compare.json holds no prose) and the renderers — ``report/``, the explorer, the
terminal — say them in words; the audit's findings are one line of words each (``Finding.message``), so the
words sit below the analysis that writes findings and the presentation that renders results:

- ``numbers`` — points, signed points, intervals (one format per unit);
- ``sentences`` — a statistic's result as a sentence (MDE, non-inferiority, operating characteristic,
  sequential design, noise, a fleet event);
- ``compare`` — a paired block's line, its MDE basis and the gate's verdict in words;
- ``length_verdict`` — a paired block's verdict by context length.
"""
