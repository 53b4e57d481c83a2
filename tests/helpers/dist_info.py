"""An installed distribution as pip lays it out — a ``.dist-info`` folder with ``METADATA`` and
``entry_points.txt`` beside its modules on the path — and a Python process that sees it, for the tests of
evalpipe's entry-point registries (benchmarks, server kinds)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def install_dist_info(site: Path, dist: str, group: str, entry: str) -> dict[str, str]:
    """``dist`` (version 0.1) declaring ``entry`` in ``group``, installed in ``site`` (whose modules are already
    there); the environment of a process that has ``site`` on its path and no benchmark-module variable."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{entry}\n")
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in os.environ.items() if k != "EVALPIPE_BENCHMARK_MODULES"}
    return {**env, "PYTHONPATH": path}


def run_python(env: dict[str, str], code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter with ``env`` (the registries are built when first imported)."""
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
