"""Names the config takes from a plugin registry: a benchmark, a stratification, a server kind, a speed client.

The config is plain data: it depends on nothing of evalpipe but ``errors``, so a name a plugin registers is a
string here.  Whether it names a registered plugin is the resolve step's question (``evalpipe.resolve``: the
benchmarks and the kind looked up, the kind's checks run, errors on the YAML line), and the published JSON
Schemas list the registered names as the string's ``enum`` — filled in when ``make schemas`` writes them
(``evalpipe.resolve.published``), from the marker each type carries here.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

#: JSON-Schema key marking a string that names a registry entry; its value is one of :data:`Registry`.
REGISTRY_MARKER = "x-evalpipe-registry"

#: The registries a config name can come from.
Registry = Literal["benchmarks", "stratifications", "server_kinds", "speed_clients"]


def _names(registry: Registry) -> object:
    return Field(json_schema_extra={REGISTRY_MARKER: registry})


#: A registered benchmark's name (``evalpipe.benchmarks``: its EvalScope adapter name).
BenchmarkName = Annotated[str, _names("benchmarks")]
#: A stratification some registered benchmark offers (``none`` always).
StratifyBy = Annotated[str, _names("stratifications")]
#: A registered server kind (``evalpipe.server.kinds``).
ServerKindName = Annotated[str, _names("server_kinds")]
#: A registered speed client (``evalpipe.speed.clients``).
SpeedClientName = Annotated[str, _names("speed_clients")]
