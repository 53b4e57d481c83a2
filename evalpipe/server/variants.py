"""Named server variants: ``cfg.variants[*].overrides`` applied to ``cfg.server``.

A paired comparison (``fp8_raw`` vs ``bf16_control``) differs only in a few launch settings; the variant
names them and everything else is inherited, so the two arms cannot drift apart by copy-paste.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from evalpipe.errors import ConfigError

if TYPE_CHECKING:  # the router kind applies a worker's overrides, and the config validates kinds: no cycle
    from evalpipe.config.models import RunConfig, ServerConfig


def effective_server(cfg: RunConfig, variant: str | None) -> ServerConfig:
    """``cfg.server`` with the overrides of ``variant`` applied (a fresh, validated copy).

    Override keys are ServerConfig field names; nested fields may be given as a mapping
    (``speculative: {num_steps: 2}``, merged into the base) or dotted (``multi_node.nnodes: 2``).
    ``None`` returns a copy of ``cfg.server``.  An unknown variant or field raises ConfigError naming it.
    """
    if variant is None:
        return cfg.server.model_copy(deep=True)
    names = [v.name for v in cfg.variants]
    if variant not in names:
        known = ", ".join(names) if names else "none defined"
        raise ConfigError(f"unknown variant {variant!r} (variants: {known})")
    index = names.index(variant)
    spec = cfg.variants[index]
    if spec.repeat_of is not None:  # A/A control: the named variant's launch settings, launched again
        return effective_server(cfg, spec.repeat_of)
    return with_overrides(
        cfg.server, spec.overrides, f"variants[{index}] ({variant}).overrides", f"variant {variant!r}"
    )


def with_overrides(
    base: ServerConfig, overrides: Mapping[str, object], where: str, what: str
) -> ServerConfig:
    """``base`` with ``overrides`` applied (ServerConfig field names, nested as a mapping or dotted), a fresh
    validated copy; ConfigError naming ``where`` for an unknown field or an invalid result.  Used for a
    variant's server and for a fleet worker's launch settings."""
    data = base.model_dump(mode="python")
    for key, value in overrides.items():
        path = key.split(".")
        _check_path(type(base), path, f"{where}.{key}")
        _assign(data, path, copy.deepcopy(value))
    try:
        return type(base).model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"{where}: {loc}: {err['msg']}")
        raise ConfigError(f"{what}: invalid server overrides", details=lines) from None


def _check_path(model: type[BaseModel], path: list[str], where: str) -> None:
    """Every component of a dotted override key must name a field of the (sub)model."""
    current: type[BaseModel] | None = model
    for part in path:
        if current is None or part not in current.model_fields:
            raise ConfigError(f"{where}: unknown server field {part!r}")
        current = _submodel(current.model_fields[part].annotation)


def _submodel(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()) or ():
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _assign(data: dict[str, Any], path: list[str], value: Any) -> None:
    target = data
    for part in path[:-1]:
        nxt = target.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            target[part] = nxt
        target = nxt
    last = path[-1]
    if isinstance(value, dict) and isinstance(target.get(last), dict):
        merged = dict(target[last])
        merged.update(value)
        target[last] = merged
    else:
        target[last] = value
