"""A piloted three-arm run interrupted at every phase, then resumed, ends as the uninterrupted run did; a
tampered decision file is refused before anything is sent.

The run: GSM8K on answer-key servers, the candidate answering a fixed 30 % wrong, the arms in turn (the control,
the candidate, the A/A arm), an internal pilot of 2 attempts (its decision: 2, from the planted discordance).
One uninterrupted run is the baseline.  Two chains interrupt a run at each phase in turn — the pilot pass of
the first and of a later arm, right after the decision, the second pass of each arm, the comparison — each
time resuming it until the next phase, then to its end: one chain signals SIGKILL to the run's process group at
the odd phases and SIGTERM at the even ones, the other the other way round, so every phase meets both signals.
After every signal nothing of the run's process tree is alive one second later; the resumed run ends with the
baseline's exit code and verdicts, no answer missing from the request log, and every request beyond the
baseline's reported by the audit as a re-asked attempt; a resume after the last arm ended only compares.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
from pathlib import Path

import pytest
import yaml
from helpers import run_faults as rf

#: units of GSM8K: the pilot is round(0.4 x 10) = 4 of them, asked twice (agreement 1: the candidate's attempts,
#: wrong per request seed, disagree within a unit); the other 6 get 2 attempts: the pooled discordance over
#: 2p(1-p) is above THRESHOLD and two attempts bring the within-unit part of it below
UNITS = 10
PILOT = 4
THRESHOLD = 2.0


def _config(tmp: Path, datasets: Path) -> Path:
    data = {
        "schema_version": 1,
        "name": "faults-piloted",
        "model": {"path": "answer-key", "served_name": "answer-key"},
        "server": {
            "kind": "answer_key",
            "host": "127.0.0.1",
            "port": 0,
            "launch_timeout_s": 60,
            "stop_timeout_s": 10,
            "answer_key": {"mode": "positive", "data_dir": str(datasets)},
        },
        "parallel_variants": False,
        "variants": [
            {
                "name": "candidate",
                "overrides": {"answer_key": {"wrong_share": {"gsm8k": 0.3}, "wrong_per_attempt": True}},
            },
            {"name": "reference"},
            {"name": "reference_again", "repeat_of": "reference"},
        ],
        "generation": {
            "temperature": 0.0,
            "seed": 42,
            "concurrency": 4,
            "request_timeout_s": 30,
            "default_max_tokens": 1024,
            "retries": 0,
            "sequential": {
                "alpha": 0.05,
                "sequential_share": 1.0,
                "pilot": {"attempts": 2, "threshold": THRESHOLD, "agreement": 1.0},
            },
        },
        "sampling_seed": 42,
        "benchmarks": [
            {
                "name": "gsm8k",
                "subset": "main",
                "sampling": {"stratify_by": "none", "total": UNITS, "allocation": "uniform"},
                "source": {"local": str(datasets / "gsm8k")},
            }
        ],
        "output_root": str(tmp / "results"),
        "design": {"gsm8k": {"accuracy": 0.95, "discordance": 0.04, "basis": "test"}},
        "gates": {"non_inferiority_margin_pts": {"gsm8k": 20}},
    }
    path = tmp / "piloted.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class Baseline:
    def __init__(self, config: Path, root: Path, ending: rf.Ending, output: str) -> None:
        self.config, self.root, self.ending, self.output = config, root, ending, output


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, shared_datasets: Path) -> Baseline:
    tmp = tmp_path_factory.mktemp("faults")
    config = _config(tmp, shared_datasets)
    root = tmp / "baseline"
    run = rf.start(config, root)
    output, _ = run.communicate(timeout=300)
    ending = rf.ending(root, run.returncode)
    assert json.loads((root / "pilot.json").read_text())["attempts"] == 2, output[-2000:]
    return Baseline(config, root, ending, output)


def test_the_second_pass_says_nothing_of_a_rescoring_when_only_the_proxy_moved(baseline: Baseline) -> None:
    # every arm's second pass resumes its first through a new proxy port: EvalScope's cache identity (which
    # holds the API address) is refused and its reviews recomputed, but nothing that decides a score changed
    assert "re-scored every cached prediction" not in baseline.output
    # each arm's pass counts the attempts it asks: the pilot's 4 units twice each (agreement 1), then those 8
    # (cached) and 6 units x 2 attempts — not the task's 10 rows x 2 attempts while piloting
    assert baseline.output.count("gsm8k: 8/8 done") == 3, baseline.output[-3000:]
    assert baseline.output.count("gsm8k: 20/20 done") == 3, baseline.output[-3000:]


def _files(root: Path) -> dict[str, str]:
    """Every file of a run directory (the lock, which every run holds, aside) and its content's hash."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "run.lock"
    }


