"""Helpers for the server tests: their config, the fake SGLang on PYTHONPATH, a fake nvidia-smi (process
groups: ``helpers.server_process``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from helpers.config import write_config

from evalpipe.config.models import RunConfig
from evalpipe.resolve import load_run

FAKE_SGLANG_DIR = Path(__file__).resolve().parent
#: The server tests' model: a directory ``model`` beside the config (with a config.json) served as fake-model.
MODEL = {"path": "model", "served_name": "fake-model"}
#: Bounded launch and stop, and a free port chosen at launch.
SERVER = {"kind": "sglang", "port": 0, "stop_timeout_s": 5, "launch_timeout_s": 60}


def server_config(
    tmp_path: Path,
    server: dict[str, Any] | None = None,
    *,
    benchmarks: tuple[str, ...] = ("gsm8k",),
    model_dir: bool = True,
    model: dict[str, Any] | None = None,
    **sections: Any,
) -> RunConfig:
    """``tmp_path/run.yaml`` written by ``helpers.config.write_config`` with the server tests' model and
    server settings (``server``/``model`` merged over them, ``sections`` replacing top-level keys), loaded
    without checking sampling rules; the model directory is created when ``model_dir``."""
    if model_dir:
        (tmp_path / "model").mkdir(exist_ok=True)
        (tmp_path / "model" / "config.json").write_text('{"architectures": ["FakeForCausalLM"]}')
    path = write_config(
        tmp_path / "run.yaml",
        name="servertest",
        model={**MODEL, **(model or {})},
        server={**SERVER, **(server or {})},
        benchmarks=[{"name": b, "sampling": {"per_stratum": 1}} for b in benchmarks],
        **sections,
    )
    return load_run(path, check_sampling=False).config


def fake_nvidia_smi(bin_dir: Path, gpus: list[tuple[str, str]], cuda: str = "12.8") -> Path:
    """A ``nvidia-smi`` script listing ``gpus`` as (name, compute capability)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"{i}, {name}, 570.86, 81559, {cc}" for i, (name, cc) in enumerate(gpus))
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        f"  --query-gpu=*) cat <<'EOF'\n{rows}\nEOF\n;;\n"
        f"  *) echo '| NVIDIA-SMI 570.86   Driver Version: 570.86   CUDA Version: {cuda} |';;\n"
        "esac\n"
    )
    script.chmod(0o755)
    return script


def fake_sglang_at(version: str, dest: Path) -> Path:
    """A copy of the test double of SGLang under ``dest`` that claims ``version`` (its ``version.py`` and its
    distribution metadata, which is what evalpipe's probe reads); the directory to put on PYTHONPATH."""
    import shutil

    shutil.copytree(FAKE_SGLANG_DIR / "sglang", dest / "sglang", ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "sglang" / "version.py").write_text(f'__version__ = "{version}"\n', encoding="utf-8")
    dist = dest / f"sglang-{version}.dist-info"
    dist.mkdir()
    metadata = (FAKE_SGLANG_DIR / "sglang-0.5.23.dist-info" / "METADATA").read_text(encoding="utf-8")
    (dist / "METADATA").write_text(metadata.replace("Version: 0.5.23", f"Version: {version}"), encoding="utf-8")
    (dist / "top_level.txt").write_text("sglang\n", encoding="utf-8")
    fixtures = dest.parent / "fixtures"  # where the copy's launch_server looks for the answers it serves
    if not fixtures.exists():
        fixtures.symlink_to(FAKE_SGLANG_DIR.parent / "fixtures", target_is_directory=True)
    return dest
