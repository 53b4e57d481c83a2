"""Run the speed benchmark against ready servers and write ``speed.json`` per variant.

:func:`run_speed` is what a pipeline calls with a variant's server right after its accuracy evaluation
(the same launch, the server's own URL — never the recording proxy, which would sit inside every latency).
:func:`run_speed_alternating` drives several servers that are up at once and alternates which goes first
in each round (ABBA…), so slow drift of the machine's load falls on both variants alike and the comparison
can resample round pairs.  :func:`speed_command` is the library side of ``evalpipe speed``.

Before the first request every impossibility is refused in one line (:class:`SpeedSetupError`, exit 2): the
client is not installed (naming the extra), no tokenizer, a workload longer than the server's context.  A
server that fails requests mid-benchmark is not an exception: the round is recorded with ``completed`` below
``requested`` and a problem line, and every comparison that uses it is inconclusive.  ``speed.json`` is
rewritten atomically after every round, so an interruption loses at most the round in flight.
"""

from __future__ import annotations

import os
import time
import urllib.error
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from evalpipe.artifacts import RunDir, read_model, write_model
from evalpipe.artifacts.redact import redact_argv
from evalpipe.artifacts.schema.speed import (
    ClientInfo,
    LoadAverage,
    Problem,
    RoundRecord,
    Schedule,
    Severity,
    SpeedArtifact,
    WorkloadRounds,
)
from evalpipe.artifacts.schema.speed_compare import SpeedComparison
from evalpipe.config.speed import SpeedConfig, SpeedWorkload
from evalpipe.errors import SpeedSetupError
from evalpipe.server.fetch import read_json
from evalpipe.server.served_context import served_context
from evalpipe.speed.clients.base import ParsedRound, RoundPlan, SpeedClient, keep_raw_files
from evalpipe.speed.clients.registry import speed_client
from evalpipe.speed.compare import compare_speed
from evalpipe.speed.process import run_bounded
from evalpipe.tokenizer import ResolvedTokenizer, TokenizerError, resolve

Progress = Callable[[str], None]


@dataclass(frozen=True)
class SpeedTarget:
    """One variant's ready server and the directory its ``speed.json`` goes to (``api_key``: this server's
    own key, when the variants' servers have different ones; else the one the caller passes for all)."""

    variant: str
    base_url: str
    out_dir: Path
    api_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class SpeedRequest:
    """What a speed measurement is asked, whichever servers it measures (``SpeedTarget``): the config's
    ``speed:`` section, the model name the servers serve, the API key of every target that has none of its own,
    the context one request may use (None: asked of each server), the directory a relative tokenizer path is
    read from, the server's environment additions the SGLang client runs with (``make_client``), a sink for
    one line per round, and a client replacing the one ``config.client`` names (tests drive the orchestration
    with a stand-in)."""

    config: SpeedConfig
    served_model: str
    api_key: str | None = field(default=None, repr=False)
    context_length: int | None = None
    base_dir: Path | None = None
    client_env: Mapping[str, str] | None = None
    progress: Progress | None = None
    client: SpeedClient | None = None


def make_client(cfg: SpeedConfig, *, client_env: Mapping[str, str] | None = None) -> SpeedClient:
    """The configured client, from the speed-client registry.  ``client_env``: the server's own environment
    additions (``server.env``), for a client that runs in the installation the server runs."""
    return speed_client(cfg.client).make(client_env)


def load_average() -> LoadAverage | None:
    try:
        one, five, fifteen = (float(x) for x in Path("/proc/loadavg").read_text().split()[:3])
    except (OSError, ValueError):
        return None
    return LoadAverage(one=one, five=five, fifteen=fifteen, cpus=os.cpu_count() or 0)


def server_context(base_url: str, api_key: str | None = None) -> tuple[int, str, str] | None:
    """``(tokens, "total"|"input", source)`` the server says one request may use, when it says so:
    ``/server_info`` (an SGLang server, evalpipe's llama.cpp launcher), else llama.cpp's own ``/props``
    (``default_generation_settings.n_ctx``, the per-slot context)."""
    try:
        info = read_json(base_url.rstrip("/") + "/server_info", api_key)
    except (OSError, ValueError, urllib.error.URLError):
        info = None
    if not isinstance(info, dict):
        return _llama_cpp_props_context(base_url, api_key)
    return served_context(info) or _llama_cpp_props_context(base_url, api_key)