def _duplicates(root: Path) -> dict[str, int]:
    return {
        arm: json.loads((root / arm / "summary.json").read_text())["requests"]["duplicates"]
        for arm in rf.ARMS
    }


def _requests(root: Path) -> dict[str, int]:
    return {arm: rf.lines(root / arm / "requests.jsonl") for arm in rf.ARMS}


@pytest.mark.parametrize("first", [signal.SIGKILL, signal.SIGTERM], ids=["kill-first", "term-first"])
def test_interrupted_at_every_phase_the_resumed_run_ends_as_the_uninterrupted_one(
    baseline: Baseline, tmp_path: Path, first: signal.Signals
) -> None:
    other = signal.SIGTERM if first == signal.SIGKILL else signal.SIGKILL
    root = tmp_path / "run"
    run = rf.start(baseline.config, root)
    phases = list(rf.phases(2 * PILOT).values())  # every pilot unit asked twice (agreement 1)
    before_last: dict[str, str] = {}
    requests: dict[str, int] = {}
    for i, phase in enumerate(phases):
        sig = first if i % 2 == 0 else other
        cut = rf.interrupt(run, root, phase, sig)
        assert cut.reached, f"{phase.name}: the run ended before it ({cut.returncode}): {cut.output[-1500:]}"
        assert cut.leftovers == [], f"{phase.name}, {sig.name}: alive 1 s after: {cut.leftovers}"
        if sig == signal.SIGTERM:
            assert cut.returncode == 143, cut.output[-1500:]
        if phase.name == "compare":
            before_last, requests = rf.stop_states(root), _requests(root)
        if i + 1 < len(phases):
            run = rf.start(baseline.config, root, resume=True)
    code, output = rf.finish(baseline.config, root)
    end = rf.ending(root, code)
    assert (end.exit_code, end.verdicts) == (baseline.ending.exit_code, baseline.ending.verdicts), output[
        -3000:
    ]
    assert not any(f.startswith("error") for f in end.findings), end.findings
    # a resume after every arm ended only compared: no request, no arm's stop state made again
    assert rf.stop_states(root) == before_last
    assert _requests(root) == requests
    # every request beyond the baseline's is one the audit reports (an attempt re-asked with its seed)
    extra = {arm: n - rf.lines(baseline.root / arm / "requests.jsonl") for arm, n in _requests(root).items()}
    assert extra == _duplicates(root), (extra, end.findings)
    decision = json.loads((root / "pilot.json").read_text())
    want = json.loads((baseline.root / "pilot.json").read_text())
    assert {k: v for k, v in decision.items() if k != "decided_at"} == {
        k: v for k, v in want.items() if k != "decided_at"
    }


def _edit(path: Path, **fields: object) -> None:
    data = json.loads(path.read_text())
    data.update(fields)
    path.write_text(json.dumps(data))


TAMPERED = {
    # the issue's case: the root's attempts edited (the arms' copies still say 2)
    "root attempts 2 -> 3": (lambda r: _edit(r / "pilot.json", attempts=3), "pilot.json: field attempts"),
    "root deleted": (lambda r: (r / "pilot.json").unlink(), "pilot.json: missing, but"),
    "string schema version": (
        lambda r: _edit(r / "pilot.json", schema_version="1"),
        "pilot.json: field schema_version",
    ),
    "an arm's manifest edited": (
        lambda r: _edit(r / "candidate" / "manifest.json", seed=7),
        "candidate/manifest.json: differs from the run's",
    ),
    "an arm's copy edited": (
        lambda r: _edit(r / "reference" / "pilot.json", discordant=0),
        "reference/pilot.json: field discordant differs",
    ),
}


@pytest.mark.parametrize("case", list(TAMPERED))
def test_a_tampered_decision_is_refused_naming_the_file_with_nothing_rewritten(
    baseline: Baseline, tmp_path: Path, case: str
) -> None:
    root = tmp_path / "run"
    shutil.copytree(baseline.root, root)
    tamper, says = TAMPERED[case]
    tamper(root)
    before = _files(root)
    code, output = rf.finish(baseline.config, root, timeout=120)
    assert code == 2, output[-2000:]
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and says in lines[0], output
    assert _files(root) == before
