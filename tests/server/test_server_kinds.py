"""The server-kind contract, run over every registered kind (``evalpipe.server.kinds``).

A kind is covered the moment its name joins ``ServerKind``: its argv, readiness paths, URLs, preflight, what
its ``/server_info`` can verify, how the report names it, its config section and how ``serve`` uses the
lifecycle's building blocks are checked here without naming it.  Only a kind with a *new* config section
needs one line below (a sample of that section).
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, get_args
from urllib.parse import urlsplit

import pytest
from fake_sglang.support import server_config

from evalpipe.artifacts import ServerFiles
from evalpipe.artifacts.schema.server import LaunchRecord, PreflightCheck, PreflightReport, ServerVerification
from evalpipe.config.models import RunConfig
from evalpipe.errors import ConfigError, PreflightError, ServerError
from evalpipe.resolve.published import config_schema
from evalpipe.server.kinds import BUILTIN_KIND_NAMES as KIND_NAMES
from evalpipe.server.kinds import BuiltinKind
from evalpipe.server.kinds.base import Kind, KindPreflight, ServerHandle
from evalpipe.server.kinds.endpoint import openai_base_url
from evalpipe.server.kinds.registry import kinds, server_kind
from evalpipe.server.kinds.sglang.flags import SERVER_INFO_KEYS
from evalpipe.server.launch_env import server_env
from evalpipe.server.preflight import run_preflight
from evalpipe.server.verify import verify

ROOT = Path(__file__).resolve().parents[2]
KINDS_DIR = ROOT / "evalpipe" / "server" / "kinds"
SGLANG_INFO = json.loads((ROOT / "tests" / "fixtures" / "sglang-0.5.23-server_info-glm-fp8.json").read_text())
LLAMACPP_INFO = {  # the shape evalpipe.engines.llamacpp serves
    "engine": "llama.cpp",
    "version": "b6000 (xllamacpp 0.2)",
    "model_file": "m.gguf",
    "served_model_name": "fake-model",
    "kv_cache_dtype": "q8_0",
    "cache_type_k": "q8_0",
    "cache_type_v": "q8_0",
    "n_ctx": 4096,
}
SECRET = "sk-kind-contract-secret-0123456789"

#: A valid value for each config section some kind requires (one line per *new* section).
SECTION_SAMPLES: dict[str, Callable[[Path], Any]] = {
    "endpoint": lambda tmp: "http://127.0.0.1:9/v1",
    "command": lambda tmp: ["{python}", "-c", "pass", "--port", "{port}", "--model", "{model_path}"],
    "replay": lambda tmp: {"bundle": str(tmp / "bundle"), "miss_log": str(tmp / "misses.jsonl")},
    "router": lambda tmp: {"workers": [{"url": "http://127.0.0.1:9"}, {"kind": "answer_key", "port": 31299}]},
}


@pytest.fixture(params=kinds(), ids=lambda k: k.name)
def kind(request: pytest.FixtureRequest) -> Kind:
    assert isinstance(request.param, Kind)
    return request.param


def _config(tmp_path: Path, kind: Kind, **server: Any) -> RunConfig:
    section = kind.config_section
    if section is not None:
        assert section in SECTION_SAMPLES, f"add a sample of server.{section} to SECTION_SAMPLES"
        server = {section: SECTION_SAMPLES[section](tmp_path), **server}
    return server_config(tmp_path, {"kind": kind.name, "port": 31234, **server})


# ---------------------------------------------------------------- the registry


def test_the_literal_is_the_registry_and_every_module_is_registered() -> None:
    assert get_args(BuiltinKind) == KIND_NAMES == tuple(k.name for k in kinds())
    modules = {p.stem for p in KINDS_DIR.glob("*.py")} - {"__init__", "base", "registry"}
    folders = {p.parent.name for p in KINDS_DIR.glob("*/kind.py")}  # a kind with a folder of its own
    assert modules | folders == set(KIND_NAMES), "a kind module in evalpipe/server/kinds/ not in BuiltinKind"
    assert not modules & folders
    with pytest.raises(
        KeyError, match=re.escape(f"no server kind named 'nope' (registered: {', '.join(KIND_NAMES)})")
    ):
        server_kind("nope")
    schema = config_schema()  # the published schema lists the registered kinds
    assert schema["$defs"]["ServerConfig"]["properties"]["kind"]["enum"] == list(KIND_NAMES)


def test_kinds_read_the_config_models_only_for_type_checking() -> None:
    """Loading the kinds does not load the config models (kinds read them only for type checking): the
    registry stays as cheap to import as the plugins themselves."""
    code = "import sys, evalpipe.server.kinds.registry; print('evalpipe.config.models' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------- config


def test_config_section(tmp_path: Path, kind: Kind) -> None:
    _config(tmp_path, kind)  # valid with its section
    if kind.config_section is None:
        return
    with pytest.raises(ConfigError) as exc:
        server_config(tmp_path, {"kind": kind.name})
    message = str(exc.value)
    assert kind.config_section in message and f"kind is '{kind.name}'" in message and "server" in message


def test_settings_model(tmp_path: Path, kind: Kind) -> None:
    """Every kind's settings model takes no settings as its defaults and refuses an unknown one, on the
    ``server.settings`` line of the YAML."""
    cfg = _config(tmp_path, kind)
    assert cfg.server.settings == {} and kind.settings_errors(cfg.server) == []
    kind.settings_model.model_validate({})
    with pytest.raises(ConfigError) as exc:
        _config(tmp_path, kind, settings={"no_such_setting": 1})
    (line,) = exc.value.details
    assert ("server.settings" in line and "no_such_setting" in line) or "takes no settings" in line
    schema = config_schema()  # the published schema tells an editor the same
    rules = schema["$defs"]["ServerConfig"]["allOf"]
    (then,) = [r["then"] for r in rules if r["if"]["properties"]["kind"]["const"] == kind.name]
    model = then["properties"]["settings"]["$ref"].rpartition("/")[2]
    assert model == kind.settings_model.__name__ and schema["$defs"][model]["additionalProperties"] is False


# ---------------------------------------------------------------- launch


def test_argv_launches_on_the_configured_port_and_hides_the_key(
    tmp_path: Path, kind: Kind, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVALPIPE_KIND_KEY", SECRET)
    cfg = _config(tmp_path, kind, api_key_env="EVALPIPE_KIND_KEY")
    if not kind.launches_process:
        with pytest.raises(ConfigError, match="nothing is launched"):
            kind.argv(cfg, cfg.server)
        note = kind.launch_note(cfg.server, None)
        assert note and "nothing is launched" in note  # `evalpipe server command` prints it instead
        return
    argv = kind.argv(cfg, cfg.server, resolve_secrets=False, python="python3")
    assert argv and all(isinstance(a, str) and a for a in argv)
    assert not any("{python}" in a or "{port}" in a for a in argv), "placeholders left unfilled"
    assert any("31234" in a for a in argv), "the server must be told the port base_url names"
    assert not any(SECRET in a for a in argv)
    note = kind.launch_note(cfg.server, None)
    assert note is None or isinstance(note, str)


def test_readiness_and_urls(tmp_path: Path, kind: Kind) -> None:
    cfg = _config(tmp_path, kind)
    paths = kind.ready_paths(cfg.server)
    assert paths and all(p.startswith("/") for p in paths)
    pinned = _config(tmp_path, kind, ready_path="/ping")
    assert kind.ready_paths(pinned.server) == ("/ping",)
    base = kind.base_url(cfg.server)
    parts = urlsplit(base)
    assert parts.scheme in ("http", "https") and parts.netloc and parts.path == "", base
    assert kind.upstream_path(cfg.server).startswith("/")


# ---------------------------------------------------------------- preflight


def test_preflight_returns_typed_checks(tmp_path: Path, kind: Kind, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVALPIPE_KIND_KEY", SECRET)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")  # no nvidia-smi: a GPU rule fails, cleanly
    cfg = _config(tmp_path, kind, api_key_env="EVALPIPE_KIND_KEY")
    own = kind.preflight(cfg, cfg.server, server_env(cfg.server))
    assert isinstance(own, KindPreflight)
    assert all(isinstance(c, PreflightCheck) and c.rule and c.message for c in own.checks)
    assert bool(own.argv) == kind.launches_process and not any(SECRET in a for a in own.argv)
    try:
        report = run_preflight(cfg, cfg.server, kind=server_kind(cfg.server.kind), punkt_needed=None)
    except PreflightError as exc:
        assert exc.report is not None and not exc.report.ok
        report = exc.report
    assert isinstance(report, PreflightReport) and report.kind == kind.name
    rules = [c.rule for c in report.checks]  # the API key rule (every kind), then the kind's own rules
    assert rules[0] == "api_key" and rules[1 : 1 + len(own.checks)] == [c.rule for c in own.checks]


# ---------------------------------------------------------------- verification and report


@pytest.mark.parametrize(
    "payload", [SGLANG_INFO, LLAMACPP_INFO, None], ids=["sglang_info", "engine_info", "no_server_info"]
)
def test_verification_of_a_canned_server_info(
    tmp_path: Path, kind: Kind, payload: dict[str, Any] | None
) -> None:
    cfg = _config(tmp_path, kind)
    engine = payload.get("engine") if payload else None
    expected = kind.expected_values(cfg, cfg.server, engine)
    assert expected and set(expected) <= set(SERVER_INFO_KEYS), "verification can only read known keys"
    error = None if payload is not None else "/server_info: HTTP 404"
    v = verify(cfg, cfg.server, payload, base_url="http://127.0.0.1:1", info_error=error, served_models=None)
    assert isinstance(v, ServerVerification) and v.kind == kind.name
    assert v.description and v.resolved_config_available is (payload is not None)
    # every value the kind expects is checked or named unverified; beyond them only the values checked where
    # the server reports them (the launch's flags, the model path), and the KV pool its log states
    keys = {c.key for c in v.checks} | set(v.unverified_keys)
    optional = set(kind.optional_expectations(cfg, cfg.server)) | {"kv_cache_storage_dtype"}
    assert set(expected) <= keys <= set(expected) | optional
    if payload is None:
        assert not v.verified and "verified from server_info" not in v.description
        wording = "NOT verified" if kind.requires_server_info else "not verifiable"
        assert wording in v.description
    for info in (None, {}, payload):
        head = kind.describe_head(v, info)
        assert isinstance(head, str) and head.strip()


# ---------------------------------------------------------------- serve


class _FakeServing:
    """A ServeContext that records what the kind asked for instead of starting anything (a fleet's members
    record into the same lists)."""

    def __init__(self, cfg: RunConfig, files: ServerFiles, server: Any = None, parent: Any = None) -> None:
        self._cfg = cfg
        self._files = files
        self._server = server if server is not None else cfg.server
        root = parent if parent is not None else self
        self.launched: list[tuple[list[str], str, tuple[str, ...]]] = [] if parent is None else root.launched
        self.attached: list[str] = [] if parent is None else root.attached
        self.verified: list[str] = [] if parent is None else root.verified
        self.waited: list[str] = [] if parent is None else root.waited
        self.root = root
        self.stopped = 0

    @property
    def cfg(self) -> RunConfig:
        return self._cfg

    @property
    def server(self) -> Any:
        return self._server

    @property
    def env(self) -> dict[str, str]:
        return server_env(self._server)

    @property
    def files(self) -> ServerFiles:
        return self._files

    @property
    def api_key(self) -> str | None:
        return None

    def member(self, name: str, server: Any) -> _FakeServing:
        files = ServerFiles(self._files.dir / "workers" / name)
        files.dir.mkdir(parents=True, exist_ok=True)
        return _FakeServing(self._cfg, files, server, parent=self.root)

    def _handle(self, base_url: str) -> ServerHandle:
        record = LaunchRecord(kind=self._server.kind, base_url=base_url)
        return ServerHandle(base_url=base_url, launch=record, server=self._server)

    @contextlib.contextmanager
    def launch(
        self, argv: list[str], *, base_url: str, ready_paths: tuple[str, ...], wait: bool = True
    ) -> Iterator[ServerHandle]:
        self.launched.append((argv, base_url, ready_paths))
        try:
            yield self._handle(base_url)
        finally:
            self.root.stopped += 1

    def wait_ready(self, handle: ServerHandle, ready_paths: tuple[str, ...]) -> None:
        self.waited.append(handle.base_url)

    def attach(self, base_url: str, *, ready_paths: tuple[str, ...]) -> ServerHandle:
        self.attached.append(base_url)
        return self._handle(base_url)

    def verify(
        self, handle: ServerHandle, *, against: Any = None, enforce: bool = True
    ) -> ServerVerification:
        self.verified.append(handle.base_url)
        return verify(self._cfg, self._cfg.server, None, base_url=handle.base_url, info_error="not asked")


# by hand: the sglang kind asks SGLang's version in a child process (``kind.engine_version``, reached through
# the Kind interface: the static scan cannot follow a method of an object the fixture chose)
@pytest.mark.integration
def test_serve_uses_the_lifecycle_building_blocks(tmp_path: Path, kind: Kind) -> None:
    cfg = _config(tmp_path, kind, launch_timeout_s=1)
    ctx = _FakeServing(cfg, ServerFiles(tmp_path / "server"))
    if kind.fleet:
        # nothing answers where the fake "launched" the router: the fleet is never ready, and every member
        # launched on the way (first, each waited for) is stopped again
        members = [argv for _, argv in kind.member_argvs(cfg, cfg.server) if argv]
        with pytest.raises(ServerError, match="not ready within 1 s"), kind.serve(ctx):
            pass
        assert len(ctx.launched) == len(members) + 1 and ctx.stopped == len(ctx.launched)
        assert len(ctx.waited) == len(members) and not ctx.verified
        assert ctx.launched[-1][1:] == (kind.base_url(cfg.server), kind.ready_paths(cfg.server))
        return
    with kind.serve(ctx) as handle:
        assert isinstance(handle, ServerHandle) and handle.verification is not None
        assert ctx.verified == [handle.base_url]
    if kind.launches_process:
        version = kind.engine_version(ctx.env)
        argv = kind.argv(cfg, cfg.server, engine_version=version)
        assert ctx.launched == [(argv, kind.base_url(cfg.server), kind.ready_paths(cfg.server))]
        assert ctx.stopped == 1 and not ctx.attached
    else:
        assert ctx.attached == [kind.base_url(cfg.server)] and not ctx.launched


# ---------------------------------------------------------------- the endpoint kind's URLs


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://127.0.0.1:30000", "http://127.0.0.1:30000/v1"),
        ("http://127.0.0.1:30000/", "http://127.0.0.1:30000/v1"),
        ("http://h:1/v1/", "http://h:1/v1"),
        ("https://h/proxy/v1/chat/completions", "https://h/proxy/v1"),
    ],
)
def test_normalize_endpoint(given: str, expected: str) -> None:
    assert openai_base_url(given) == expected


def test_normalize_endpoint_refuses_non_urls() -> None:
    with pytest.raises(ConfigError):
        openai_base_url("localhost:30000")
