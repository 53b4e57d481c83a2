"""generation.sequential.pilot end to end on answer-key servers (no GPU, no model): every arm sends its gated
blocks' pilot units first (its first ones twice), the pooled pilot fixes the remaining units' attempts
(pilot.json), then every arm — its server launched again — sends the rest at those attempts, and compare judges
every unit by the mean of its attempts.

The candidate answers a fixed 15 % of the GSM8K questions wrong (a planted disagreement the pilot sees),
MATH-500 like the reference; the design accuracy 0.95 puts the chance level 2p(1 − p) at 0.095, so the pooled
pilot discordance is far above the threshold.  But the answer key answers a question the same way every time:
the units asked twice repeat their first difference (ρ = 1), the disagreement is all between samples, and the
rule keeps one attempt — attempts would average nothing.  Each block has 40 units (the demo's 80, halved: a
quarter less CPU, the same decision); a margin of 20 points is too wide for them to cross inside the pilot.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.outcomes import OutcomeRow
from evalpipe.artifacts.schema.pilot import PilotDecision
from evalpipe.artifacts.schema.requests import RequestAttempt
from evalpipe.artifacts.schema.sequential import SequentialStops
from evalpipe.cli.main import main
from evalpipe.config.benchmarks import SamplingRule
from evalpipe.config.gates import DesignAssumption
from evalpipe.config.generation import PilotConfig
from evalpipe.config.loader import load_config
from evalpipe.resolve import resolve
from evalpipe.run.variants import run_variants

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "demo-sequential.yaml"
ATTEMPTS = 2
#: units per gated block: the demo's 80 halved (the rule, the pilot's share and its decision are the same)
UNITS = 40
#: the pilot: the first 40 % of each block (PilotConfig.share's default)
PILOT = 16
#: the pilot's units asked twice: its first 25 % (PilotConfig.agreement's default)
TWICE = 4


def test_the_pilot_sizes_the_rest_and_every_arm_sends_it_first(tmp_path_factory: pytest.TempPathFactory) -> None:
    cfg = load_config(CONFIG)
    seq = cfg.generation.sequential
    assert seq is not None
    server = cfg.server.model_copy(update={"answer_key": cfg.server.answer_key.model_copy(update={})})
    # the candidate and the control (the A/A arm adds two launches and nothing the pilot decides)
    variants = [
        cfg.variants[0].model_copy(update={"overrides": {"answer_key": {"wrong_share": {"gsm8k": 0.15}}}}),
        cfg.variants[1],
    ]
    assumption = {
        name: DesignAssumption(accuracy=0.95, discordance=0.04, basis="test: the reference answers every item")
        for name in ("gsm8k", "math_500")
    }
    run_cfg = cfg.model_copy(
        update={
            "parallel_variants": False,
            "server": server,
            "variants": variants,
            "benchmarks": [
                b.model_copy(update={"sampling": SamplingRule(stratify_by="none", total=UNITS, allocation="uniform")})
                for b in cfg.benchmarks
            ],
            "design": assumption,
            # 16 units released per look instead of the demo's 4: the same rule in a quarter of the looks
            "generation": cfg.generation.model_copy(
                update={
                    "concurrency": 16,
                    "sequential": seq.model_copy(update={"pilot": PilotConfig(attempts=ATTEMPTS)}),
                }
            ),
        }
    )
    run_cfg._config_path = cfg.config_path
    outcome = run_variants(resolve(run_cfg), out=tmp_path_factory.mktemp("pilot") / "run")
    root = outcome.rundir
    decision = read_model(root.pilot, PilotDecision)
    # far above the threshold, and all of it between samples: one attempt, and the statement says why
    assert decision.ratio is not None and decision.ratio > 0.7 and decision.within_share == 0.0
    assert decision.attempts == 1 and "the disagreement is between samples" in decision.statement
    blocks = {b.block: b for b in decision.blocks}
    assert {b: (x.units, x.pilot_units, x.paired) for b, x in blocks.items()} == {
        "gsm8k": (UNITS, PILOT, TWICE),
        "math_500": (UNITS, PILOT, TWICE),
    }
    assert blocks["math_500"].discordant == 0 and blocks["gsm8k"].discordant > 0
    pilot = {e for b in decision.blocks for e in b.entries}
    twice = {e for b in decision.blocks for e in b.agreement_entries}
    assert len(pilot) == 2 * PILOT and len(twice) == 2 * TWICE and twice <= pilot
    for variant in variants:
        rd = RunDir(root.root / variant.name)
        assert read_model(rd.pilot, PilotDecision) == decision  # the copy every arm read
        rows = [r for r in read_jsonl(rd.outcomes, OutcomeRow) if isinstance(r, OutcomeRow)]
        sent = {f"{r.benchmark}/{r.source_id}": r for r in rows if r.prediction_present}
        for key, row in sent.items():
            want = 2 if key in twice else 1
            assert max(1, len(row.attempts)) == want, (variant.name, key)
        requests = [a for a in read_jsonl(rd.requests_log, RequestAttempt) if isinstance(a, RequestAttempt)]
        stops = read_model(rd.sequential_stop, SequentialStops)
        assert all(s.stop_reason in ("units exhausted", "crossing") for s in stops.benchmarks)
        if variant.name == decision.control:  # the control sends the pilot (some twice), then every other unit once
            assert len(requests) == 2 * (PILOT + TWICE) + 2 * (UNITS - PILOT)
        # two passes, each on a server of its own: the pilot's launch, then the rest's
        launches = [t for t in outcome.results[variant.name].timings if t.stage == "launch"]
        assert len(launches) == 2, variant.name
    cmp = json.loads(outcome.comparisons[0].compare_json.read_text())
    by = {b["benchmark"]: b for b in cmp["benchmarks"]}
    # compare judged every unit by the mean of its attempts and says how many each had
    assert by["gsm8k"]["sequential"]["units_by_attempts"] == {"1": UNITS - TWICE, "2": TWICE}
    md = (root.root / "compare.md").read_text()
    assert f"{UNITS} units ({UNITS - TWICE} × 1 attempt, {TWICE} × 2 attempts) per arm" in md
    assert "Internal pilot: " in (root.root / "candidate" / "report.md").read_text()
    assert by["math_500"]["sequential"]["verdict"] in ("non-inferior", "inconclusive")
    # the command line re-derives the piloted comparison byte for byte: the run's gates and sequential rule
    # with its pilot from its config copy, the attempts the pilot chose from the arms' outcomes
    again = tmp_path_factory.mktemp("again")
    args = [cmp["run_a"], cmp["run_b"], "--config", str(root.config_copy), "--out", str(again)]
    assert main(["compare", *args]) == 0
    assert (again / "compare.json").read_bytes() == outcome.comparisons[0].compare_json.read_bytes()
