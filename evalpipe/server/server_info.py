"""How a kind reads its server's ``/server_info``: where each value is reported and how values compare.

A server reports its resolved settings under names of its own; a kind declares a :class:`ServerInfoReader`
(``Kind.server_info_reader``) with the spellings of each key it verifies and the aliases of values that mean
the same, and the values a fleet's workers must share even where the config pins none; everything that reads
a ``/server_info`` — verification, a fleet's verdict and watch — reads it through the kind.  A value is looked up at the top level, else in the per-scheduler ``internal_states`` entries a
data-parallel server reports (each of which must have resolved what the config asks, not only the first).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: Resolved values the workers of one fleet must share whether or not the config pins them, as a server that
#: names its own ``engine`` reports them (evalpipe's llama.cpp launcher).  Ports, hosts, seeds and runtime
#: counters legitimately differ.
ENGINE_AGREEMENT: tuple[str, ...] = (
    "engine",
    "version",
    "served_model_name",
    "model_path",
    "model_file",
    "model_sha256",
    "model_ftype",
    "kv_cache_dtype",
    "cache_type_k",
    "cache_type_v",
    "context_length",
    "n_ctx",
    "n_ctx_per_slot",
    "flash_attention",
    "chat_template",
    "chat_template_sha256",
)


@dataclass(frozen=True)
class ServerInfoReader:
    """``spellings``: key → the names a server reports it under (newest first; default: the key itself);
    ``aliases``: a reported value → the value it means (deprecated spellings); ``agreement``: the values a
    fleet's workers must share (most telling first: a changed worker is named by the first that differs)."""

    spellings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    agreement: tuple[str, ...] = ENGINE_AGREEMENT

    def names(self, key: str) -> tuple[str, ...]:
        return self.spellings.get(key, (key,))

    def value(self, server_info: Mapping[str, Any], key: str) -> Any:
        """The value resolved for ``key``: top level, else the first ``internal_states`` entry reporting it.
        None when the server does not report it."""
        names = self.names(key)
        for name in names:
            value = server_info.get(name)
            if value is not None:
                return value
        states = server_info.get("internal_states")
        if isinstance(states, list):
            for state in states:
                if isinstance(state, dict):
                    for name in names:
                        if state.get(name) is not None:
                            return state[name]
        return None

    def state_values(self, server_info: Mapping[str, Any], key: str) -> list[tuple[int, Any]]:
        """``(index, value)`` of every ``internal_states`` entry (one per data-parallel scheduler) that
        reports ``key``."""
        names = self.names(key)
        states = server_info.get("internal_states")
        out: list[tuple[int, Any]] = []
        if isinstance(states, list):
            for i, state in enumerate(states):
                if isinstance(state, dict):
                    value = next((state[n] for n in names if state.get(n) is not None), None)
                    if value is not None:
                        out.append((i, value))
        return out

    def normalize(self, value: Any) -> Any:
        """Comparable form of a reported value: aliases folded, ``NONE`` or empty → None, numeric strings →
        int."""
        if isinstance(value, str):
            v = value.strip()
            if v.upper() == "NONE" or v == "":
                return None
            if re.fullmatch(r"-?\d+", v):
                return int(v)
            return self.aliases.get(v, v)
        return value


#: The reader of a kind that declares none: every key under its own name, no aliases.
PLAIN = ServerInfoReader()
