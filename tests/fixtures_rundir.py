"""Builder of synthetic run directories for tests (audit, report, gates — and anyone else's).

A test describes samples (benchmark, stratum, outcome) and the request attempts each one produced;
``RunDirBuilder.write()`` turns that into the files the real stages write — manifest.json,
outcomes.jsonl, requests.jsonl, cache_repairs.jsonl, server/*.json, provenance.json, config.yaml,
run.json, sampled_ids.csv — all through the artifact models, so they validate like real ones.
Faults are planted by editing the description (a failed attempt, a second successful attempt, an
unknown response id, a secret in server_info …).

    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "g1", score=0.0, failure_class="wrong"))
    b.add(Sample("gsm8k", "g2", attempts=[Attempt(status=500), Attempt()]))
    rd = b.write()
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from helpers.config import config_data, entry

from evalpipe.artifacts import RunDir, atomic_write_text, write_jsonl_atomic, write_model
from evalpipe.artifacts.schema.manifest import (
    BenchmarkSampling,
    DatasetIdentity,
    Manifest,
    ManifestEntry,
    StratumAllocation,
)
from evalpipe.artifacts.schema.outcomes import CacheRepair, OutcomeRow
from evalpipe.artifacts.schema.provenance import GitInfo, GpuInfo, PackageVersion, Provenance
from evalpipe.artifacts.schema.requests import RequestAttempt, Usage
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.artifacts.schema.server import LaunchRecord, ServerVerification, VerifiedValue
from evalpipe.config.models import SamplingRule
from evalpipe.hashing import prompt_sha256, rank_key, sha256_hex, sha256_json

T0 = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)

SUBSETS = {"ifeval": "default", "ceval": "computer_network", "gsm8k": "main", "live_code_bench": "release_v6"}


@dataclass
class Attempt:
    """One request attempt of a sample (defaults: a successful 1-second request)."""

    status: int | None = 200
    transport_error: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 50
    finish_reason: str | None = "stop"
    duration_s: float = 1.0
    start_s: float | None = None  # seconds after T0; default: after the previous attempt
    attempt_id: str | None = None
    messages_sha256: str | None = None  # default: the sample's prompt hash
    max_tokens: int | None = None
    completed: bool = True  # False: no ended_at (crash before the response)
    client_disconnected: bool = False  # answered after the client gave up (never delivered)
    response_text: str = "answer"
    chat_template_kwargs: dict[str, Any] | None = None  # as the request body carried them
    resent_after: str | None = None  # the proxy re-sent it on a fresh connection after this error


@dataclass
class Sample:
    benchmark: str
    source_id: str
    stratum: str = "all"
    score: float | None = 1.0
    failure_class: str = "ok"
    failure_detail: str | None = None
    attempts: list[Attempt] = field(default_factory=lambda: [Attempt()])
    used: int | None = -1  # index of the attempt EvalScope used; None: no response id
    response_id: str | None = None  # overrides the used attempt's id (e.g. an id missing from the log)
    n_predictions: int = 1
    n_reviews: int = 1
    prompt_text: str | None = None  # default: unique per sample; equal texts share a prompt
    prompt_contains_question: bool | None = True
    review_matches_prediction: bool | None = True
    expected_prompt_sha256: str | None = None  # default: the prompt hash
    scores: dict[str, float] | None = None
    instructions_total: int | None = None
    instructions_followed_strict: int | None = None
    instructions_followed_loose: int | None = None
    api_error: str | None = None
    response_sha256: str | None = None  # default: the used attempt's
    reasoning_chars: int | None = None
    reasoning_tokens: int | None = None
    final_answer_present: bool | None = None
    code_execution: dict | None = None  # OutcomeRow.code_execution (LiveCodeBench)

    @property
    def prompt(self) -> str:
        return (
            self.prompt_text
            if self.prompt_text is not None
            else f"question {self.benchmark}/{self.source_id}"
        )

    @property
    def prompt_hash(self) -> str:
        return prompt_sha256([{"role": "user", "content": self.prompt}])


def default_verification(tp_size: int = 8, *, seed_effective: bool = False) -> ServerVerification:
    return ServerVerification(
        kind="sglang",
        base_url="http://127.0.0.1:30000",
        server_version="0.5.23",
        launch_command="python -m sglang.launch_server --model-path /models/m --tp-size 8 --api-key ***",
        checks=[
            VerifiedValue(key="kv_cache_dtype", expected="fp8_e4m3", resolved="fp8_e4m3", ok=True),
            VerifiedValue(key="tp_size", expected=tp_size, resolved=tp_size, ok=True),
        ],
        verified=True,
        kv_cache_dtype="fp8_e4m3",
        attention_backend="dsa",
        dsa_prefill_backend="tilelang",
        dsa_decode_backend="tilelang",
        tp_size=tp_size,
        ep_size=4,
        speculative_algorithm="EAGLE",
        served_model_name="test-model",
        seed_effective=seed_effective,
        description="KV layout: fp8_e4m3 raw (576 B), TileLang prefill/decode — verified from server_info",
    )


def default_provenance() -> Provenance:
    return Provenance(
        evalpipe_version="0.1.0",
        evalpipe_git=GitInfo(path="/work/main", commit="0" * 40, dirty=False),
        packages=[
            PackageVersion(name="sglang", version="0.5.23"),
            PackageVersion(name="evalscope", version="1.14.1"),
        ],
        gpus=[GpuInfo(index=i, name="NVIDIA H200") for i in range(8)],
        cuda_version="12.8",
        host="gpu-node-1",
        python="3.11.9",
        platform="Linux",
        started_at=T0.isoformat(),
        finished_at=(T0 + timedelta(hours=2)).isoformat(),
    )


def default_config(
    gates: dict[str, Any] | None = None, max_tokens: dict[str, int] | None = None
) -> dict[str, Any]:
    """The run directory's config (``helpers.config``): four benchmarks, one record each."""
    return config_data(
        name="test-run",
        model={"path": "/models/test-model", "served_name": "test-model"},
        server={"kind": "sglang", "tp_size": 8, "kv_cache_dtype": "fp8_e4m3"},
        generation={
            "temperature": 0.0,
            "seed": 42,
            "max_tokens": max_tokens
            or {"ifeval": 16384, "ceval": 32768, "gsm8k": 16384, "live_code_bench": 65536},
        },
        benchmarks=[entry(n) for n in ("ifeval", "ceval", "gsm8k", "live_code_bench")],
        gates=gates or {},
    )


