"""KV-cache probe vs GSM8K on a real model: SmolLM2-135M on llama.cpp, KV cache f16 (control) vs q8_0 and
q4_0, on the same generated probe items and the same GSM8K questions, through the real pipeline
(``configs/demo-kv.yaml``: one slot, one thread, no prompt cache).

Why: the issue asks whether a retrieval probe sees a KV-cache change for fewer tokens than GSM8K does, and
tokens are priced separately — prefill (input) is cheap, decode (output) dear.  For each candidate and
benchmark this prints the flips against f16 (samples whose correctness differed) per million input tokens
and per million output tokens the pair spent (both arms' usage as the server reported it, outcomes.jsonl),
beside the probe's paired result by length and the one-line verdict from compare.json.

    PYTHONPATH=. python perf/bench_kv_probe.py --lengths 256,512 --gsm8k 3 [--no-q8]

``--lengths`` rewrites the probe spec's lengths (one beyond the server's context shows the drop line);
``--gsm8k`` the number of GSM8K questions.  Figures are whatever this host measures; nothing asserts them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from evalpipe.artifacts import RunDir, read_jsonl  # noqa: E402
from evalpipe.artifacts.schema.outcomes import OutcomeRow  # noqa: E402
from evalpipe.compare import Arms, Bootstrap, PairedDesign, compare_runs  # noqa: E402
from evalpipe.config.models import RunConfig, ServerVariant  # noqa: E402
from evalpipe.report.compare_markdown import compare_markdown  # noqa: E402
from evalpipe.resolve import load_run, resolve  # noqa: E402


def _config(path: Path, work: Path, lengths: list[int] | None, gsm8k: int, q8: bool) -> RunConfig:
    """The demo config with the probe's lengths, GSM8K's size and (optionally) a q8_0 arm overridden; the
    probe folder and sampler are rewritten under ``work`` and named by absolute path."""
    cfg = load_run(path).config
    benches = []
    for b in cfg.benchmarks:
        if b.name == "kv_probe" and lengths is not None:
            src = cfg.resolve_path(b.source.local or "")
            spec = json.loads((src / "probe.json").read_text(encoding="utf-8"))
            spec["lengths"] = lengths
            (work / "probe").mkdir()
            (work / "probe" / "probe.json").write_text(json.dumps(spec, indent=2), encoding="utf-8")
            b = b.model_copy(update={"source": b.source.model_copy(update={"local": str(work / "probe")})})
        elif b.name == "gsm8k":
            plan = cfg.resolve_path(b.sampling or "").read_text(encoding="utf-8")
            plan = "\n".join(
                f"total: {gsm8k}" if line.startswith("total:") else line for line in plan.splitlines()
            )
            (work / "gsm8k.yaml").write_text(plan + "\n", encoding="utf-8")
            src = str(cfg.resolve_path(b.source.local or ""))
            b = b.model_copy(
                update={
                    "sampling": str(work / "gsm8k.yaml"),
                    "source": b.source.model_copy(update={"local": src}),
                }
            )
        elif b.source.local:
            b = b.model_copy(
                update={
                    "source": b.source.model_copy(update={"local": str(cfg.resolve_path(b.source.local))})
                }
            )
        benches.append(b)
    variants = list(cfg.variants)
    if q8:
        variants.append(
            ServerVariant(name="kv_q8_0", label="llama.cpp KV q8_0", overrides={"kv_cache_dtype": "q8_0"})
        )
    # in this process, one arm after the other: parallel variant processes re-read the config file, which
    # has neither the rewritten probe/GSM8K nor the q8_0 arm (a q8_0 process there fails "unknown variant")
    out = cfg.model_copy(update={"benchmarks": benches, "variants": variants, "parallel_variants": False})
    out._config_path = cfg.config_path
    return out


def _tokens(rd: RunDir, benchmark: str) -> tuple[int, int]:
    rows = [r for r in read_jsonl(rd.outcomes, OutcomeRow) if r.benchmark == benchmark]
    return sum(r.input_tokens or 0 for r in rows), sum(r.output_tokens or 0 for r in rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "demo-kv.yaml")
    ap.add_argument("--lengths", help="comma-separated probe lengths (default: the spec's)")
    ap.add_argument("--gsm8k", type=int, default=4, help="GSM8K questions")
    ap.add_argument("--no-q8", action="store_true", help="f16 vs q4_0 only")
    ap.add_argument("--out", type=Path, help="run directory (default: a temporary one)")
    args = ap.parse_args()

    from evalpipe.run.variants import run_variants

    work = Path(tempfile.mkdtemp(prefix="bench_kv_probe-"))
    lengths = [int(x) for x in args.lengths.split(",")] if args.lengths else None
    cfg = _config(args.config, work, lengths, args.gsm8k, not args.no_q8)
    root = run_variants(resolve(cfg), out=args.out or work / "run").rundir
    control = root.root / "kv_f16"
    print(f"run directory: {root.root}")
    header = f"{'candidate':<10} {'benchmark':<9} {'n':>3} {'flips':>5} {'in tok':>8} {'out tok':>8} {'flips/M in':>11} {'flips/M out':>12}"
    print(header)
    for cand in [v.name for v in cfg.variants if v.name != "kv_f16"]:
        result = compare_runs(PairedDesign(Arms(root.root / cand, control), bootstrap=Bootstrap(resamples=1000)))
        for b in result.benchmarks:
            ia, oa = _tokens(RunDir(root.root / cand), b.benchmark)
            ib, ob = _tokens(RunDir(control), b.benchmark)
            inp, outp, flips = ia + ib, oa + ob, len(b.flips)
            per_in = f"{1e6 * flips / inp:.0f}" if inp else "–"
            per_out = f"{1e6 * flips / outp:.0f}" if outp else "–"
            print(
                f"{cand:<10} {b.benchmark:<9} {b.n_pairs:>3} {flips:>5} {inp:>8} {outp:>8} {per_in:>11} {per_out:>12}"
            )
        if cand == cfg.variants[0].name:
            print(compare_markdown(result))


if __name__ == "__main__":
    main()
