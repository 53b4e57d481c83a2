"""``evalpipe run``: sample → preflight → launch → materialize → EvalScope → outcomes → audit."""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalpipe.errors import ConfigError, RunStopped
from evalpipe.processes.signals import sigterm_interrupts

if TYPE_CHECKING:  # heavy imports stay inside the functions: `evalpipe --help` must be instant
    from rich.console import Console
    from rich.progress import Progress

    from evalpipe.artifacts.schema.compare import PairedBenchmark
    from evalpipe.artifacts.schema.outcomes import OutcomeRow
    from evalpipe.artifacts.schema.timings import StageTime
    from evalpipe.config.models import RunConfig
    from evalpipe.progress import LineProgress, ProgressDisplay
    from evalpipe.resolve import ResolvedRun
    from evalpipe.run.pipeline import RunResult


def run(
    config: Annotated[Path, typer.Argument(help="Run config YAML")],
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint",
            help="Base URL of a running OpenAI-compatible server (http://host:port or http://host:port/v1); "
            "attaches instead of launching, whatever kind the config's server.kind launches.",
        ),
    ] = None,
    dataset_root: Annotated[
        Path | None,
        typer.Option(
            "--dataset-root", help="Local mirror root for every benchmark (layout of ../shared/datasets)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Run directory (default: output_root/<name>-<time>)")
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume", help="Continue this run directory; cached answers are identity-checked first."
        ),
    ] = None,
    allow_dataset_drift: Annotated[
        bool,
        typer.Option("--allow-dataset-drift", help="Run even if a pinned fingerprint differs (recorded)."),
    ] = False,
    extend: Annotated[
        Path | None,
        typer.Option(
            "--extend",
            help="Grow this finished run to the config's larger plans (same seed): its answered samples are "
            "reused after the identity checks, only the added ones are sent.",
        ),
    ] = None,
    no_speed: Annotated[
        bool,
        typer.Option(
            "--no-speed",
            help="Accuracy only: skip the config's speed: section (no speed client needed; recorded in "
            "run.json; the report says serving speed was not measured).  gates.min_output_throughput_ratio "
            "then fails unless --waive-speed-gate.",
        ),
    ] = False,
    waive_speed_gate: Annotated[
        bool,
        typer.Option(
            "--waive-speed-gate",
            help="With --no-speed: gates.min_output_throughput_ratio is reported as not measured, not failed "
            "(recorded in run.json).",
        ),
    ] = False,
) -> None:
    """Sample, launch (or attach to) the server, run EvalScope through the recording proxy, audit.

    Exit 0 = gates passed, 1 = a gate failed, 2 = usage/config/preflight error, 3 = the audit found an
    error-severity finding, 4 = server error, 5 = no space left on the run directory's file system.  With
    `variants:` in the config every variant runs on the same manifest and the first is compared with the
    others.
    """
    from evalpipe.evalscope_bridge.prestart import discard_prestarted  # import cost: not for --help

    if extend is not None and resume is not None:
        raise ConfigError("--extend and --resume: a run is either grown from another or continued, not both")
    resolved, progress_factory = _setup(config)
    cfg = resolved.config
    if cfg.parallel_variants and endpoint is None:  # variants at once: each variant's process starts its own
        discard_prestarted()
    if waive_speed_gate and not no_speed:
        raise ConfigError("--waive-speed-gate only goes with --no-speed (a measured ratio is never waived)")
    if no_speed:
        resolved = resolved.derived(cfg.accuracy_only(waive_speed_gate=waive_speed_gate))
        cfg = resolved.config
    try:
        with sigterm_interrupts(), progress_factory() as progress:
            if cfg.variants and endpoint is None:
                execute_variants(resolved, dataset_root=dataset_root, out=out, resume=resume,
                                 allow_drift=allow_dataset_drift, progress=progress, extend=extend)  # fmt: skip
                return
            # import cost: the command's modules (~338) load when it runs; `evalpipe --help` stays light
            from evalpipe.run import pipeline
            from evalpipe.run.options import ServerTarget, origin_from_flags
            from evalpipe.run.spec import RunSpec

            origin = origin_from_flags(
                out=out,
                resume=resume,
                extend=extend,
                dataset_root=dataset_root,
                allow_drift=allow_dataset_drift,
            )
            result = pipeline.run(RunSpec(resolved, origin, ServerTarget(endpoint=endpoint)), progress)
    except RunStopped as exc:
        exc.resume_command = resume_command(
            config, exc.run_dir, endpoint=endpoint, dataset_root=dataset_root, cfg=cfg
        )
        raise
    finally:
        discard_prestarted()
    finish(result)


