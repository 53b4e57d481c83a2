"""Run-config and sampling-plan models: ``RunConfig`` here, each section in a module of its own, all re-exported.

The config describes a run completely: which model and how the server is launched (or which endpoint
to attach to), the generation settings, and per benchmark the EvalScope adapter, few-shot count,
sampling rule, dataset source and optional dataset fingerprint pin.  Every model forbids unknown keys
so that a typo in a YAML file is an error that names the field, never a silently ignored setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, model_validator

from evalpipe.config.base import SHA256_PATTERN, Strict
from evalpipe.config.benchmarks import BenchmarkConfig, DatasetSource, SamplingFilter, SamplingRule
from evalpipe.config.code_execution import CodeExecutionConfig
from evalpipe.config.gates import AdvisoryGate, ComponentTest, DesignAssumption, GateConfig, PointsPerBlock
from evalpipe.config.generation import GenerationConfig, SequentialConfig
from evalpipe.config.model import ModelConfig
from evalpipe.config.numerics import NumericsConfig
from evalpipe.config.registry_names import BenchmarkName, ServerKindName, StratifyBy
from evalpipe.config.server import (
    COMMAND_PLACEHOLDERS,
    MOVED_TO_SETTINGS,
    AnswerKeyConfig,
    ReplayConfig,
    RouterConfig,
    RouterWorker,
    ServerConfig,
    ServerVariant,
)
from evalpipe.config.speed import SpeedConfig

__all__ = [
    "COMMAND_PLACEHOLDERS",
    "MOVED_TO_SETTINGS",
    "SHA256_PATTERN",
    "AdvisoryGate",
    "AnswerKeyConfig",
    "BenchmarkConfig",
    "BenchmarkName",
    "CodeExecutionConfig",
    "ComponentTest",
    "DatasetSource",
    "DesignAssumption",
    "GateConfig",
    "GenerationConfig",
    "ModelConfig",
    "NumericsConfig",
    "PointsPerBlock",
    "ReplayConfig",
    "RouterConfig",
    "RouterWorker",
    "RunConfig",
    "SamplingFilter",
    "SamplingRule",
    "SequentialConfig",
    "ServerConfig",
    "ServerKindName",
    "ServerVariant",
    "SpeedConfig",
    "StratifyBy",
    "Strict",
]


class RunConfig(Strict):
    schema_version: int = 1
    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    description: str | None = None
    model: ModelConfig
    server: ServerConfig
    variants: list[ServerVariant] = Field(default_factory=list)
    parallel_variants: bool = Field(
        default=False,
        description="Run the variants at the same time, each on its own server(s); refused unless their "
        "servers share nothing (worker URLs, ports, GPUs). Default: one after the other. With speed:, the "
        "servers stay up until every variant's evaluation is done and the speed rounds alternate across them.",
    )
    generation: GenerationConfig = Field(default_factory=GenerationConfig)
    sampling_seed: int = 42
    benchmarks: Annotated[list[BenchmarkConfig], Field(min_length=1)]
    pools: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Benchmarks judged as one paired comparison, e.g. {competition_math: [aime24, aime25, "
        "aime26]}: compare.json's pools hold one block per pool over the members' samples together (its "
        "own interval, MDE, non-inferiority and sequential verdict; gates name it like a benchmark); the "
        "members keep their own blocks. Members must be configured benchmarks, at least two, in one pool.",
    )
    output_root: str = "results"
    dataset_root: str | None = Field(default=None, description="Local mirror root for every benchmark.")
    design: dict[str, DesignAssumption] = Field(
        default_factory=dict,
        description="Per gated block (benchmark or pool): the accuracy and the no-regression discordance "
        "`evalpipe plan` designs under, with the argument for them; without one it assumes 2p(1-p).",
    )
    gates: GateConfig = Field(default_factory=GateConfig)
    component_tests: list[ComponentTest] = Field(default_factory=list)
    speed: SpeedConfig | None = Field(
        default=None,
        description="Serving benchmark on each variant's server after its accuracy evaluation: right after it, "
        "or with parallel_variants once every variant's evaluation is done, rounds alternating across the live "
        "servers (speed.json; variants: speed_compare.json).",
    )
    numerics: NumericsConfig | None = Field(
        default=None,
        description="The numerics probe on every variant's server, right after its launch: the next-token "
        "log-probabilities of seeded prompts (numerics.json); paired runs compare them against the A/A arm "
        "(compare.json's numerics block).",
    )
    code_execution: CodeExecutionConfig = Field(
        default_factory=CodeExecutionConfig,
        description="The sandbox that runs model-written code (LiveCodeBench's programs): auto = the "
        "strongest available (bwrap, then unshare); none needs allow_unsandboxed: true.",
    )

    # Set by the loader: where the YAML lives, for resolving relative paths. Not part of the schema.
    _config_path: Path | None = None
    # Set by ``accuracy_only`` (``evalpipe run --no-speed``); recorded in run.json. Not part of the schema.
    _no_speed: bool = False
    _speed_gate_waived: bool = False

    @model_validator(mode="after")
    def _unique(self) -> RunConfig:
        names = [b.name for b in self.benchmarks]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"benchmark listed more than once: {', '.join(dup)}")
        vnames = [v.name for v in self.variants]
        vdup = sorted({n for n in vnames if vnames.count(n) > 1})
        if vdup:
            raise ValueError(f"variant listed more than once: {', '.join(vdup)}")
        if self.parallel_variants and len(self.variants) < 2:
            raise ValueError("parallel_variants needs at least two variants")
        names_set = set(names)
        pooled: list[str] = []
        for pool, members in self.pools.items():
            if pool in names_set or pool in ("all", "overall"):
                raise ValueError(f"pools.{pool}: the name is already a benchmark or the overall block")
            unknown = [m for m in members if m not in names_set]
            if unknown or len(set(members)) < 2 or len(set(members)) != len(members):
                raise ValueError(
                    f"pools.{pool}: needs at least two distinct configured benchmarks"
                    + (f" (not configured: {', '.join(unknown)})" if unknown else "")
                )
            pooled += members
        twice = sorted({m for m in pooled if pooled.count(m) > 1})
        if twice:
            raise ValueError(f"pools: a benchmark belongs to one pool at most: {', '.join(twice)}")
        if self.generation.sequential is not None and self.gates.non_inferiority_margin_pts in (None, {}):
            raise ValueError(
                "generation.sequential judges against gates.non_inferiority_margin_pts: set the margin"
            )
        self._check_pilot()
        for i, v in enumerate(self.variants):
            if v.repeat_of is None:
                continue
            target = next((t for t in self.variants if t.name == v.repeat_of), None)
            if target is None or target is v:
                raise ValueError(
                    f"variants[{i}] ({v.name}).repeat_of: {v.repeat_of!r} is not another variant"
                )
            if target.repeat_of is not None:
                raise ValueError(f"variants[{i}] ({v.name}).repeat_of: {v.repeat_of!r} is itself a repeat")
            if i == 0:
                raise ValueError(
                    f"variants[0] ({v.name}): the first variant is the one under test, not a repeat"
                )
        return self

    def _check_pilot(self) -> None:
        """``generation.sequential.pilot`` sizes attempts from a paired pilot judged by the e-processes alone."""
        seq = self.generation.sequential
        if seq is None or seq.pilot is None:
            return
        where = "generation.sequential.pilot"
        if seq.sequential_share != 1.0:
            raise ValueError(f"{where}: needs sequential_share 1 (the e-processes alone judge; no fixed look)")
        if not seq.in_run:
            raise ValueError(f"{where}: needs in_run true (the pilot is sent before the rest)")
        if self.generation.repeats != 1:
            raise ValueError(f"{where}: needs generation.repeats 1 (the pilot chooses the attempts)")
        if not any(v.repeat_of is None for v in self.variants[1:]):
            raise ValueError(f"{where}: needs variants with a control (the pilot measures the paired discordance)")
        if self.parallel_variants:
            raise ValueError(
                f"{where}: needs the variants run in turn (parallel_variants: false): each arm's server is "
                "launched for the pilot and again for the rest"
            )
        if self.generation.schedule != "pipelined":
            raise ValueError(f"{where}: needs generation.schedule pipelined (a pool's members send side by side)")
        missing = [name for name in self.pilot_blocks() if name not in self.design]
        if missing:
            raise ValueError(
                f"{where}: needs design: accuracy for every gated block (its chance level 2p(1-p)); "
                f"missing: {', '.join(missing)}"
            )

    def pilot_blocks(self) -> dict[str, tuple[str, ...]]:
        """Block → members of every block an internal pilot sizes: each pool with a margin, then each other
        benchmark with a margin of its own (``evalpipe.run.sequential_stop.gated_blocks`` under the pipelined
        schedule the pilot needs); empty without ``generation.sequential.pilot``."""
        seq = self.generation.sequential
        if seq is None or seq.pilot is None:
            return {}
        margin = self.gates.points_for
        out = {p: tuple(m) for p, m in self.pools.items() if margin("non_inferiority_margin_pts", p) is not None}
        taken = {m for members in out.values() for m in members}
        for b in self.benchmarks:
            if b.name not in taken and margin("non_inferiority_margin_pts", b.name) is not None:
                out[b.name] = (b.name,)
        return out

    def task_attempts(self, benchmark: str) -> int:
        """EvalScope's ``repeats`` for the benchmark's task: ``generation.repeats``, or for a member of a block an
        internal pilot sizes the most attempts it may choose (which of them are sent is the pilot's decision)."""
        seq = self.generation.sequential
        if seq is not None and seq.pilot is not None:
            if any(benchmark in members for members in self.pilot_blocks().values()):
                return seq.pilot.attempts
        return self.generation.repeats

    @property
    def config_path(self) -> Path | None:
        return self._config_path

    @property
    def no_speed(self) -> bool:
        """``evalpipe run --no-speed``: the speed section is not run (see ``accuracy_only``)."""
        return self._no_speed

    @property
    def speed_gate_waived(self) -> bool:
        """``--waive-speed-gate``: ``min_output_throughput_ratio`` is reported, not deciding the verdict."""
        return self._speed_gate_waived

    def accuracy_only(self, *, waive_speed_gate: bool = False) -> RunConfig:
        """This config without its ``speed:`` section, marked as such (``evalpipe run --no-speed``).

        The run then writes the config it ran (no speed section) as config.yaml and records ``no_speed``
        (and ``speed_gate_waived``) in run.json, so the audit can say "serving speed not measured
        (--no-speed)" and fail ``gates.min_output_throughput_ratio`` with that reason — unless waived.
        """
        out = self.model_copy(update={"speed": None})
        out._config_path = self._config_path
        out._no_speed = True
        out._speed_gate_waived = waive_speed_gate
        return out

    def base_dir(self) -> Path:
        return self._config_path.parent if self._config_path else Path.cwd()

    def resolve_path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else Path(os.path.normpath(self.base_dir() / p))

    def model_path_for_server(self) -> str:
        """``model.path`` as a launched server receives it: resolved against the config's directory when
        it exists there, else verbatim (a hub id, or a path on the serving host)."""
        candidate = self.resolve_path(self.model.path)
        return str(candidate) if candidate.exists() else self.model.path

    def benchmark(self, name: str) -> BenchmarkConfig:
        for b in self.benchmarks:
            if b.name == name:
                return b
        raise KeyError(name)

    def max_tokens_for(self, name: str) -> int:
        b = self.benchmark(name)
        return b.max_tokens or self.generation.max_tokens_for(name)
