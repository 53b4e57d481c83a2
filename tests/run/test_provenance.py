"""provenance.json: versions, the engine's source commit + uncommitted-diff hash, GPUs, component tests."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fake_sglang.support import FAKE_SGLANG_DIR, fake_nvidia_smi, server_config

from evalpipe.artifacts import RunDir
from evalpipe.artifacts.schema.provenance import Provenance
from evalpipe.artifacts.source_git import git_info, package_source
from evalpipe.errors import PreflightError
from evalpipe.run.provenance import (
    ComponentTestFailed,
    collect_provenance,
    parse_junit,
    run_component_tests,
)
from evalpipe.server.kinds.registry import server_kind


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    _git(path, "init", "-q")
    (path / "a.py").write_text("x = 1\n")
    _git(path, "add", "a.py")
    _git(path, "commit", "-qm", "base")
    return path


def test_git_info_tracks_commit_and_uncommitted_changes(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    clean = git_info(repo)
    assert clean is not None and clean.commit == _git(repo, "rev-parse", "HEAD")
    assert clean.dirty is False and clean.diff_sha256 is None and clean.source == "git"
    (repo / "a.py").write_text("x = 2\n")
    patched = git_info(repo / "a.py")
    assert patched is not None and patched.dirty and patched.diff_sha256
    (repo / "new_kernel.py").write_text("y = 1\n")  # a validation patch adding a file changes the hash
    with_new = git_info(repo)
    assert with_new is not None and with_new.diff_sha256 not in (None, patched.diff_sha256)
    assert git_info(repo) == with_new  # deterministic
    outside = tmp_path / "plain"
    outside.mkdir()
    assert git_info(outside) is None


def test_package_source_from_direct_url() -> None:
    url = {"url": "https://github.com/sgl-project/sglang", "vcs_info": {"vcs": "git", "commit_id": "abc123"}}
    info = package_source(None, url)
    assert info is not None and (info.commit, info.source, info.dirty) == ("abc123", "direct_url", None)
    assert package_source(None, {"url": "https://example/sglang.whl", "archive_info": {}}) is None


def test_collect_provenance_from_a_patched_sglang_checkout(tmp_path: Path) -> None:
    checkout = _repo(tmp_path / "sglang-src")
    shutil.copytree(FAKE_SGLANG_DIR / "sglang", checkout / "python" / "sglang")  # no dist-info: version.py
    _git(checkout, "add", "python")
    _git(checkout, "commit", "-qm", "sglang")
    (checkout / "python" / "sglang" / "srt" / "server_args.py").write_text("# validation patch\n", "utf-8")
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, [("NVIDIA H200", "9.0"), ("NVIDIA H200", "9.0")], cuda="12.9")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(checkout / "python"), "HOME": str(tmp_path)}
    server = server_config(tmp_path, {"kind": "sglang"}).server
    prov = collect_provenance(server=server, kind=server_kind(server.kind), env=env, started_at="2026-01-01T00:00:00+00:00")
    versions = {p.name: p.version for p in prov.packages}
    assert versions["sglang"] == "0.5.23" and versions["evalscope"] and versions["evalpipe"]
    assert versions["torch"] is None  # not installed here: None, never a placeholder string
    assert prov.sglang_git is not None and prov.sglang_git.path == str(checkout)
    assert prov.sglang_git.commit == _git(checkout, "rev-parse", "HEAD") and prov.sglang_git.dirty
    assert [g.name for g in prov.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert prov.gpus[0].compute_capability == "9.0" and prov.gpus[0].driver_version == "570.86"
    assert prov.cuda_version == "12.9" and prov.host and prov.python
    assert Provenance.model_validate_json(prov.model_dump_json()) == prov
    bare = collect_provenance(server=server, kind=server_kind(server.kind), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert bare.sglang_git is None and bare.gpus == [] and bare.cuda_version is None


def test_the_self_test_server_probes_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Provenance asks the run's server kind: the answer-key server has no engine to probe, so no child
    interpreter looks for SGLang; evalpipe's own packages are still recorded."""
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("SGLang probed for an answer-key run")

    monkeypatch.setattr("evalpipe.server.kinds.sglang.kind.probe_sglang", refuse)
    sglang = server_config(tmp_path, {"kind": "sglang"}).server
    with pytest.raises(AssertionError, match="probed"):  # the patch is where the SGLang kind looks
        collect_provenance(server=sglang, kind=server_kind(sglang.kind), env={})
    server = server_config(tmp_path, {"kind": "answer_key"}).server
    prov = collect_provenance(server=server, kind=server_kind(server.kind), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    names = [p.name for p in prov.packages]
    assert names == ["evalpipe", "evalscope", "nltk"] and prov.sglang_git is None


_TESTS = """
import pytest

def test_ok():
    assert True

def test_ok_too():
    assert 1 + 1 == 2

def test_bad():
    assert False

@pytest.mark.skip(reason="no GPU")
def test_gpu():
    pass
"""


def test_component_tests_counts_and_required_gate(tmp_path: Path) -> None:
    suite = tmp_path / "kernels"
    suite.mkdir()
    (suite / "test_tilelang_fp8.py").write_text(_TESTS)
    (suite / "test_pass.py").write_text("def test_fine():\n    pass\n")
    cfg = server_config(
        tmp_path,
        component_tests=[
            {"name": "tilelang fp8", "pytest_args": ["test_tilelang_fp8.py"], "cwd": "kernels"},
            {"name": "smoke", "pytest_args": ["kernels/test_pass.py"], "required": True},
        ],
    )
    rundir = RunDir(tmp_path / "run")
    results = run_component_tests(cfg, rundir)
    fp8, smoke = results
    assert (fp8.passed, fp8.failed, fp8.skipped, fp8.errors, fp8.exit_code) == (2, 1, 1, 0, 1)
    assert fp8.junit_path == "component_tests/tilelang_fp8.xml" and not fp8.required
    assert (rundir.root / fp8.junit_path).is_file() and "test_bad" in (
        rundir.root / (fp8.log_path or "")
    ).read_text()
    assert (smoke.passed, smoke.failed, smoke.exit_code, smoke.required) == (1, 0, 0, True)
    assert parse_junit(rundir.root / fp8.junit_path)["tests"] == 4

    cfg.component_tests[0].required = True
    with pytest.raises(PreflightError, match="required component test failed: tilelang fp8") as exc:
        run_component_tests(cfg, rundir)
    assert isinstance(exc.value, ComponentTestFailed) and len(exc.value.results) == 2
    assert "1 failed" in exc.value.details[0]