class RunDirBuilder:
    def __init__(self, root: Path, *, seed: int = 42) -> None:
        self.root = Path(root)
        self.seed = seed
        self.samples: list[Sample] = []
        self.extra_attempts: list[Attempt] = []  # not belonging to any sample
        self.cache_repairs: list[CacheRepair] = []
        self.populations: dict[tuple[str, str], int] = {}
        self.plans: dict[str, SamplingRule] = {}
        self.pinned: dict[str, str] = {}
        self.drift_allowed: set[str] = set()
        self.verification: ServerVerification | None = default_verification()
        self.provenance: Provenance | None = default_provenance()
        self.launch: LaunchRecord | None = None
        self.server_info: dict[str, Any] | None = {"model_path": "/models/test-model", "api_key": None}
        self.config: dict[str, Any] | None = default_config()
        self.write_requests_log = True
        self.torn_request_tail = False
        self.run_record = True

    # --- description -------------------------------------------------------------------------------
    def add(self, *samples: Sample) -> RunDirBuilder:
        self.samples.extend(samples)
        return self

    def population(self, benchmark: str, stratum: str, n: int) -> RunDirBuilder:
        self.populations[(benchmark, stratum)] = n
        return self

    def gates(self, **gates: Any) -> RunDirBuilder:
        assert self.config is not None
        self.config["gates"] = gates
        return self

    # --- writing -------------------------------------------------------------------------------------
    def _manifest(self) -> Manifest:
        entries: list[ManifestEntry] = []
        blocks: list[BenchmarkSampling] = []
        benches = list(dict.fromkeys(s.benchmark for s in self.samples))
        for bench in benches:
            samples = [s for s in self.samples if s.benchmark == bench]
            strata = list(dict.fromkeys(s.stratum for s in samples))
            allocs = []
            for st in strata:
                n_h = sum(1 for s in samples if s.stratum == st)
                big_n = self.populations.get((bench, st), n_h * 10)
                allocs.append(StratumAllocation(stratum=st, population=big_n, allocated=n_h, selected=n_h))
            big = {a.stratum: a for a in allocs}
            for s in samples:
                a = big[s.stratum]
                entries.append(
                    ManifestEntry(
                        benchmark=bench,
                        subset=SUBSETS.get(bench, "default"),
                        stratum=s.stratum,
                        source_id=s.source_id,
                        record_sha256=sha256_hex(f"{bench}:{s.source_id}"),
                        rank_key=rank_key(self.seed, bench, s.source_id),
                        stratum_population=a.population,
                        stratum_selected=a.selected,
                        weight=a.population / a.selected,
                    )
                )
            plan = self.plans.get(bench) or (
                SamplingRule(benchmark=bench, stratify_by="none", total=len(samples), allocation="uniform")
                if strata == ["all"]
                else SamplingRule(benchmark=bench, stratify_by="difficulty", per_stratum=allocs[0].allocated)
            )
            fp = sha256_hex(f"dataset:{bench}")
            blocks.append(
                BenchmarkSampling(
                    benchmark=bench,
                    subsets=[SUBSETS.get(bench, "default")],
                    few_shot=0,
                    plan=plan,
                    plan_sha256=sha256_json(plan.model_dump(mode="json")),
                    dataset=DatasetIdentity(
                        kind="local",
                        eval_split="test",
                        eval_records=sum(a.population for a in allocs),
                        fingerprint=fp,
                        pinned_fingerprint=self.pinned.get(bench),
                        drift_allowed=bench in self.drift_allowed,
                    ),
                    filtered_population=sum(a.population for a in allocs),
                    strata=allocs,
                    sample_size=len(samples),
                )
            )
        return Manifest(seed=self.seed, benchmarks=blocks, entries=entries)

    def _attempts(self) -> tuple[list[RequestAttempt], dict[int, str | None]]:
        """All attempts in proxy order, and the response id each sample used (by sample index)."""
        clock = 0.0
        seq = 0
        rows: list[RequestAttempt] = []
        used: dict[int, str | None] = {}

        def make(a: Attempt, prompt_hash: str | None) -> RequestAttempt:
            nonlocal clock, seq
            start = a.start_s if a.start_s is not None else clock
            end = start + a.duration_s
            clock = max(clock, end)
            aid = a.attempt_id or f"att-{seq:04d}"
            ok = a.transport_error is None and a.status is not None and a.status < 400
            body = {"n": seq}
            row = RequestAttempt(
                attempt_id=aid,
                seq=seq,
                started_at=(T0 + timedelta(seconds=start)).isoformat(),
                ended_at=(T0 + timedelta(seconds=end)).isoformat() if a.completed else None,
                method="POST",
                path="/v1/chat/completions",
                body_sha256=sha256_json(body),
                messages_sha256=a.messages_sha256 if a.messages_sha256 is not None else prompt_hash,
                model="test-model",
                max_tokens=a.max_tokens,
                chat_template_kwargs=a.chat_template_kwargs,
                status=a.status,
                response_id=aid if ok else None,
                finish_reason=a.finish_reason if ok else None,
                usage=Usage(
                    prompt_tokens=a.prompt_tokens,
                    completion_tokens=a.completion_tokens,
                    total_tokens=a.prompt_tokens + a.completion_tokens,
                )
                if ok
                else None,
                latency_s=a.duration_s,
                transport_error=a.transport_error,
                resent_after=a.resent_after,
                client_disconnected=a.client_disconnected,
                response_sha256=sha256_hex(a.response_text) if ok else None,
            )
            seq += 1
            return row

        for i, s in enumerate(self.samples):
            made = [make(a, s.prompt_hash) for a in s.attempts]
            rows.extend(made)
            used[i] = made[s.used].attempt_id if (s.used is not None and made) else None
        rows.extend(make(a, a.messages_sha256) for a in self.extra_attempts)
        return rows, used

    def write(self) -> RunDir:
        rd = RunDir(self.root)
        rd.root.mkdir(parents=True, exist_ok=True)
        manifest = self._manifest()
        write_model(rd.manifest, manifest)
        attempts, used = self._attempts()
        by_id = {a.attempt_id: a for a in attempts}
        outcomes = []
        index: dict[tuple[str, str], int] = {}
        for i, s in enumerate(self.samples):
            subset = SUBSETS.get(s.benchmark, "default")
            idx = index.get((s.benchmark, subset), 0)
            index[(s.benchmark, subset)] = idx + 1
            rid = s.response_id if s.response_id is not None else used[i]
            att = by_id.get(used[i] or "")
            present = s.n_predictions > 0
            outcomes.append(
                OutcomeRow(
                    benchmark=s.benchmark,
                    subset=subset,
                    index=idx,
                    source_id=s.source_id,
                    stratum=s.stratum,
                    prediction_present=present,
                    review_present=s.n_reviews > 0,
                    n_predictions=s.n_predictions,
                    n_reviews=s.n_reviews,
                    response_id=rid if present else None,
                    stop_reason=att.finish_reason if att else None,
                    input_tokens=att.usage.prompt_tokens if att and att.usage else None,
                    output_tokens=att.usage.completion_tokens if att and att.usage else None,
                    api_error=s.api_error,
                    reasoning_chars=s.reasoning_chars,
                    reasoning_tokens=s.reasoning_tokens,
                    final_answer_present=s.final_answer_present,
                    code_execution=s.code_execution,
                    prompt_sha256=s.prompt_hash if present else None,
                    expected_prompt_sha256=s.expected_prompt_sha256 or s.prompt_hash,
                    prompt_contains_question=s.prompt_contains_question if present else None,
                    review_matches_prediction=s.review_matches_prediction if present else None,
                    response_sha256=s.response_sha256 or (att.response_sha256 if att else None),
                    score=s.score,
                    scores=s.scores
                    if s.scores is not None
                    else ({} if s.score is None else {"acc": s.score}),
                    instructions_total=s.instructions_total,
                    instructions_followed_strict=s.instructions_followed_strict,
                    instructions_followed_loose=s.instructions_followed_loose,
                    failure_class=s.failure_class,  # type: ignore[arg-type]
                    failure_detail=s.failure_detail,
                )
            )
        write_jsonl_atomic(rd.outcomes, outcomes)
        if self.write_requests_log:
            text = "".join(a.model_dump_json() + "\n" for a in attempts)
            if self.torn_request_tail:
                text += '{"schema_version": 1, "attempt_id": "att-torn", "se'
            atomic_write_text(rd.requests_log, text)
        if self.cache_repairs:
            write_jsonl_atomic(rd.cache_repairs, self.cache_repairs)
        if self.verification is not None:
            write_model(rd.server_verification, self.verification)
        if self.launch is not None:
            write_model(rd.server_launch, self.launch)
        if self.server_info is not None:
            atomic_write_text(rd.server_info, json.dumps(self.server_info, indent=2))
        if self.provenance is not None:
            write_model(rd.provenance, self.provenance)
        if self.config is not None:
            text = yaml.safe_dump(self.config, sort_keys=False)
            atomic_write_text(rd.config_copy, text)
            if self.run_record:
                write_model(
                    rd.run_record,
                    RunRecord(
                        run_id="run-20250601-120000",
                        config_name=self.config["name"],
                        config_path="/configs/test.yaml",
                        config_sha256=sha256_hex(text),
                        created_at=T0.isoformat(),
                        evalpipe_version="0.1.0",
                        dataset_locations={},
                    ),
                )
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["benchmark", "subset", "stratum", "source_id"])
        for e in manifest.entries:
            w.writerow([e.benchmark, e.subset, e.stratum, e.source_id])
        atomic_write_text(rd.sampled_ids, buf.getvalue())
        return rd


