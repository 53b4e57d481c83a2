"""YAML → config models, with every validation error named by file, line and field path.

Error lines look like ``configs/x.yaml:23: benchmarks[2].sampling.per_stratum: must be > 0``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from evalpipe.config.base import error_message
from evalpipe.config.models import RunConfig, SamplingRule
from evalpipe.config.server import moved_keys
from evalpipe.errors import ConfigError

M = TypeVar("M", bound=BaseModel)

_TAGS = {"path", "inline"}  # discriminator tags, not part of the user's YAML path
#: libyaml's safe loader where PyYAML was built with it (the wheels are): the same documents and marks as the
#: pure-Python ``SafeLoader``, parsed in C — a config and its sampling rules are read at every stage and plan.
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    if not path.is_file():
        raise ConfigError(f"{path}: file not found")
    text = path.read_text(encoding="utf-8")
    loader = _SAFE_LOADER(text)
    try:  # what yaml.safe_load does, keeping the node (its lines name the fields): one parse, not two
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()
    return data, node


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """Line (1-based) of the deepest YAML node reachable along ``loc``."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = None
            for key, value in node.value:
                if key.value == part:
                    nxt = value
                    line = key.start_mark.line + 1
                    break
            if nxt is None:
                return line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


class YamlLines:
    """Where a field of a loaded YAML file is: ``where(loc)`` is ``path:line`` (or ``path``) for a field path
    such as ``("benchmarks", 2, "name")`` — so a check run after loading (the resolve step) names the line."""

    def __init__(self, path: Path, node: yaml.Node | None, data: Any = None) -> None:
        self.path, self._node, self.data = path, node, data

    @classmethod
    def of(cls, path: Path) -> YamlLines:
        return cls(Path(path), _read_yaml(Path(path))[1])

    def where(self, loc: tuple[Any, ...]) -> str:
        line = _line_of(self._node, loc) if self._node is not None else None
        return f"{self.path}:{line}" if line else str(self.path)

    def line(self, loc: tuple[Any, ...], message: str) -> str:
        """One error line: ``path:line: field.path: message`` (the form every config error takes)."""
        return f"{self.where(loc)}: {format_loc(loc)}: {message}"


def validation_lines(exc: ValidationError, path: Path | None, node: yaml.Node | None) -> list[str]:
    located = YamlLines(path, node) if path is not None else None
    lines = []
    for err in exc.errors():
        loc = tuple(p for p in err["loc"] if p not in _TAGS)
        message = error_message(err)
        lines.append(located.line(loc, message) if located else f"{format_loc(loc)}: {message}")
    return lines


def _validate(model: type[M], data: Any, path: Path, node: yaml.Node | None) -> M:
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = validation_lines(exc, path, node)
        raise ConfigError(f"{path}: {len(lines)} error(s)", details=lines) from None


#: Folders of sampling rules that were renamed: a config still naming the old one is refused in one line that
#: names the file to use instead (the config then names the file it reads; nothing is redirected silently).
FORMER_RULE_FOLDERS: dict[str, str] = {"sampling-rules": "samplers"}


def _moved_rule(path: Path) -> Path | None:
    """Where a sampling-rule file under a renamed folder now is (``None`` when it is not one, or not there)."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        new = FORMER_RULE_FOLDERS.get(part)
        if new is not None:
            moved = Path(*parts[:i], new, *parts[i + 1 :])
            if moved.is_file():
                return moved
    return None


def load_sampling_rule(path: Path, *, benchmark: str | None = None) -> SamplingRule:
    path = Path(path)
    moved = None if path.is_file() else _moved_rule(path)
    if moved is not None:
        raise ConfigError(f"{path}: file not found: the sampling rules moved to {moved.parent}/ (use {moved})")
    data, node = _read_yaml(path)
    plan = _validate(SamplingRule, data, path, node)
    if benchmark is not None:
        if plan.benchmark is None:
            plan.benchmark = benchmark
        elif plan.benchmark != benchmark:
            raise ConfigError(f"{path}: benchmark: the rule is for {plan.benchmark!r}, used by {benchmark!r}")
    return plan


def load_config(path: Path, *, check_sampling: bool = True) -> RunConfig:
    """Load and validate a run config as plain data; with ``check_sampling`` also load every referenced sampling rule.

    Whether its names are registered (benchmarks, the server kind) is not checked here: that is the resolve
    step's (``evalpipe.resolve.load_run``), which every command that acts on a config goes through."""
    return load_config_lines(path, check_sampling=check_sampling)[0]


def load_config_lines(path: Path, *, check_sampling: bool = True) -> tuple[RunConfig, YamlLines]:
    """:func:`load_config`, with where each of its fields sits in the file."""
    path = Path(path)
    data, node = _read_yaml(path)
    cfg = _validate(RunConfig, data, path, node)
    cfg._config_path = path.resolve()
    located = YamlLines(path, node, data)
    if check_sampling:
        errors: list[str] = []
        for i, bench in enumerate(cfg.benchmarks):
            try:
                resolve_sampling_rule(cfg, bench.name)
            except ConfigError as exc:
                errors.append(located.line(("benchmarks", i, "sampling"), exc.message))
                errors.extend(exc.details)
        if errors:
            raise ConfigError(f"{path}: invalid sampling rule(s)", details=errors)
    return cfg, located


def resolve_sampling_rule(cfg: RunConfig, benchmark: str) -> SamplingRule:
    """The sampling rule a benchmark uses (inline, or loaded from its file), with ``benchmark`` filled in."""
    bench = cfg.benchmark(benchmark)
    if isinstance(bench.sampling, SamplingRule):
        plan = bench.sampling.model_copy()
        plan.benchmark = bench.name
        return plan
    return load_sampling_rule(cfg.resolve_path(bench.sampling), benchmark=bench.name)


def moved_settings_notice(located: YamlLines) -> str | None:
    """One line naming every kind setting the YAML sets at its old place (``server.tp_size``, a variant's
    ``overrides: {tp_size: …}``), read as ``server.settings`` (``evalpipe.config.server.MOVED_TO_SETTINGS``);
    None when there is none."""
    data = _mapping(located.data)
    server = _mapping(data.get("server"))
    found: list[tuple[tuple[Any, ...], str]] = [(("server", k), k) for k in moved_keys(server)]
    for j, worker in enumerate(_items(_mapping(server.get("router")).get("workers"))):
        overrides = _mapping(worker).get("overrides")
        found += [(("server", "router", "workers", j, "overrides", k), k) for k in moved_keys(overrides)]
    for i, variant in enumerate(_items(data.get("variants"))):
        overrides = _mapping(variant).get("overrides")
        found += [(("variants", i, "overrides", k), k) for k in moved_keys(overrides)]
    if not found:
        return None
    first = located.where(found[0][0])
    named = ", ".join(format_loc(loc) for loc, _ in found)
    return (
        f"{first}: note: {named} read as the server kind's settings (write them under server.settings, "
        "or settings.<key> in overrides)"
    )


def _mapping(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
