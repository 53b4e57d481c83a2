"""A stand-in speed client: a real subprocess per round that writes a small result file, so the speed
orchestration (order, seeds, speed.json, comparison, audit, report) runs without a benchmark client.

The server at a URL ending in ``:2`` is "fast" (output 120 + seed % 3 tok/s), any other "slow" (100 + …);
``short_seeds`` makes the rounds of those seeds complete one request fewer than requested."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evalpipe.artifacts.schema.speed import LatencyStats, PercentileMethod
from evalpipe.config.speed import SpeedClientName, SpeedConfig
from evalpipe.speed.clients.base import ParsedRound, RoundPlan

SCRIPT = """
import json, sys, time
from pathlib import Path
out, url, seed, sleep = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
time.sleep(sleep)
fast = url.endswith(":2")
out.write_text(json.dumps({"url": url, "seed": seed, "tput": (120.0 if fast else 100.0) + seed % 3,
                           "at": time.time()}))
"""


class StandInClient:
    name: SpeedClientName = "evalscope"
    program = "stand-in"
    percentile_method: PercentileMethod = "nearest-rank"

    def __init__(self, sleep_s: float = 0.0, short_seeds: frozenset[int] = frozenset()) -> None:
        self.sleep_s = sleep_s
        self.short_seeds = short_seeds

    def version(self) -> str:
        return "0"

    def check(self, cfg: SpeedConfig, tokenizer_dir: Path | None) -> None:
        return None

    def argv(self, plan: RoundPlan, cfg: SpeedConfig) -> list[str]:
        return [sys.executable, "-c", SCRIPT, str(plan.round_dir / "result.json"), plan.base_url, str(plan.seed),
                str(self.sleep_s)]  # fmt: skip

    def env(self, api_key: str | None) -> dict[str, str]:
        return {}

    def parse(self, plan: RoundPlan) -> ParsedRound:
        path = plan.round_dir / "result.json"
        if not path.is_file():
            return ParsedRound(problems=["no result.json"])
        data = json.loads(path.read_text())
        tput = data["tput"]
        return ParsedRound(
            completed=plan.workload.num_prompts - (1 if data["seed"] in self.short_seeds else 0),
            output_throughput=tput,
            input_throughput=2 * tput,
            ttft_ms=LatencyStats(median=1000.0 / tput, p99=2000.0 / tput),
            prompt_set_sha256=f"seed-{data['seed']}",
        )