def clean_run(root: Path) -> RunDirBuilder:
    """A fault-free run over the four benchmarks (18 samples), ready for planting faults.

    * IFEval: 5 prompts (strata 1/2 instructions, proportional), 4 correct;
    * C-Eval: 3 subjects × 1 question, 2 correct;
    * GSM8K: 4 questions (one stratum), 3 correct;
    * LiveCodeBench: 2 per difficulty (N = 100/200/50), easy 2/2, medium 1/2, hard 0/2.
    """
    b = RunDirBuilder(root)
    b.plans["ifeval"] = SamplingRule(
        benchmark="ifeval", stratify_by="instruction_count", total=5, allocation="proportional"
    )
    b.plans["ceval"] = SamplingRule(benchmark="ceval", stratify_by="subject", per_stratum=1)
    b.plans["live_code_bench"] = SamplingRule(
        benchmark="live_code_bench", stratify_by="difficulty", per_stratum=2
    )
    for i, (st, ok) in enumerate([("1", True), ("1", True), ("1", True), ("2", True), ("2", False)]):
        n_inst = int(st)
        followed = n_inst if ok else n_inst - 1
        b.add(
            Sample(
                "ifeval",
                f"if{i}",
                stratum=st,
                score=1.0 if ok else 0.0,
                failure_class="ok" if ok else "wrong",
                scores={
                    "prompt_level_strict": 1.0 if ok else 0.0,
                    "prompt_level_loose": 1.0,
                    "inst_level_strict": followed / n_inst,
                    "inst_level_loose": 1.0,
                },
                instructions_total=n_inst,
            )
        )
    b.population("ifeval", "1", 300).population("ifeval", "2", 200)
    for i, (subj, ok) in enumerate([("law", True), ("physics", True), ("art", False)]):
        b.add(
            Sample(
                "ceval",
                f"ce{i}",
                stratum=subj,
                score=1.0 if ok else 0.0,
                failure_class="ok" if ok else "wrong",
            )
        )
        b.population("ceval", subj, 20 + i)
    for i, ok in enumerate([True, True, True, False]):
        b.add(Sample("gsm8k", f"g{i}", score=1.0 if ok else 0.0, failure_class="ok" if ok else "wrong"))
    b.population("gsm8k", "all", 1319)
    for diff, n_ok, big_n in (("easy", 2, 100), ("medium", 1, 200), ("hard", 0, 50)):
        for j in range(2):
            ok = j < n_ok
            b.add(
                Sample(
                    "live_code_bench",
                    f"live_code_bench-{diff}-{j}",
                    stratum=diff,
                    score=1.0 if ok else 0.0,
                    failure_class="ok" if ok else "code_wrong_answer",
                )
            )
        b.population("live_code_bench", diff, big_n)
    return b


