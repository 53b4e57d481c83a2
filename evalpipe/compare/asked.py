"""A comparison asked from outside a paired run (``evalpipe compare``): the A/A pair beside the arms — which arm
the repeat repeats, read from the runs themselves — and the gate policy, a config's or one margin for every
block."""

from __future__ import annotations

from pathlib import Path

from evalpipe.artifacts import RunDir, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.run import RunRecord
from evalpipe.compare.paired_design import AAPair, Arms, GatePolicy
from evalpipe.config.loader import load_config
from evalpipe.config.models import SequentialConfig
from evalpipe.errors import ConfigError, EvalpipeError
from evalpipe.numerics.compare import numerics_for


def _variant(rundir: RunDir) -> str | None:
    try:
        return read_model(rundir.run_record, RunRecord).variant
    except EvalpipeError:
        return None


def repeated_variant(repeat: Path) -> str | None:
    """The variant the run ``repeat`` repeats (its config copy's ``repeat_of``); None when it records none."""
    rundir = RunDir(repeat)
    name = _variant(rundir)
    if name is None or not rundir.config_copy.is_file():
        return None
    try:
        cfg = load_config(rundir.config_copy, check_sampling=False)
    except EvalpipeError:
        return None
    return next((v.repeat_of for v in cfg.variants if v.name == name), None)


def aa_pair_beside(repeat: Path, arms: Arms) -> AAPair:
    """The A/A pair of ``repeat`` beside ``arms``: the run it repeats is the arm under test when its recorded
    ``repeat_of`` names the test arm's variant, else the control (as ``evalpipe run`` pairs them)."""
    of = repeated_variant(repeat)
    test = _variant(RunDir(arms.test))
    return AAPair(repeat, arms.test if of is not None and of == test else arms.control)


def gate_policy(config: Path | None, margin: float | None, sequential: bool, alpha: float | None,
                share: float | None) -> GatePolicy:  # fmt: skip
    """``config``'s gate policy (``GatePolicy.of``: as the run itself judged), else ``margin`` for every block
    (None: no gate), unit by unit too with ``sequential``, at one-sided ``alpha`` (default 0.025) of which the
    e-processes spend ``share`` (default 0.5); a config with any of the others is refused."""
    if config is not None:
        own = {"--margin": margin is not None, "--sequential": sequential, "--alpha": alpha is not None,
               "--sequential-share": share is not None}  # fmt: skip
        if any(own.values()):
            given = ", ".join(name for name, set_ in own.items() if set_)
            raise ConfigError(f"--config judges by the config's gates: drop {given} (or --config)")
        return GatePolicy.of(load_config(config, check_sampling=False))
    alpha = 0.025 if alpha is None else alpha
    share = 0.5 if share is None else share
    if sequential and margin is None:
        raise ConfigError("--sequential judges against a margin: give --margin X")
    if margin is not None and margin < 0:
        raise ConfigError(f"--margin: must be >= 0 points, got {margin:g}")
    if not 0 < alpha < 0.5:
        raise ConfigError(f"--alpha: must lie in (0, 0.5), got {alpha:g}")
    if not 0 < share <= 1:
        raise ConfigError(f"--sequential-share: must lie in (0, 1], got {share:g}")
    return GatePolicy(
        margins=lambda _block: margin,
        alpha=alpha,
        sequential=SequentialConfig(alpha=alpha, sequential_share=share) if sequential else None,
    )


def with_numerics(result: CompareResult, config: Path | None) -> CompareResult:
    """``result`` with its arms' numerics block (``numerics.json`` beside each), judged by ``config``'s
    ``numerics.fail_above`` (no gate without a config): what ``evalpipe run`` wrote, re-derived."""
    cfg = load_config(config, check_sampling=False) if config is not None else None
    threshold = cfg.numerics.fail_above if cfg is not None and cfg.numerics is not None else None
    block = numerics_for(result, fail_above=threshold)
    return result.model_copy(update={"numerics": block}) if block is not None else result
