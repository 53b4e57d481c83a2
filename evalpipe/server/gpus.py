"""GPU facts from ``nvidia-smi`` (absent on CPU-only machines: every function then says "unknown").

Used by preflight (enough visible GPUs, compute capability for raw FP8 TileLang kernels) and by
provenance (GPU names, driver, CUDA version).  Only the CLI tool is queried; no CUDA library is loaded.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from evalpipe.artifacts.schema.provenance import GpuInfo

_QUERY = "index,name,driver_version,memory.total,compute_cap"


def nvidia_smi_path(env: Mapping[str, str] | None = None) -> str | None:
    path = env.get("PATH") if env is not None else None
    return shutil.which("nvidia-smi", path=path)


def query_gpus(env: Mapping[str, str] | None = None, timeout: float = 30) -> list[GpuInfo] | None:
    """All GPUs ``nvidia-smi`` lists (ignores CUDA_VISIBLE_DEVICES); None when nvidia-smi is absent/broken."""
    exe = nvidia_smi_path(env)
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe, f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=dict(env) if env is not None else None,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    gpus = []
    for line in proc.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 2 or not parts[0].isdigit():
            continue
        gpus.append(
            GpuInfo(
                index=int(parts[0]),
                name=parts[1],
                driver_version=_field(parts, 2),
                memory_total_mib=_int(_field(parts, 3)),
                compute_capability=_field(parts, 4),
            )
        )
    return gpus


def cuda_version(env: Mapping[str, str] | None = None, timeout: float = 30) -> str | None:
    """The driver's CUDA version from the ``nvidia-smi`` banner ("CUDA Version: 12.8")."""
    exe = nvidia_smi_path(env)
    if exe is None:
        return None
    try:
        proc = subprocess.run(
            [exe],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=dict(env) if env else None,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"CUDA Version:\s*([0-9.]+)", proc.stdout)
    return m.group(1) if m else None


def visible_gpus(gpus: list[GpuInfo], env: Mapping[str, str]) -> list[GpuInfo]:
    """The GPUs a process started with ``env`` can use (CUDA_VISIBLE_DEVICES applied to indices).

    Entries that are not plain indices (GPU-UUIDs, MIG ids) are matched by position, which is what CUDA
    does when it enumerates them.
    """
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None:
        return list(gpus)
    entries = [e.strip() for e in cvd.split(",") if e.strip()]
    by_index = {g.index: g for g in gpus}
    out = []
    for pos, entry in enumerate(entries):
        if entry.isdigit():
            g = by_index.get(int(entry))
            if g is None:
                break  # CUDA stops enumerating at the first invalid entry
            out.append(g)
        elif pos < len(gpus):
            out.append(gpus[pos])
    return out


def rocm_present(env: Mapping[str, str] | None = None) -> bool:
    path = env.get("PATH") if env is not None else None
    return shutil.which("rocm-smi", path=path) is not None or Path("/opt/rocm").is_dir()


def compute_capability(gpu: GpuInfo) -> tuple[int, int] | None:
    if not gpu.compute_capability:
        return None
    m = re.match(r"^(\d+)\.(\d+)", gpu.compute_capability)
    return (int(m.group(1)), int(m.group(2))) if m else None


def _field(parts: list[str], i: int) -> str | None:
    if i >= len(parts):
        return None
    v = parts[i]
    return None if v in ("", "[N/A]", "N/A", "[Not Supported]") else v


def _int(v: str | None) -> int | None:
    try:
        return int(float(v)) if v is not None else None
    except ValueError:
        return None
