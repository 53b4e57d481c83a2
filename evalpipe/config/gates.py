"""``gates:``, ``component_tests:`` and ``design_assumptions:`` — what decides the verdict and what the
sign-off was designed for."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from evalpipe.config.base import Strict

PointsPerBlock = Annotated[float, Field(ge=0)] | dict[str, Annotated[float, Field(ge=0)]]

#: Gates a config may declare advisory (reported, never deciding the exit code).  ``max_error_findings`` is
#: not one of them: an error finding means a number cannot be trusted, which no config can waive.
AdvisoryGate = Literal[
    "min_score",
    "min_ci_lower",
    "max_transport_failures",
    "non_inferiority_margin_pts",
    "max_mde_pts",
    "min_output_throughput_ratio",
]


class GateConfig(Strict):
    min_score: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    min_ci_lower: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(default_factory=dict)
    max_error_findings: Annotated[int, Field(ge=0)] = 0
    max_transport_failures: Annotated[int, Field(ge=0)] | None = None
    min_output_throughput_ratio: Annotated[float, Field(gt=0)] | None = Field(
        default=None,
        description="Serving speed (speed: section, variants): the output-throughput ratio test/control of "
        "every workload (median across rounds) must be at least this; an incomplete round fails it.",
    )
    non_inferiority_margin_pts: PointsPerBlock | None = Field(
        default=None,
        description="Paired runs: the variant under test passes only when test − control is shown above −X "
        "points at one-sided error 0.025 (the Bonett-Price bound at a critical value calibrated to hold that at "
        "the margin whatever the discordance; with generation.sequential, its alpha split between the "
        "e-processes and one final look: evalpipe.stats.operating); inconclusive and inferior fail. One number "
        "for every benchmark and overall, or {benchmark|overall: X}.",
    )
    max_mde_pts: PointsPerBlock | None = Field(
        default=None,
        description="Paired runs: fail when the minimum detectable drop (80 % power) exceeds Y points, or no "
        "drop is detectable. One number for every block, or {benchmark|overall: Y}.",
    )
    must_catch_drop_pts: dict[str, Annotated[float, Field(gt=0, lt=100)]] = Field(
        default_factory=dict,
        description="Per block with a margin: the drop the sign-off must fail (points, test − control), e.g. "
        "the drop a known bug caused. `evalpipe plan` and compare.json state P(pass) there (the operating "
        "characteristic); it must exceed the block's margin.",
    )
    advisory: list[AdvisoryGate] = Field(
        default_factory=list,
        description="Gates evaluated and reported (summary, report, console) but not deciding the verdict "
        "or the exit code — e.g. a non-inferiority margin on a demo model too small to pass it. Each must "
        "be set above.",
    )

    @model_validator(mode="after")
    def _advisory_gates_set(self) -> GateConfig:
        for name in self.advisory:
            value = getattr(self, name)
            if value is None or value == {}:
                raise ValueError(f"advisory: {name} is not set (an advisory gate needs its threshold)")
        return self

    @model_validator(mode="after")
    def _drops_beyond_margins(self) -> GateConfig:
        for name, drop in self.must_catch_drop_pts.items():
            margin = self.points_for("non_inferiority_margin_pts", "all" if name == "overall" else name)
            if margin is None:
                raise ValueError(f"must_catch_drop_pts: {name} has no non_inferiority_margin_pts")
            if drop <= margin:
                raise ValueError(
                    f"must_catch_drop_pts: {name}: {drop:g} pts is within the margin ({margin:g} pts), "
                    "which the gate is built to pass"
                )
        return self

    def points_for(
        self, gate: Literal["non_inferiority_margin_pts", "max_mde_pts"], block: str
    ) -> float | None:
        """The gate's points for a compare.json block (``all`` is the overall block), or None."""
        value = getattr(self, gate)
        if value is None:
            return None
        if isinstance(value, dict):
            found = value.get("overall" if block == "all" else block)
            return float(found) if found is not None else None
        return float(value)


class ComponentTest(Strict):
    name: str
    pytest_args: list[str] = Field(
        description="Arguments to pytest, e.g. a test file of SGLang's TileLang kernels."
    )
    cwd: str | None = None
    required: bool = False


class DesignAssumption(Strict):
    """What a gated block's design assumes before any run of this release measured it."""

    accuracy: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="The control's expected accuracy p (2p(1-p) is shown beside the assumed discordance)."
    )
    discordance: Annotated[float, Field(gt=0, lt=1)] = Field(
        description="Share of samples whose correctness differs between two runs with no regression (A/A)."
    )
    basis: str = Field(
        description="Where the discordance comes from: the measurement and how it was carried over."
    )
