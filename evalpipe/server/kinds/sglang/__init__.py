"""``server.kind: sglang`` — everything evalpipe knows about SGLang's server, in one folder.

- ``kind`` — the kind itself (``KIND``): argv, preflight, readiness and verification as SGLang does them;
- ``dialect`` — SGLang's ``/server_info`` as a kind verifies it (:class:`SglangServerInfo`: the values a config
  pins, how they are read and compared, the report's layout line);
- ``settings`` — SGLang's launch settings (``server.settings``: parallelism, attention kernels, MTP,
  determinism, several nodes), the settings model of every kind that launches or verifies an SGLang server;
- ``flags`` — SGLang's command line and ``/server_info`` vocabulary: the argv built for the installed version,
  the resolved values a config expects, their normalisation;
- ``env`` — the SGLang installation a launch would use (version, packages, ``dry_parse`` of the argv);
- ``rules`` — SGLang's own preflight rules (its argument parser accepts the argv, its parser names);
- ``raw_fp8`` — the raw-FP8 KV-cache policy (TileLang DSA kernels, unscaled ``fp8_e4m3``) preflight enforces;
- ``launch_log`` — the KV pool as the launched server's log states it.

Outside this folder only this face is imported (``tools/layers.py`` checks it): the kinds that face an SGLang
server without launching one (an attached endpoint, a replayed bundle, a router's workers) verify it through
:class:`SglangServerInfo` and take its settings model; SGLang's speed client finds the installation through
:func:`probe_sglang`; the kind registry finds ``KIND`` here, as it does in a kind's module.
"""

from evalpipe.server.kinds.sglang.dialect import SglangServerInfo
from evalpipe.server.kinds.sglang.env import probe_sglang
from evalpipe.server.kinds.sglang.kind import KIND
from evalpipe.server.kinds.sglang.settings import SglangSettings, sglang_settings

__all__ = ["KIND", "SglangServerInfo", "SglangSettings", "probe_sglang", "sglang_settings"]