def resume_command(
    config: Path,
    run_dir: str,
    *,
    endpoint: str | None,
    dataset_root: Path | None,
    cfg: RunConfig | None = None,
) -> str:
    """The exact command that continues ``run_dir`` (with the endpoint, mirror and speed flags this run
    used)."""

    argv = ["evalpipe", "run", str(config), "--resume", str(run_dir)]
    if endpoint:
        argv += ["--endpoint", endpoint]
    if dataset_root:
        argv += ["--dataset-root", str(dataset_root)]
    if cfg is not None and cfg.no_speed:
        argv.append("--no-speed")
    if cfg is not None and cfg.speed_gate_waived:
        argv.append("--waive-speed-gate")
    return shlex.join(argv)


def _progress() -> Progress | LineProgress:
    """The per-benchmark progress display (on stderr): bars on a terminal, else one line per benchmark."""
    # import cost: the command's modules (~71) load when it runs; `evalpipe --help` stays light
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from evalpipe.cli.console import err
    from evalpipe.progress import LineProgress

    if not err.is_terminal:
        return LineProgress(err)

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )


def _setup(config: Path) -> tuple[ResolvedRun, Callable[[], Progress | LineProgress]]:
    # import cost: the command's modules (~194) load when it runs; `evalpipe --help` stays light
    from evalpipe.resolve import load_run

    return load_run(config), _progress


def finish(result: RunResult) -> None:
    """Outcome table, then the audit's table, findings and verdict; raise the verdict's exit code."""
    # import cost: the command's modules (~197) load when it runs; `evalpipe --help` stays light
    from evalpipe.audit.gates import raise_for_verdict
    from evalpipe.cli.audit_cmd import show
    from evalpipe.cli.console import out as console

    summarize(result, console)
    if result.summary is not None:
        show(result.summary, written=result.rundir.root)
    print_timings(result.timings, console)
    if result.summary is not None:
        raise_for_verdict(result.summary)


def print_timings(stages: list[StageTime], console: Console) -> None:
    """One line per variant (or one for the run): wall time of each stage, then the total."""
    if not stages:
        return
    groups: dict[str | None, list[StageTime]] = {}
    for s in stages:
        groups.setdefault(s.variant, []).append(s)
    for variant, rows in groups.items():
        parts = " · ".join(f"{r.stage} {r.seconds:.1f} s" for r in rows)
        label = f"variant {variant}" if variant else "run"
        console.print(f"stage wall time ({label}): {parts}", soft_wrap=True)
    together = next((s for s in stages if s.stage == "variants"), None)
    if together is not None:  # variants ran at the same time: their own stages overlap, their audits do not
        wall = sum(s.seconds for s in stages if s.variant is None or s.stage == "audit")
        console.print(
            f"total wall time: {wall:.1f} s (the variants at the same time: {together.seconds:.1f} s)"
        )
        return
    console.print(f"total stage wall time: {sum(s.seconds for s in stages):.1f} s ({len(stages)} stages)")


