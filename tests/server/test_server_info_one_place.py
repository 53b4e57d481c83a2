"""A new ``/server_info`` value to verify is declared in one place — the kind's expectations — and every
reader of a verification follows: the single server's check, a fleet's verdict, the audit's finding.

SGLang's expectations (``resolved_expectations``, read by its kinds through ``SglangServerInfo``) gain
``schedule_policy`` here and nothing else changes; the real SGLang 0.5.23 ``/server_info`` of
configs/glm-fp8.yaml reports it (``fcfs``), so a config pinning another policy must fail everywhere.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evalpipe.audit.checks import check_server
from evalpipe.config.loader import load_config
from evalpipe.config.models import RunConfig, ServerConfig
from evalpipe.server.kinds.registry import server_kind
from evalpipe.server.kinds.router.verdict import WorkerCheck, fleet_problems
from evalpipe.server.verify import verify

ROOT = Path(__file__).resolve().parents[2]
INFO = json.loads((ROOT / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json").read_text())
CFG = load_config(ROOT / "configs" / "glm-fp8.yaml", check_sampling=False)
A, B = "http://10.0.0.1:30000", "http://10.0.0.2:30000"


@pytest.fixture
def pinned_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one change: SGLang's expectations pin ``schedule_policy`` to ``lpm``."""
    from evalpipe.server.kinds.sglang import dialect

    before = dialect.resolved_expectations

    def with_policy(cfg: RunConfig, server: ServerConfig) -> dict[str, Any]:
        return {**before(cfg, server), "schedule_policy": "lpm"}

    monkeypatch.setattr(dialect, "resolved_expectations", with_policy)


def test_the_reported_value_is_the_fixtures() -> None:
    assert INFO["schedule_policy"] == "fcfs"  # what the new expectation is checked against
    assert verify(CFG, CFG.server, copy.deepcopy(INFO), base_url=A).verified


@pytest.mark.usefixtures("pinned_policy")
def test_a_new_expectation_reaches_every_reader_of_the_verification() -> None:
    one = verify(CFG, CFG.server, copy.deepcopy(INFO), base_url=A)
    assert not one.verified and "schedule_policy: config 'lpm', server resolved 'fcfs'" in one.description
    (finding,) = check_server(one, True)
    assert "schedule_policy: expected 'lpm', resolved 'fcfs'" in finding.message
    reader = server_kind(CFG.server.kind).server_info_reader
    fleet = [
        WorkerCheck(url=url, healthy=True, verification=one, info=copy.deepcopy(INFO), reader=reader)
        for url in (A, B)
    ]
    problems = fleet_problems(fleet)
    assert f"worker {A} resolved schedule_policy 'fcfs' (config 'lpm'; {B}: 'fcfs')" in problems
