"""The demo's paired run, once per session, for the modules that only read it (``paired_demo`` in conftest).

The demo config's GSM8K and C-Eval samples on the answer-key server through three variants on one manifest:
``faults`` (under test: the truncated GSM8K answer and the C-Eval HTTP 500 that is retried), ``clean``
(the control, no faults) and ``clean_again`` (``repeat_of: clean``, relaunched: the A/A noise), with the
paired gates (non-inferiority margins on both benchmarks, ``max_mde_pts``) and a ``speed:`` section whose
client is the stand-in (``helpers/speed_client.py``).  Readers:

* ``test_aa_control_e2e``: compare.json's A/B and A/A discordance, noise, MDE and non-inferiority; the gates;
* ``test_paired_replay_e2e``: the shared manifest, the exact McNemar p, publish → replay → reproduce;
* ``test_speed_pipeline``: each variant's speed rounds between its evaluation and its server's stop,
  speed_compare.json and the reports' "Serving speed" section.

Read-only: a test that changes a file copies the directory first (``shutil.copytree``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from evalpipe.config.loader import load_config
from evalpipe.config.models import AnswerKeyConfig, GateConfig, RunConfig, ServerVariant
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.resolve import resolve
from evalpipe.run.variants import PairedOutcome, run_variants
from evalpipe.selftest.controls import demo_config_path
from evalpipe.speed import run as speed_run
from helpers.speed_client import StandInClient

FAULTS = ["truncate", "http_500_once"]
MARGINS = {"gsm8k": 99.0, "ceval": 0.5}
SPEED_ROUNDS = 3


#: what ``run_variants`` returns: the run's root, each variant's result, the comparisons' files, the verdict
PairedDemo = PairedOutcome


def gsm8k_ceval(
    cfg: RunConfig, variants: list[ServerVariant], gates: GateConfig, **update: object
) -> RunConfig:
    """The demo config's GSM8K and C-Eval samples through these variants and gates."""
    out = cfg.model_copy(
        update={
            "variants": variants,
            "gates": gates,
            "benchmarks": [b for b in cfg.benchmarks if b.name in ("gsm8k", "ceval")],
            **update,
        }
    )
    out._config_path = cfg.config_path
    return out


def paired_demo_config() -> RunConfig:
    cfg = load_config(demo_config_path())
    server = cfg.server.model_copy(update={"answer_key": AnswerKeyConfig(mode="positive", faults=FAULTS)})
    variants = [
        cfg.variants[0],
        ServerVariant(name="clean", label="clean", overrides={"answer_key": {"faults": []}}),
        ServerVariant(name="clean_again", label="clean again", repeat_of="clean"),
    ]
    gates = GateConfig(max_error_findings=100, non_inferiority_margin_pts=MARGINS, max_mde_pts=1.0)
    speed = SpeedConfig(
        workloads=[SpeedWorkload(input_len=8, output_len=4, concurrency=1, prompts_per_round=2)],
        rounds=SPEED_ROUNDS,
    )
    return gsm8k_ceval(cfg, variants, gates, server=server, speed=speed)


def run_paired_demo(root: Path) -> PairedDemo:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(speed_run, "make_client", lambda cfg, **_: StandInClient())
        patch.setattr(speed_run, "server_context", lambda url, key=None: (4096, "total", "stand-in"))
        return run_variants(resolve(paired_demo_config()), out=root)
