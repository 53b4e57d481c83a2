"""Loopback port helpers shared by preflight, the lifecycle and the llama.cpp launcher (an engine, which the
server kinds launch: it may not import ``server/``)."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS just handed out on ``host`` (free at the moment of asking)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when something already listens on ``host:port`` (bound the way uvicorn binds)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False