def _llama_cpp_props_context(base_url: str, api_key: str | None) -> tuple[int, str, str] | None:
    try:
        props = read_json(base_url.rstrip("/") + "/props", api_key)
    except (OSError, ValueError, urllib.error.URLError):
        return None
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    value = settings.get("n_ctx") if isinstance(settings, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value, "total", "default_generation_settings.n_ctx from /props"
    return None


def check_fit(workloads: Sequence[SpeedWorkload], context: tuple[int, str, str] | None) -> None:
    """One line for the first workload whose requests cannot fit the server's context."""
    if context is None:
        return
    tokens, scope, source = context
    for i, w in enumerate(workloads):
        need = w.input_len + w.output_len if scope == "total" else w.input_len
        if need > tokens:
            what = "prompt + output" if scope == "total" else "prompt"
            raise SpeedSetupError(
                f"speed.workloads[{i}] {w.name}: {need} tokens of {what} per request do not fit the server's "
                f"context of {tokens} tokens ({source})"
            )


def check_reachable(base_url: str, api_key: str | None) -> None:
    try:
        read_json(base_url.rstrip("/") + "/v1/models", api_key)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        raise SpeedSetupError(
            f"speed: no OpenAI-compatible server answers at {base_url}/v1/models ({exc})"
        ) from None


def _now() -> datetime:
    return datetime.now(UTC)


def _fresh_round_dir(path: Path) -> None:
    """A round writes into an empty directory (EvalScope refuses an existing request log); an old one from an
    earlier ``evalpipe speed`` on the same run directory is kept, renamed, never overwritten."""
    if path.exists():
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        path.rename(path.with_name(f"{path.name}.superseded-{stamp}"))
    path.mkdir(parents=True)


@dataclass(frozen=True)
class _ClientRun:
    """One client process as it ran: its argv (secrets redacted), when it started and finished, how it ended."""

    argv: list[str]
    started: datetime
    finished: datetime
    exit_code: int | None
    timed_out: bool


def _round_record(
    plan: RoundPlan,
    parsed: ParsedRound,
    client: SpeedClient,
    run: _ClientRun,
    *,
    relative_to: Path,
    secrets: Sequence[str],
) -> RoundRecord:
    problems = list(parsed.problems)
    requested = plan.workload.num_prompts
    if run.timed_out:
        problems.insert(0, f"the client was stopped after {plan.timeout_s:g} s (speed.round_timeout_s)")
    elif run.exit_code != 0:
        log = (plan.round_dir / "client.log").relative_to(relative_to).as_posix()
        problems.insert(0, f"the client exited with {run.exit_code} (log: {log})")
    if parsed.completed < requested:
        problems.insert(0, f"{parsed.completed} of {requested} requests completed")
    if parsed.cached_prompt_tokens_pct:
        problems.append(
            f"{parsed.cached_prompt_tokens_pct:.1f} % of prompt tokens came from the server's prefix cache: "
            "the timings include reuse (switch the server's prompt cache off or flush it)"
        )
    return RoundRecord(
        workload=plan.workload.name,
        round_index=plan.round_index,
        seed=plan.seed,
        argv=run.argv,
        started_at=run.started,
        finished_at=run.finished,
        client_exit_code=run.exit_code,
        timed_out=run.timed_out,
        requested=requested,
        completed=parsed.completed,
        duration_s=parsed.duration_s,
        request_throughput=parsed.request_throughput,
        input_throughput=parsed.input_throughput,
        output_throughput=parsed.output_throughput,
        total_throughput=parsed.total_throughput,
        input_tokens=parsed.input_tokens,
        output_tokens=parsed.output_tokens,
        ttft_ms=parsed.ttft_ms,
        itl_ms=parsed.itl_ms,
        tpot_ms=parsed.tpot_ms,
        e2e_ms=parsed.e2e_ms,
        percentile_method=client.percentile_method,
        prompt_set_sha256=parsed.prompt_set_sha256,
        cached_prompt_tokens_pct=parsed.cached_prompt_tokens_pct,
        lengths_as_requested=parsed.lengths_as_requested,
        derived=parsed.derived,
        raw_files=keep_raw_files(plan.round_dir, relative_to, secrets),
        problems=problems,
    )


@dataclass
class Prepared:
    """What :func:`prepare` checked: the client (and its version) and the tokenizer it will use."""

    client: SpeedClient
    client_version: str
    tokenizer: ResolvedTokenizer | None


def resolve_tokenizer(spec: str | None, base_dir: Path | None) -> ResolvedTokenizer | None:
    """The directory ``speed.tokenizer`` names (``evalpipe.tokenizer``), a failure as the speed stage's own."""
    try:
        return resolve(spec, base_dir, field="speed.tokenizer")
    except TokenizerError as exc:
        raise SpeedSetupError(exc.message, details=exc.details) from None


def prepare(
    cfg: SpeedConfig,
    base_urls: Sequence[str],
    *,
    api_key: str | None = None,
    api_keys: Sequence[str | None] | None = None,
    context_length: int | None = None,
    base_dir: Path | None = None,
    client_env: Mapping[str, str] | None = None,
    client: SpeedClient | None = None,
) -> Prepared:
    """Every check that needs no request: client, tokenizer, servers reachable, workloads fit the context.
    ``api_keys``: one per URL (else ``api_key`` for every one).  ``client`` replaces the one ``cfg.client``
    names (tests drive the orchestration with a stand-in)."""
    client = client or make_client(cfg, client_env=client_env)
    version = client.version()
    tokenizer = resolve_tokenizer(cfg.tokenizer, base_dir)
    client.check(cfg, tokenizer.directory if tokenizer else None)
    keys = list(api_keys) if api_keys is not None else [api_key] * len(base_urls)
    for url, key in zip(base_urls, keys, strict=True):
        check_reachable(url, key)
        context = (
            (context_length, "total", "model.context_length") if context_length else server_context(url, key)
        )
        check_fit(cfg.workloads, context)
    return Prepared(client, version, tokenizer)


def _new_artifact(
    target: SpeedTarget, cfg: SpeedConfig, prepared: Prepared, served_model: str, schedule: Schedule
) -> SpeedArtifact:
    client = prepared.client
    return SpeedArtifact(
        variant=target.variant,
        server_url=target.base_url,
        served_model=served_model,
        client=ClientInfo(name=client.name, program=client.program, version=prepared.client_version, argv=[]),
        tokenizer=(
            f"{prepared.tokenizer.directory} ({prepared.tokenizer.source})" if prepared.tokenizer else None
        ),
        tokenizer_json_sha256=prepared.tokenizer.tokenizer_json_sha256 if prepared.tokenizer else None,
        config=cfg,
        schedule=schedule,
        load_before=load_average(),
        workloads=[WorkloadRounds(workload=w, name=w.name) for w in cfg.workloads],
    )


def run_round(
    prepared: Prepared,
    cfg: SpeedConfig,
    target: SpeedTarget,
    workload: SpeedWorkload,
    round_index: int,
    served_model: str,
    api_key: str | None,
) -> tuple[RoundRecord, list[str]]:
    """One client run (``prepared`` comes from :func:`prepare`): the round's record and its redacted argv."""
    client = prepared.client
    round_dir = RunDir(target.out_dir).speed_dir / workload.name / f"round-{round_index + 1:02d}"
    _fresh_round_dir(round_dir)
    plan = RoundPlan(
        workload=workload,
        round_index=round_index,
        seed=cfg.seed + round_index,
        round_dir=round_dir,
        base_url=target.base_url,
        served_model=served_model,
        tokenizer_dir=prepared.tokenizer.directory if prepared.tokenizer else None,
        extra_request_body=cfg.extra_request_body,
        timeout_s=cfg.round_timeout_s,
    )
    argv = client.argv(plan, cfg)
    env = {**os.environ, **client.env(api_key)}
    started = _now()
    ended = run_bounded(argv, log_path=round_dir / "client.log", timeout_s=cfg.round_timeout_s, env=env)
    finished = _now()
    parsed = client.parse(plan)
    secrets = [api_key] if api_key else []
    redacted_argv = redact_argv(argv, secrets)
    ran = _ClientRun(redacted_argv, started, finished, ended.returncode, ended.timed_out)
    record = _round_record(plan, parsed, client, ran, relative_to=target.out_dir, secrets=secrets)
    return record, redacted_argv


def _record_round(artifact: SpeedArtifact, record: RoundRecord, argv: list[str]) -> None:
    if not artifact.client.argv:
        artifact.client.argv = argv
    artifact.rounds_for(record.workload).append(record)
    for message in record.problems:
        severity: Severity = "error" if not record.usable and message == record.problems[0] else "warn"
        artifact.problems.append(
            Problem(
                severity=severity, workload=record.workload, round_index=record.round_index, message=message
            )
        )


def run_speed_alternating(targets: Sequence[SpeedTarget], request: SpeedRequest) -> dict[str, SpeedArtifact]:
    """Run every workload's rounds on every target, alternating the order per round; one ``speed.json`` each."""
    if len({t.variant for t in targets}) != len(targets):
        raise SpeedSetupError("speed: two targets share a variant name")
    cfg, served_model = request.config, request.served_model
    keys = {t.variant: t.api_key if t.api_key is not None else request.api_key for t in targets}
    prepared = prepare(
        cfg,
        [t.base_url for t in targets],
        api_keys=[keys[t.variant] for t in targets],
        context_length=request.context_length,
        base_dir=request.base_dir,
        client_env=request.client_env,
        client=request.client,
    )
    schedule: Schedule = "alternating" if len(targets) > 1 else "single"
    artifacts = {t.variant: _new_artifact(t, cfg, prepared, served_model, schedule) for t in targets}
    for t in targets:
        write_model(RunDir(t.out_dir).speed_json, artifacts[t.variant])
    for workload in cfg.workloads:
        for round_index in range(cfg.rounds):
            order = list(targets) if round_index % 2 == 0 else list(reversed(targets))
            for target in order:
                key = keys[target.variant]
                record, argv = run_round(prepared, cfg, target, workload, round_index, served_model, key)
                artifact = artifacts[target.variant]
                _record_round(artifact, record, argv)
                write_model(RunDir(target.out_dir).speed_json, artifact)
                if request.progress is not None:
                    request.progress(round_line(target.variant, record))
    for t in targets:
        artifacts[t.variant].load_after = load_average()
        write_model(RunDir(t.out_dir).speed_json, artifacts[t.variant])
    return artifacts


def run_speed(target: SpeedTarget, request: SpeedRequest) -> SpeedArtifact:
    """The speed benchmark of one variant on its ready server (no proxy); writes ``target.out_dir/speed.json``."""
    return run_speed_alternating([target], request)[target.variant]


def round_line(variant: str, r: RoundRecord) -> str:
    tput = "n/a" if r.output_throughput is None else f"{r.output_throughput:,.1f} tok/s"
    ttft = "n/a" if r.ttft_ms.median is None else f"{r.ttft_ms.median:,.0f} ms"
    status = "" if r.complete else f" — INCOMPLETE: {r.problems[0] if r.problems else 'see speed.json'}"
    return (
        f"{variant} {r.workload} round {r.round_index + 1}: {r.completed}/{r.requested} completed, "
        f"output {tput}, TTFT p50 {ttft}{status}"
    )


def read_speed(path: Path) -> SpeedArtifact:
    return read_model(path, SpeedArtifact)


def speed_command(
    request: SpeedRequest,
    endpoints: dict[str, str],
    out_root: Path,
    *,
    control: str | None = None,
    min_output_throughput_ratio: float | None = None,
) -> tuple[dict[str, SpeedArtifact], SpeedComparison | None]:
    """``evalpipe speed``: benchmark ready endpoints (variant → URL) into ``out_root/<variant>/`` and, for two
    variants, compare them (``out_root/speed_compare.json``; control = ``control`` or the first)."""
    targets = [SpeedTarget(name, url, out_root / name) for name, url in endpoints.items()]
    artifacts = run_speed_alternating(targets, request)
    if len(targets) != 2:
        return artifacts, None
    names = [t.variant for t in targets]
    control_name = control or names[0]
    if control_name not in artifacts:
        raise SpeedSetupError(f"speed: control variant {control_name!r} is not one of {', '.join(names)}")
    test_name = next(n for n in names if n != control_name)
    comparison = compare_speed(
        artifacts[control_name], artifacts[test_name], min_output_throughput_ratio=min_output_throughput_ratio
    )
    write_model(RunDir(out_root).speed_compare, comparison)
    return artifacts, comparison