def execute_variants(
    resolved: ResolvedRun,
    *,
    dataset_root: Path | None,
    out: Path | None,
    resume: Path | None,
    allow_drift: bool,
    progress: ProgressDisplay | None,
    extend: Path | None = None,
) -> None:
    """Each variant on the same manifest, the paired comparison, each variant's audit (``run_variants``);
    shown here, the verdict the outcome names exits."""
    # import cost: the command's modules (~417) load when it runs; `evalpipe --help` stays light
    from evalpipe.artifacts import read_model
    from evalpipe.artifacts.schema.compare import CompareResult
    from evalpipe.artifacts.schema.timings import StageTimings
    from evalpipe.audit.gates import raise_for_verdict
    from evalpipe.cli.audit_cmd import show
    from evalpipe.cli.console import out as console
    from evalpipe.run.variants import run_variants
    from evalpipe.words.compare import numerics_verdict, paired_line

    outcome = run_variants(
        resolved,
        dataset_root=dataset_root,
        out=out,
        resume=resume,
        allow_drift=allow_drift,
        progress=progress,
        extend=extend,
    )
    console.print(f"run directory: {outcome.rundir.root}")
    for name, result in outcome.results.items():
        console.rule(f"variant {name}")
        summarize(result, console)
        if result.summary is not None:
            show(result.summary, written=result.rundir.root)
    for files in outcome.comparisons:
        cmp = read_model(files.compare_json, CompareResult)
        what = "A/A control (no A/B)" if cmp.aa_only else "paired control"
        console.rule(f"{what}: {cmp.label_a} vs {cmp.label_b}")
        for b in [*cmp.benchmarks, *cmp.pools, *([cmp.overall] if cmp.overall else [])]:
            console.print(paired_line(b, cmp.label_a, cmp.label_b), soft_wrap=True)
            for said in power_lines(b):
                console.print(f"  {said}", soft_wrap=True, markup=False)
        if cmp.numerics is not None:
            console.print(f"numerics: {numerics_verdict(cmp.numerics)}", soft_wrap=True, markup=False)
        console.print(f"{files.compare_json.name} → {files.compare_json}")
        if files.speed_compare is not None:
            console.print(f"{files.speed_compare.name} → {files.speed_compare}")
    if outcome.rundir.timings.is_file():
        print_timings(read_model(outcome.rundir.timings, StageTimings).stages, console)
    if outcome.verdict is not None:
        raise_for_verdict(outcome.verdict)


def power_lines(block: PairedBenchmark) -> list[str]:
    """What a compare.json block says about noise, power and non-inferiority, one sentence a line."""
    # import cost: the command's modules (~127) load when it runs; `evalpipe --help` stays light
    from evalpipe.words.compare import block_mde_sentence, verdict_sentence
    from evalpipe.words.sentences import aa_sentence, noise_sentence, sequential_sentence

    said = []
    if block.aa_discordant is not None:
        said.append(aa_sentence(block.aa_discordant))
    if block.noise_vs_ab is not None:
        said.append(noise_sentence(block.noise_vs_ab))
    mde = block_mde_sentence(block)
    if mde:
        said.append(f"MDE: {mde}")
    if block.non_inferiority is not None:
        said.append(f"non-inferiority: {verdict_sentence(block.non_inferiority)}")
    if block.sequential is not None:
        said.append(sequential_sentence(block.sequential))
    return said


def summarize(result: RunResult, console: Console) -> None:
    """Per benchmark: samples, ok, failure classes; repairs on resume; where the files are."""

    # import cost: the command's modules (~45) load when it runs; `evalpipe --help` stays light
    from rich.table import Table

    table = Table(title=f"run {result.rundir.root}", show_lines=False)
    for col in ("benchmark", "samples", "ok", "failures"):
        table.add_column(col)
    by_bench: dict[str, list[OutcomeRow]] = {}
    for row in result.outcomes:
        by_bench.setdefault(row.benchmark, []).append(row)
    for name, rows in by_bench.items():
        counts = Counter(r.failure_label for r in rows if r.failure_class != "ok")
        ok = sum(1 for r in rows if r.failure_class == "ok")
        table.add_row(
            name, str(len(rows)), str(ok), ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"
        )
    console.print(table)
    stage = result.evalscope
    if result.resumed:
        console.print(f"cache-identity repairs: {len(stage.repairs)} (→ {result.rundir.cache_repairs})")
    for b in stage.benchmarks:
        if b.rerun_review and b.cache_identity_reason is not None:  # something that decides a score changed
            console.print(
                f"{b.benchmark}: EvalScope re-scored every cached prediction ({b.cache_identity_reason})"
            )
    console.print(f"outcomes → {result.rundir.outcomes}")


def register(app: typer.Typer) -> None:
    app.command("run")(run)
