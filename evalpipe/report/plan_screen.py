"""``evalpipe plan``'s first screen: the design the config runs (``evalpipe.plan.screen.PlanDesign``) in at most
25 lines of at most 120 characters — per block and for the sign-off, one row per discordance case: P(pass | no
regression), P(pass | the must-catch drop), expected output tokens and GPU-hours."""

from __future__ import annotations

import textwrap

from evalpipe.config.models import RunConfig
from evalpipe.plan.operating import GatedBlock
from evalpipe.plan.screen import PlanDesign, plan_design, plan_report

#: The first screen's bounds (``tests/plan/test_plan_screen.py`` holds every config to them).
MAX_LINES = 25
MAX_WIDTH = 120


def _tokens(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.1f} k"


def _hours(x: float | None) -> str:
    return f"{x:.3g}" if x is not None else "–"


#: The table's columns: (width, align) of block, units, margin, must-catch drop, case, ψ, P(pass | none),
#: P(pass | catch), output tokens, GPU-hours.
_COLUMNS = (
    (18, "<"),
    (5, ">"),
    (7, ">"),
    (8, ">"),
    (8, "<"),
    (5, ">"),
    (12, ">"),
    (24, "<"),
    (9, ">"),
    (8, ">"),
)


def _row(*cells: str) -> str:
    return (
        "  " + " ".join(f"{c:{align}{width}}" for c, (width, align) in zip(cells, _COLUMNS, strict=True))
    ).rstrip()


def _wrapped(head: str, text: str) -> list[str]:
    return textwrap.wrap(text, MAX_WIDTH, initial_indent=head, subsequent_indent=" " * len(head))


def design_lines(cfg: RunConfig, gated: list[GatedBlock]) -> list[str]:
    """The first screen (module docstring) of the design ``cfg`` runs over ``gated``."""
    return screen_lines(plan_design(cfg, gated))


def plan_json(cfg: RunConfig, gated: list[GatedBlock], not_planned: list[str]) -> str:
    """``evalpipe plan --json``: the design first, then the alternatives and the reach search
    (``evalpipe.plan.screen.PlanReport``)."""
    return plan_report(cfg, gated, not_planned).model_dump_json(indent=2)


def _pts(x: float | None) -> str:
    return f"{x:g} pts" if x is not None else "–"


def screen_lines(plan: PlanDesign) -> list[str]:
    """The first screen (module docstring)."""
    lines = [
        f"{plan.config} runs the {plan.design} design: {plan.arms} arm(s) in turn, one-sided α {plan.alpha:g}",
        *_wrapped("  rule: ", plan.rule),
        *_wrapped("  assumes: ", plan.assumes),
        _row(
            "block",
            "units",
            "margin",
            "catch",
            "ψ case",
            "ψ",
            "P(pass|none)",
            "P(pass|catch)",
            "out tok",
            "GPU-h",
        ),
    ]
    for block in plan.blocks:
        for i, case in enumerate(block.cases):
            first = i == 0
            lines.append(
                _row(
                    block.block if first else "",
                    str(block.units) if first else "",
                    _pts(block.margin_pts) if first else "",
                    _pts(block.must_catch_pts) if first else "",
                    case.case,
                    f"{case.discordance:.3f}",
                    f"{case.p_pass_no_regression:.3f}",
                    f"{case.p_pass_must_catch:.3f}" if case.p_pass_must_catch is not None else "no drop set",
                    _tokens(case.output_tokens),
                    _hours(case.gpu_hours),
                )
            )
    for i, s in enumerate(plan.sign_off):
        miss = (
            f"{s.p_pass_single_miss:.4f} ({s.miss_block})"
            if s.p_pass_single_miss is not None
            else "no drop set"
        )
        lines.append(
            _row(
                f"sign-off, {len(plan.blocks)} blocks" if i == 0 else "",
                "",
                "",
                "",
                s.case,
                "",
                f"{s.p_pass_no_regression:.3f}",
                miss,
                _tokens(s.output_tokens),
                _hours(s.gpu_hours),
            )
        )
    lines.append(
        "  none: no regression; catch: the block at its must-catch drop (sign-off: the worst block alone, the others "
        "unchanged)"
    )
    chosen = [
        f"{s.more_attempts_share:.0%} ({s.case})" for s in plan.sign_off if s.more_attempts_share is not None
    ]
    tokens = "out tok: expected output tokens, every arm in turn"
    lines += _wrapped(
        "  ", f"{tokens}; more attempts chosen on {', '.join(chosen)} of runs" if chosen else tokens
    )
    if plan.gpu_hours_basis is not None:
        lines += _wrapped("  GPU-h (decode): ", plan.gpu_hours_basis)
    else:
        lines.append("  GPU-h: give --from RUN, a run whose speed stage measured the decode rate")
    lines.append(
        "  more: --detail (the fixed and sequential designs, what would reach P(pass|none) 0.95), --json"
    )
    return lines
