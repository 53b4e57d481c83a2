"""Named server variants: ``cfg.variants[*].overrides`` applied to ``cfg.server``.

A paired comparison (``fp8_raw`` vs ``bf16_control``) differs only in a few launch settings; the variant
names them and everything else is inherited, so the two arms cannot drift apart by copy-paste.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalpipe.errors import ConfigError
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.overrides import with_overrides

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig, ServerConfig


def effective_server(cfg: RunConfig, variant: str | None) -> ServerConfig:
    """``cfg.server`` with the overrides of ``variant`` applied (a fresh, validated copy).

    Override keys are ServerConfig field names; nested fields may be given as a mapping
    (``settings: {tp_size: 2}``, merged into the base) or dotted (``settings.multi_node.nnodes: 2``).
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
        cfg.server,
        spec.overrides,
        f"variants[{index}] ({variant}).overrides",
        f"variant {variant!r}",
        server_kind,
    )
