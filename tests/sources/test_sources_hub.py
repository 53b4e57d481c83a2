"""Hub loading on a host that cannot reach the hub: one bounded check, then one English line naming the
benchmark, the hub id and ``--dataset-root`` — never the hub client's own error (ModelScope's is Chinese) nor
its download deadline (~30-70 s).  The hub is stood in for by loopback addresses (``MODELSCOPE_DOMAIN``):
a closed port, or a listening one; no test talks to a real hub."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalpipe.config.models import BenchmarkConfig, SamplingRule
from evalpipe.errors import DataError
from evalpipe.samplers import loading
from evalpipe.sources import hub

REPO = Path(__file__).resolve().parents[2]
#: ModelScope's own message on a host without network (issue 32), as its client raises it.
DEADLINE_MESSAGE = "[E1001] 下载总时限已耗尽；已保存可继续下载的临时文件"


class _DownloadDeadlineError(Exception):
    """Named as ModelScope's client names it."""


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def listening() -> Iterator[int]:
    """A loopback port that accepts connections (the hub "answers")."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        yield int(s.getsockname()[1])


def _ceval() -> BenchmarkConfig:
    return BenchmarkConfig(
        name="ceval", few_shot=0, sampling=SamplingRule(stratify_by="none", total=1, allocation="uniform")
    )


def test_an_unreachable_hub_is_one_english_line_without_calling_the_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = _closed_port()
    monkeypatch.setenv("MODELSCOPE_DOMAIN", f"127.0.0.1:{port}")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    client = types.ModuleType("modelscope")
    client.MsDataset = None  # type: ignore[attr-defined]  # the client must not even be looked up
    monkeypatch.setitem(sys.modules, "modelscope", client)
    started = time.monotonic()
    with pytest.raises(DataError) as caught:
        loading.load_from_hub(_ceval())
    assert time.monotonic() - started < hub.HUB_CHECK_TIMEOUT_S + 1
    line = caught.value.message
    assert "\n" not in line and line.isascii(), line
    assert line.startswith(
        f"benchmark ceval: cannot load evalscope/ceval from the modelscope hub (hub not reachable: "
        f"127.0.0.1:{port} unreachable (ConnectionRefusedError"
    ), line
    assert line.endswith(hub.MIRROR_HINT) and "--dataset-root" in line


def test_a_hub_client_error_in_chinese_becomes_its_class_name_in_one_english_line(
    monkeypatch: pytest.MonkeyPatch, listening: int
) -> None:
    monkeypatch.setenv("MODELSCOPE_DOMAIN", f"127.0.0.1:{listening}")
    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    monkeypatch.delenv("https_proxy", raising=False)
    assert hub.hub_unreachable("modelscope") is None

    def load(*args: object, **kwargs: object) -> None:
        raise _DownloadDeadlineError(DEADLINE_MESSAGE)

    client = types.ModuleType("modelscope")
    client.MsDataset = types.SimpleNamespace(load=load)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "modelscope", client)
    with pytest.raises(DataError) as caught:
        loading.load_from_hub(_ceval())
    line = caught.value.message
    assert line.isascii() and "\n" not in line, line
    assert line.startswith("benchmark ceval: cannot load evalscope/ceval from the modelscope hub (")
    assert ": _DownloadDeadlineError); give a local mirror with --dataset-root DIR" in line, line


def test_huggingface_offline_switch_is_honoured_without_a_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub.hub_unreachable("huggingface") == "HF_HUB_OFFLINE is set"


def test_plan_offline_lists_the_hub_benchmarks_in_english_within_seconds() -> None:
    """``evalpipe plan configs/glm-fp8.yaml`` with the hub unreachable: the benchmarks whose plan needs
    their data are each one English line naming the hub id and --dataset-root, in a few seconds (the
    ModelScope client alone spent ~30 s here and ~70 s on the reporter's host)."""
    import os

    env = {k: v for k, v in os.environ.items() if k.lower() != "https_proxy"}
    env["MODELSCOPE_DOMAIN"] = f"127.0.0.1:{_closed_port()}"
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "evalpipe.cli.main", "plan", str(REPO / "configs" / "glm-fp8.yaml"), "--mde", "5"],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert elapsed < 20, elapsed
    assert proc.stderr.isascii(), proc.stderr
    not_planned = [x for x in proc.stdout.splitlines() if "not planned" in x]
    assert all(x.replace("—", "-").isascii() for x in not_planned), not_planned
    ids = {
        "ceval": "evalscope/ceval",
        "live_code_bench": "evalscope/livecodebench_code_generation_lite_parquet",
    }
    assert [x.split(":")[0] for x in not_planned] == list(ids), proc.stdout
    for line, (name, hub_id) in zip(not_planned, ids.items(), strict=True):
        assert f"benchmark {name}: cannot load {hub_id} from the modelscope hub (hub not reachable" in line
        assert "--dataset-root" in line
