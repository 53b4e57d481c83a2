"""``server.kind: sglang`` — ``python -m sglang.launch_server`` with flags built for the installed SGLang.

The argv and the ``/server_info`` keys are SGLang knowledge (``evalpipe.server.kinds.sglang.flags``); the
preflight runs SGLang's own argument parser on the argv, checks the parser names against the installed
SGLang, the raw-FP8 TileLang policy (``evalpipe.server.kinds.sglang.raw_fp8``), the model directory, the GPUs and the
port.  SGLang always serves ``/server_info``, so a missing one is a mismatch, never "unverifiable".
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from evalpipe.artifacts.schema.provenance import PackageVersion
from evalpipe.artifacts.source_git import package_source
from evalpipe.server import preflight_rules as rules
from evalpipe.server.kinds.base import EngineProvenance, KindPreflight, gpu_footprint
from evalpipe.server.kinds.sglang.dialect import SglangServerInfo
from evalpipe.server.kinds.sglang.env import DEFAULT_PACKAGES, TORCH_CUDA, probe_sglang
from evalpipe.server.kinds.sglang.flags import (
    MANAGED_FLAGS,
    build_argv,
    expected_kv_storage,
    extra_arg_values,
)
from evalpipe.server.kinds.sglang.launch_log import kv_cache_facts_of
from evalpipe.server.kinds.sglang.raw_fp8 import check_raw_fp8_rules
from evalpipe.server.kinds.sglang.rules import check_dry_parse, check_gpus, check_parser_names

if TYPE_CHECKING:
    from evalpipe.artifacts.schema.server import KvCacheFacts
    from evalpipe.config.models import RunConfig, ServerConfig


class SglangKind(SglangServerInfo):
    name: ClassVar[str] = "sglang"
    requires_server_info: ClassVar[bool] = True

    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        return build_argv(
            cfg, server, sglang_version=engine_version, resolve_secrets=resolve_secrets, python=python
        )

    def engine_version(self, env: Mapping[str, str]) -> str | None:
        return probe_sglang(env, packages=("sglang",)).version

    def provenance(self, server: ServerConfig, env: Mapping[str, str]) -> EngineProvenance:
        """SGLang and the libraries it runs on (its kernels' distributions and the CUDA release its torch was
        built for), and its source tree (a checkout on ``PYTHONPATH``, an editable install or the VCS commit
        pip recorded), as a child with the server's environment finds them."""
        probe = probe_sglang(env, packages=DEFAULT_PACKAGES)
        packages = []
        for name in DEFAULT_PACKAGES:
            version = probe.packages.get(name)
            if name == "sglang" and version is None:
                version = probe.version  # a plain checkout on PYTHONPATH has no metadata, only version.py
            packages.append(PackageVersion(name=name, version=version, environment="server"))
        packages.append(PackageVersion(name=TORCH_CUDA, version=probe.torch_cuda, environment="server"))
        source = package_source(probe.location, probe.direct_url) if probe.importable else None
        return EngineProvenance(packages=tuple(packages), source=source)

    def launch_note(self, server: ServerConfig, engine_version: str | None) -> str | None:
        if engine_version is None:
            return "note: SGLang is not installed here; flags are spelled for the newest known SGLang (>= 0.5.13)"
        return None

    def footprint(self, cfg: RunConfig, server: ServerConfig) -> set[str]:
        """Its URL and its GPUs: ``CUDA_VISIBLE_DEVICES`` from ``server.env``, else every GPU of the host."""
        url = set() if server.port == 0 else {f"url {self.base_url(server)}"}
        return url | gpu_footprint(server.host, server.env, unset_means_all=True)

    def optional_expectations(self, cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
        """The model path and every ``extra_args`` flag's value under its ServerArgs name
        (``--chunked-prefill-size 256`` → ``chunked_prefill_size: 256``): SGLang reports its resolved
        ServerArgs in ``/server_info``; a value it does not report is listed, not failed."""
        managed = {flag[2:].replace("-", "_") for flags in MANAGED_FLAGS.values() for flag in flags}
        out: dict[str, Any] = {"model_path": cfg.model_path_for_server()}
        out.update((k, v) for k, v in extra_arg_values(server.extra_args).items() if k not in managed)
        return out

    def kv_cache_facts(self, log_path: Path | None) -> KvCacheFacts | None:
        return kv_cache_facts_of(log_path)

    def expected_kv_storage_dtype(self, server: ServerConfig) -> str | None:
        return expected_kv_storage(server.kv_cache_dtype, server.extra_args)

    def prefix_cache(self, info: Mapping[str, Any]) -> Literal["on", "off"] | None:
        """SGLang's radix cache: ``disable_radix_cache`` in ``/server_info``."""
        disabled = info.get("disable_radix_cache")
        return None if not isinstance(disabled, bool) else ("off" if disabled else "on")

    def preflight(self, cfg: RunConfig, server: ServerConfig, env: Mapping[str, str]) -> KindPreflight:
        probe = probe_sglang(env, packages=("sglang",))
        argv = self.argv(cfg, server, engine_version=probe.version, resolve_secrets=False)
        checks = check_parser_names(cfg, probe)
        checks += check_dry_parse(probe.importable, probe.error, argv, env)
        checks += check_raw_fp8_rules(server, env, probe)
        checks += rules.check_model_path(cfg)
        checks += check_gpus(server, env)
        checks += rules.check_port(server)
        return KindPreflight(argv=argv, checks=checks, engine_version=probe.version)


KIND = SglangKind()
