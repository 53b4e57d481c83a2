"""``generation:`` — what each request asks for (temperature, budget, concurrency, seeds, repeats) and the
sequential rule that may stop a paired run early."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from evalpipe.config.base import Strict


class PilotConfig(Strict):
    """The internal pilot (``evalpipe.stats.pilot``): the first units of every gated block, one attempt per arm
    (two for its first ``agreement`` share), decide the attempts of the rest — declared before the first unit is
    sent, so α is kept."""

    share: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.4,
        description="Share of each gated block's units (in its seeded order, after the drops decided before "
        "generation) that form the pilot; every arm sends them first.",
    )
    threshold: Annotated[float, Field(gt=0)] = Field(
        default=0.7,
        description="The target noise: the pooled pilot discordance (units of the judged pair whose first attempts "
        "differ), as a multiple R of sum K_b 2p_b(1-p_b) at each block's design accuracy. At or below it every "
        "remaining unit gets one attempt; above it, the fewest k <= attempts whose R (1 - w + w/k) is at or below "
        "it (w: the within-unit share the twice-asked units measured), or one when no k reaches it.",
    )
    attempts: Annotated[int, Field(ge=2, le=16)] = Field(
        default=4,
        description="The most attempts per remaining unit the pilot may choose (the unit's value is the mean of its "
        "attempts: its within-unit variance falls, its mean does not move).",
    )
    agreement: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.25,
        description="Share of each block's pilot units (its first ones, in the block's seeded order) asked twice "
        "in every arm: the two attempts of one unit measure how far its disagreement is within the unit "
        "(attempts average it) or between units (they do not). Their value is the mean of both attempts.",
    )


class SequentialConfig(Strict):
    """Anytime-valid non-inferiority (``evalpipe.stats.sequential``): the paired comparison judged unit by unit."""

    alpha: Annotated[float, Field(gt=0, lt=0.5)] = Field(
        default=0.025,
        description="The gate's one-sided error at the margin (gates.non_inferiority_margin_pts), in every path: "
        "at Delta = -margin a block passes at most alpha of the time, however often the rule looks, wherever it "
        "stops, and after --extend. 0.025 is the fixed gate's own level (its 95 % two-sided interval). It is "
        "split (evalpipe.stats.operating): the e-processes run at sequential_share x alpha (K >= 1/that), the one "
        "fixed look taken when they never cross at the rest.",
    )
    sequential_share: Annotated[float, Field(gt=0, le=1)] = Field(
        default=0.5,
        description="Share of alpha the e-processes spend (they stop the run early); the rest goes to one fixed "
        "look on all the units when nothing crossed. 1: no fixed look (no crossing = inconclusive).",
    )
    cap_factor: Annotated[float, Field(ge=1)] = Field(
        default=1.5,
        description="The rule ends 'inconclusive' after cap_factor x the fixed-n plan (the benchmark's sampled "
        "n) units; the bets are tuned to that plan (the planned predictable plug-in bet). A finished run "
        "holds only the plan, so there the rule also ends when its units run out.",
    )
    in_run: bool = Field(
        default=True,
        description="Stop inside a paired run (variants with a control): each benchmark with a margin of its own "
        "and no pool sends its samples in the seeded sequence order, a batch at a time, and stops sending at the "
        "first crossing (evalpipe.run.sequential_stop); false: every sample is sent and the rule only judges "
        "afterwards. A pool is always judged afterwards.",
    )
    pilot: PilotConfig | None = Field(
        default=None,
        description="Internal pilot sizing (needs sequential_share 1, in_run, generation.repeats 1, the pipelined "
        "schedule, a control variant, variants run in turn and design: accuracy for every gated block): every arm first sends each gated block's pilot "
        "units, then the rule fixes the remaining units' attempts (pilot.json), then every arm sends the rest. "
        "Each arm's server is launched twice.",
    )
    batch_units: Annotated[int, Field(ge=1)] | None = Field(
        default=None,
        description="Units released beyond the prefix judged in every arm (what can be in flight, hence wasted, "
        "at the stop); default generation.concurrency / generation.repeats.",
    )

    @property
    def eprocess_alpha(self) -> float:
        """The level of each e-process: ``K⁺`` or ``K⁻`` crossing ``1/eprocess_alpha`` decides."""
        return self.alpha * self.sequential_share

    @property
    def final_alpha(self) -> float:
        """The one-sided level of the fixed look taken when the e-processes never crossed (0: none)."""
        return self.alpha * (1.0 - self.sequential_share)


class GenerationConfig(Strict):
    temperature: Annotated[float, Field(ge=0)] = 0.0
    top_p: Annotated[float, Field(gt=0, le=1)] = 1.0
    seed: int | None = Field(
        default=42,
        description="Request seeds derive from it: attempt k of a sample sends evalpipe.hashing.attempt_seed("
        "seed, benchmark, source_id, k), distinct per attempt and the same in every arm; null sends none.",
    )
    n: Annotated[int, Field(gt=0)] = 1
    repeats: Annotated[int, Field(ge=1)] = Field(
        default=1,
        description="Attempts per sample (EvalScope's TaskConfig.repeats): every sample is asked this many "
        "times; the summary scores the mean over samples of per-sample means, the sample being the cluster, "
        "and reports how often the attempts at one prompt differed (the server's nondeterminism).",
    )
    concurrency: Annotated[int, Field(gt=0)] = Field(
        default=8,
        description="Requests in flight at the server, for the whole run (all benchmarks share it: the "
        "recording proxy admits at most this many and queues the rest).",
    )
    schedule: Literal["pipelined", "sequential"] = Field(
        default="pipelined",
        description="pipelined: every benchmark's EvalScope work starts together, largest expected cost "
        "(max_tokens × samples) first, so one benchmark's tail overlaps the others' work; sequential: "
        "one benchmark's requests at a time, in config order (the next one's dataset load and prompt check "
        "overlap the previous one's requests; its first request follows the previous one's last answer). "
        "Either way the server sees at most "
        "`concurrency` requests, so its batch — and its answers — do not depend on the schedule.",
    )
    request_timeout_s: Annotated[float, Field(gt=0)] = Field(
        default=3600.0,
        description="Server time allowed per attempt (time queued in the proxy for a slot is not counted); "
        "the proxy answers 504 when it expires, which counts as a failed attempt and is retried.",
    )
    max_tokens: dict[str, Annotated[int, Field(gt=0)]] = Field(
        default_factory=dict, description="Per-benchmark max output tokens, keyed by benchmark name."
    )
    default_max_tokens: Annotated[int, Field(gt=0)] = 32768
    stream: bool = False
    retries: Annotated[int, Field(ge=0)] = Field(
        default=0,
        description="Re-sends of a failed request (0 = one attempt only); every attempt passes the recording "
        "proxy and is audited as a retry.",
    )
    retry_interval_s: Annotated[int, Field(ge=0)] = Field(
        default=10, description="Seconds EvalScope waits before re-sending a failed request."
    )
    sequential: SequentialConfig | None = Field(
        default=None,
        description="Paired runs: also judge each block with a non-inferiority margin sequentially — units "
        "(a sample with all its attempts in both arms) in the manifest's seeded sequence order, two betting "
        "e-processes at the margin, the verdict at the first crossing; with in_run (the default) the run "
        "stops sending there (a benchmark with a margin of its own, not pooled); compare.json's sequential "
        "block says where it stopped, what was never sent and the output tokens spent against the fixed "
        "design's.",
    )

    def max_tokens_for(self, benchmark: str) -> int:
        return self.max_tokens.get(benchmark, self.default_max_tokens)
