"""``server.kind: replay`` — serve a sign-off bundle's recorded responses (``evalpipe replay``).

The replay server (``evalpipe.engines.replay_server``) answers each prompt from the recorded responses and serves the
recorded ``/server_info``, so verification checks the original server's resolved settings again.  ``evalpipe
replay`` builds this server section itself; the run skips the preflight (nothing of the original host —
model, GPUs, SGLang — is needed to replay).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, ClassVar

from evalpipe.errors import ConfigError
from evalpipe.server.kinds.sglang import SglangServerInfo

if TYPE_CHECKING:
    from evalpipe.config.models import RunConfig, ServerConfig

MODULE = "evalpipe.engines.replay_server"


class ReplayKind(SglangServerInfo):
    name: ClassVar[str] = "replay"
    preflight_before_run: ClassVar[bool] = False
    config_section: ClassVar[str | None] = "replay"

    def check_config(self, server: ServerConfig) -> None:
        if server.replay is None:
            raise ValueError("replay settings are required when kind is 'replay'")

    def argv(
        self,
        cfg: RunConfig,
        server: ServerConfig,
        *,
        engine_version: str | None = None,
        resolve_secrets: bool = True,
        python: str | None = None,
    ) -> list[str]:
        rp = server.replay
        if rp is None:
            raise ConfigError("server.replay: required for kind 'replay'")
        argv = [python or sys.executable, "-m", MODULE, "--host", server.host, "--port", str(server.port)]
        argv += [
            "--served-model-name",
            cfg.model.served_name,
            "--bundle",
            rp.bundle,
            "--miss-log",
            rp.miss_log,
        ]
        return argv


KIND = ReplayKind()