PLANTED_SECRET = "sk-live-abcdefghijklmnopqrstuvwx"


def planted_faults_run(root: Path) -> RunDirBuilder:
    """``clean_run`` with eight faults planted, one sample each (every kind the audit must find).

    duplicate request (g0), truncated output (ce1, budget exhausted), transport failure then retry
    (g1), reordered cached row repaired at resume (g2), IndexError (live_code_bench-medium-1), scoring error
    (if1), response id missing from the log (ce0), secret in server_info.
    """
    b = clean_run(root)
    s = {x.source_id: x for x in b.samples}
    s["g0"].attempts = [Attempt(), Attempt()]
    s["ce1"].score, s["ce1"].failure_class = 0.0, "budget_exhausted"
    s["ce1"].attempts = [Attempt(finish_reason="length", completion_tokens=32768)]
    s["g1"].attempts = [Attempt(status=None, transport_error="ReadTimeout", duration_s=2.0), Attempt()]
    b.cache_repairs.append(
        CacheRepair(
            benchmark="gsm8k",
            subset="main",
            index=2,
            expected_source_id="g2",
            expected_prompt_sha256=s["g2"].prompt_hash,
            found_prompt_sha256=s["g3"].prompt_hash,
            reason="prompt_hash_mismatch",
            artifact="prediction",
        )
    )
    s["live_code_bench-medium-1"].failure_class, s["live_code_bench-medium-1"].failure_detail = (
        "code_runtime_error",
        "IndexError",
    )
    s["if1"].score, s["if1"].failure_class, s["if1"].scores = None, "scoring_error", {}
    s["if1"].failure_detail = "KeyError: 'kwargs'"
    s["ce0"].response_id = "chatcmpl-ghost"
    assert b.server_info is not None
    b.server_info["api_key"] = PLANTED_SECRET
    return b


def run_cli(args: list[str]) -> int:
    """Run ``evalpipe ARGS`` in-process; the exit code it would give the shell."""
    from evalpipe.cli.main import main

    try:
        return main(args)
    except SystemExit as exc:
        return int(exc.code or 0)
