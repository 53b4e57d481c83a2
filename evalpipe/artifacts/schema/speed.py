"""``speed.json``: one variant's serving benchmark, round by round, traceable to the client's raw files.

Every figure in a :class:`RoundRecord` is the client's own (parsed from the files it wrote, which are kept
verbatim beside ``speed.json``), except where the client does not report it: then the record says which
figures evalpipe derived and from what (``derived``).  Non-finite values (SGLang writes ``Infinity``/``NaN``
literals) become ``null`` with a ``problems`` line; a round whose ``completed`` is below ``requested`` stays
in the file as it is and makes every comparison that uses it inconclusive — it is never averaged away.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalpipe.artifacts.schema.base import Artifact
from evalpipe.config.speed import SpeedClientName, SpeedConfig, SpeedWorkload

#: How the client turns per-request values into a percentile (they are not comparable across clients).
PercentileMethod = Literal["nearest-rank", "linear-interpolation"]
Severity = Literal["error", "warn", "info"]
#: How the variants' rounds were scheduled: interleaved in time (paired), or one variant after the other.
Schedule = Literal["alternating", "sequential", "single"]


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LatencyStats(_Row):
    """One latency metric of one round, in milliseconds, as the client computed it."""

    mean: float | None = None
    median: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None


class ClientInfo(_Row):
    name: SpeedClientName
    program: str = Field(description="e.g. 'evalscope perf' or 'python -m sglang.bench_serving'")
    version: str
    argv: list[str] = Field(description="Exact argv, secrets redacted.")


class RawFile(_Row):
    """A file the client wrote, kept byte for byte (secrets aside) in the round directory."""

    path: str = Field(description="Relative to the directory holding speed.json.")
    sha256: str
    bytes: int
    redactions: int = Field(default=0, description="Secret values replaced by *** before the file was kept.")


class Problem(_Row):
    severity: Severity
    workload: str | None = None
    round_index: int | None = None
    message: str


class RoundRecord(_Row):
    """One client run: one workload, one round, one variant."""

    workload: str
    round_index: Annotated[int, Field(ge=0)]
    seed: int = Field(description="Prompt seed of this round; the same for every variant.")
    argv: list[str] = Field(
        default_factory=list, description="The client's exact argv for this round, secrets redacted."
    )
    started_at: datetime
    finished_at: datetime
    client_exit_code: int | None = Field(description="None when the client had to be killed (timeout).")
    timed_out: bool = False
    requested: int = Field(description="Measured requests asked for (warm-up excluded).")
    completed: int = Field(description="Requests that succeeded, as the client counted them.")
    duration_s: float | None = None
    request_throughput: float | None = Field(default=None, description="Completed requests per second.")
    input_throughput: float | None = Field(
        default=None, description="Prompt tokens of completed requests per second."
    )
    output_throughput: float | None = Field(default=None, description="Output tokens per second.")
    total_throughput: float | None = None
    input_tokens: int | None = Field(default=None, description="Prompt tokens of the completed requests.")
    output_tokens: int | None = Field(default=None, description="Output tokens of the completed requests.")
    ttft_ms: LatencyStats = Field(default_factory=LatencyStats)
    itl_ms: LatencyStats = Field(default_factory=LatencyStats)
    tpot_ms: LatencyStats = Field(default_factory=LatencyStats)
    e2e_ms: LatencyStats = Field(default_factory=LatencyStats)
    percentile_method: PercentileMethod
    prompt_set_sha256: str | None = Field(
        default=None,
        description="sha256 over the sorted sha256s of the measured prompts (evalscope: from its request log); "
        "equal across variants when they got identical prompts. None where the client keeps no prompts.",
    )
    cached_prompt_tokens_pct: float | None = Field(
        default=None, description="Prompt tokens the server reported as served from its prefix cache, in %."
    )
    lengths_as_requested: bool | None = Field(
        default=None,
        description="Every completed request had the workload's prompt and output length (None: not checkable).",
    )
    derived: list[str] = Field(
        default_factory=list, description="Figures evalpipe computed from the raw per-request rows, and how."
    )
    raw_files: list[RawFile] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every requested request completed and the client exited cleanly."""
        return self.client_exit_code == 0 and not self.timed_out and self.completed == self.requested

    @property
    def usable(self) -> bool:
        """Complete, and no request of another length than asked: the round measured the workload."""
        return self.complete and self.lengths_as_requested is not False


class WorkloadRounds(_Row):
    workload: SpeedWorkload
    name: str
    rounds: list[RoundRecord] = Field(default_factory=list)


class LoadAverage(_Row):
    """``/proc/loadavg`` (1, 5, 15 min) and the CPU count: timings on a busy host are slower and noisier."""

    one: float
    five: float
    fifteen: float
    cpus: int


class SpeedArtifact(Artifact):
    schema_version: int = 1
    variant: str
    server_url: str
    served_model: str
    client: ClientInfo = Field(description="The client program, its version and the argv of the first round.")
    tokenizer: str | None = Field(description="Tokenizer directory the client used, and its source.")
    tokenizer_json_sha256: str | None = None
    config: SpeedConfig
    schedule: Schedule = Field(
        description="How this variant's rounds were interleaved with the other variants'."
    )
    load_before: LoadAverage | None = None
    load_after: LoadAverage | None = None
    workloads: list[WorkloadRounds] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)

    def rounds_for(self, workload: str) -> list[RoundRecord]:
        for w in self.workloads:
            if w.name == workload:
                return w.rounds
        return []
