"""``evalpipe speed CONFIG --endpoint URL | --variant NAME=URL …`` — the serving benchmark alone.

Runs the config's ``speed:`` section against servers that are already up (no accuracy run, no proxy): one
``--endpoint`` benchmarks one server into ``OUT/default/speed.json``; two ``--variant NAME=URL`` benchmark
both with their rounds alternating (ABBA…, paired resampling) and write ``OUT/speed_compare.json`` (the first
variant is the test, as in ``evalpipe run``).  ``evalpipe run`` runs the same benchmark on each variant's own
launch after its evaluation.

Exit codes: 0; 1 when ``gates.min_output_throughput_ratio`` fails; 2 for a config or set-up refusal (client
not installed, no tokenizer, a workload longer than the server's context, a server that does not answer);
3 when a round did not complete every request.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from evalpipe.errors import ConfigError


def _endpoints(endpoint: str | None, variants: list[str]) -> dict[str, str]:
    if endpoint and variants:
        raise ConfigError("evalpipe speed: give --endpoint or --variant NAME=URL, not both")
    if endpoint:
        return {"default": endpoint}
    out: dict[str, str] = {}
    for item in variants:
        name, sep, url = item.partition("=")
        if not sep or not name or not url:
            raise ConfigError(f"--variant {item}: expected NAME=URL")
        if name in out:
            raise ConfigError(f"--variant {name}: given twice")
        out[name] = url
    if not out:
        raise ConfigError("evalpipe speed: give --endpoint URL or --variant NAME=URL (twice to compare)")
    if len(out) > 2:
        raise ConfigError("evalpipe speed: at most two --variant (a test and its control)")
    return out


def speed(
    config: Annotated[Path, typer.Argument(help="Run config with a speed: section")],
    endpoint: Annotated[str | None, typer.Option("--endpoint", help="One running server's base URL")] = None,
    variant: Annotated[
        list[str] | None,
        typer.Option("--variant", help="NAME=URL of a running server; twice to compare (first = test)"),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output directory (default: OUTPUT_ROOT/<name>-speed-<UTC>)")
    ] = None,
) -> None:
    """Benchmark running servers with the config's speed section; print each round and the ratios."""

    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.artifacts import RunDir
    from evalpipe.audit.gates import AuditErrorFound, GateFailed
    from evalpipe.cli.console import out as console
    from evalpipe.resolve import load_run
    from evalpipe.speed.run import SpeedRequest, speed_command

    cfg = load_run(config, check_sampling=False).config
    if cfg.speed is None:
        raise ConfigError(f"{config}: no speed: section")
    endpoints = _endpoints(endpoint, list(variant or []))
    names = list(endpoints)
    out_root = (
        out
        or cfg.resolve_path(cfg.output_root)
        / f"{cfg.name}-speed-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    )
    request = SpeedRequest(
        cfg.speed,
        cfg.model.served_name,
        base_dir=cfg.base_dir(),
        progress=lambda line: console.print(line, markup=False, highlight=False, soft_wrap=True),
    )
    artifacts, comparison = speed_command(
        request,
        endpoints,
        Path(out_root),
        control=names[1] if len(names) == 2 else None,  # the first variant is the test, as in evalpipe run
        min_output_throughput_ratio=cfg.gates.min_output_throughput_ratio,
    )
    for name in artifacts:
        speed_json = RunDir(Path(out_root) / name).speed_json
        console.print(f"{speed_json.name} → {speed_json}")
    incomplete = [
        f"{a.variant} {r.workload} round {r.round_index + 1}: {r.problems[0] if r.problems else 'not usable'}"
        for a in artifacts.values()
        for w in a.workloads
        for r in w.rounds
        if not r.usable
    ]
    if comparison is not None:
        for w in comparison.workloads:
            console.print(w.line, markup=False, highlight=False, soft_wrap=True)
        console.print(f"{RunDir(out_root).speed_compare.name} → {RunDir(out_root).speed_compare}")
    if incomplete:
        raise AuditErrorFound(f"{len(incomplete)} speed round(s) incomplete", details=incomplete)
    if comparison is not None and comparison.gate_passed is False:
        failed = [w.gate.message for w in comparison.workloads if w.gate is not None and not w.gate.passed]
        raise GateFailed(f"{len(failed)} gate(s) failed", details=failed)


def register(app: typer.Typer) -> None:
    app.command("speed")(speed)
