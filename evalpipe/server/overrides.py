"""A server config with overrides applied: a variant's server, a fleet worker's launch settings.

Kept apart from ``variants`` (which looks variants up in the config and kinds up in the registry) because
the router kind applies its workers' overrides: this module imports no kind, and is given the lookup.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from evalpipe.errors import ConfigError

if TYPE_CHECKING:
    from evalpipe.config.models import ServerConfig
    from evalpipe.server.kinds.base import Kind


def with_overrides(
    base: ServerConfig,
    overrides: Mapping[str, object],
    where: str,
    what: str,
    kind_of: Callable[[str], Kind],
) -> ServerConfig:
    """``base`` with ``overrides`` applied (ServerConfig field names, nested as a mapping or dotted), a fresh
    validated copy, checked by its kind (``kind_of``: the registry's lookup); ConfigError naming ``where`` for an
    unknown field or an invalid result.  The kind's settings are addressed under ``settings``
    (``settings: {tp_size: 2}``, merged key by key, or ``settings.tp_size: 2``) and checked against its
    ``settings_model``.  Used for a variant's server and for a fleet worker's launch
    settings."""
    data = base.model_dump(mode="python")
    for key, value in overrides.items():
        path = key.split(".")
        _check_path(type(base), path, f"{where}.{key}")
        _assign(data, path, copy.deepcopy(value))
    try:
        result = type(base).model_validate(data)
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"{where}: {loc}: {err['msg']}")
        raise ConfigError(f"{what}: invalid server overrides", details=lines) from None
    try:  # the checks of its kind, which the plain-data model cannot run (evalpipe.resolve does for the config)
        kind = kind_of(result.kind)
        kind.check_config(result)
    except (KeyError, ValueError) as exc:
        reason = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        raise ConfigError(f"{what}: invalid server overrides", details=[f"{where}: {reason}"]) from None
    wrong = kind.settings_errors(result)
    if wrong:
        details = [f"{where}: {'.'.join(['settings', *map(str, loc)])}: {msg}" for loc, msg in wrong]
        raise ConfigError(f"{what}: invalid server overrides", details=details)
    return result


def _check_path(model: type[BaseModel], path: list[str], where: str) -> None:
    """Every component of a dotted override key must name a field of the (sub)model; below a plain mapping
    (``settings``: the kind's model checks it) any key goes."""
    current: type[BaseModel] | None = model
    for part in path:
        if current is None or part not in current.model_fields:
            raise ConfigError(f"{where}: unknown server field {part!r}")
        annotation = current.model_fields[part].annotation
        if getattr(annotation, "__origin__", None) is dict:
            return
        current = _submodel(annotation)


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
