"""Fleet errors: each one is a line a user can act on, mapped to an exit code by ``evalpipe.errors``."""

from __future__ import annotations

from evalpipe.errors import ConfigError, ExitCode, RunStopped, ServerError


class NotARouter(ServerError):
    """The URL answers HTTP but is not a router (no ``/workers`` listing)."""


class RouterUnreachable(ServerError):
    """Nothing answered at the router URL."""


class NoHealthyWorkers(ServerError):
    """The router is up but lists no healthy worker."""


class RouterLaunchError(ServerError):
    """A router evalpipe started exited, or did not register every worker in time."""


class RouterNotInstalled(ConfigError):
    """``sglang-router`` (the ``router`` extra) is needed to launch a router and is not installed."""


class FleetChanged(RunStopped):
    """A worker changed its resolved configuration (or an unverified one joined) during the evaluation with
    ``on_mismatch: abort``: the run stopped at once, resumable with ``--resume``."""

    exit_code = ExitCode.SERVER
