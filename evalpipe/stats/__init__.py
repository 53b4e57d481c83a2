"""evalpipe's statistics: pure functions over arrays, frozen results, each formula cited where it is written.

Nothing here reads or writes a file, formats a number for a reader or knows a run directory: loading and
pairing runs is ``evalpipe.compare`` (accuracy) and ``evalpipe.speed.compare`` (speed), the sentences and
tables are ``evalpipe.report``.  Every result is a ``dataclass(frozen=True)`` or a tuple.

* ``intervals`` — one run's score: the Wilson interval, the stratified (population-weighted) proportion and
  the clustered mean of a run with repeats.
* ``repeats`` — per-sample means of repeated attempts and the measured nondeterminism of a server.
* ``paired`` — two runs on the same samples: the paired difference (Miller's standard error, the
  Bonett–Price interval), the one exact McNemar test, the one paired bootstrap, excess discordance.
* ``power`` — noise models, the power of a drop, the minimum detectable effect and the sample size it needs.
* ``noninferiority`` — the three-way verdict against a margin.
* ``sequential`` — the same verdict looked at after every unit: two betting e-processes at the margin (aGRAPA,
  Waudby-Smith & Ramdas 2024) and the empirical-Bernstein confidence sequence, valid under optional stopping.
* ``design`` — the cost of a design: Cochran's optimal attempts per sample and expected tokens.
* ``ratio`` — the round-bootstrap interval of a speed ratio of medians.
* ``descriptive`` — the median and the nearest-rank percentile (lengths, timings, speed rounds).

Submodules are imported by name (``from evalpipe.stats.paired import …``): this package's face imports
nothing, so reading a Wilson interval does not load scipy.
"""
