"""What a paired sign-off can see: repeats, paired differences, power, non-inferiority.

* ``repeats`` — the score of a run whose samples were asked k times (the sample is the cluster) and
  the measured nondeterminism of the server.
* ``paired`` — test − control on the same samples: mean difference, Miller's paired standard error,
  the Bonett–Price adjusted interval, discordance counts and the McNemar / score test; whether A/B
  changed more answers than the A/A control.
* ``mde`` — the noise model (A/A, A/B or an assumed default), the minimum detectable drop at 80 %
  power and the sample size a target MDE needs.
* ``noninferiority`` — the three-way verdict against a margin of X points.
* ``words`` — the sentences the report prints.

``evalpipe.samplers.extend`` holds the sampling side of the same issue (floors for a larger plan and the
check that it contains the old selection).

Every formula's source is cited in its module's docstring.
"""

from evalpipe.power.mde import (
    MinimumDetectableEffect,
    NoiseModel,
    SampleSizeNeeded,
    assumed_noise,
    minimum_detectable_effect,
    noise_from_discordance,
    noise_from_runs,
    sample_size_for_mde,
)
from evalpipe.power.noninferiority import NonInferiority, non_inferiority
from evalpipe.power.paired import ExcessDiscordance, PairedDifference, excess_discordance, paired_difference
from evalpipe.power.repeats import Attempt, ClusteredMean, Nondeterminism, clustered_mean, nondeterminism
from evalpipe.power.words import mde_sentence, noise_sentence, non_inferiority_sentence, sample_size_sentence

__all__ = [
    "Attempt",
    "ClusteredMean",
    "ExcessDiscordance",
    "MinimumDetectableEffect",
    "NoiseModel",
    "NonInferiority",
    "Nondeterminism",
    "PairedDifference",
    "SampleSizeNeeded",
    "assumed_noise",
    "clustered_mean",
    "excess_discordance",
    "mde_sentence",
    "minimum_detectable_effect",
    "noise_from_discordance",
    "noise_from_runs",
    "noise_sentence",
    "non_inferiority",
    "non_inferiority_sentence",
    "nondeterminism",
    "paired_difference",
    "sample_size_for_mde",
    "sample_size_sentence",
]
