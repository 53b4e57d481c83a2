"""The report as a list of format-neutral blocks, built from a ``Summary`` only.

``report.md``, ``report.html`` and the terminal view render these blocks, so all three say the same
thing; nothing here reads the run directory or recomputes a number — it formats the summary.
Text from the run (ids, error messages) travels as spans so each renderer escapes it for its format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from evalpipe.schema.summary import BenchmarkResult, FailureCount, Interval, Summary

SpanKind = Literal["text", "code", "strong"]
Span = tuple[SpanKind, str]
Inline = list[Span]


def T(text: str) -> Span:
    return ("text", text)


def C(text: str) -> Span:
    return ("code", text)


def B(text: str) -> Span:
    return ("strong", text)


@dataclass
class Heading:
    level: int
    text: str


@dataclass
class Paragraph:
    spans: Inline


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Inline]]
    align: list[Literal["left", "right"]] = field(default_factory=list)
    key: str = ""  # "results" marks the main table (the HTML renderer adds the plot after it)


@dataclass
class Bullets:
    items: list[Inline]


Block = Heading | Paragraph | Table | Bullets

VERDICT_TEXT = {"pass": "PASS", "gate_failed": "GATE FAILED", "audit_error": "AUDIT ERROR"}
RESULTS_HEADERS = ["Dataset / metric", "Correct / scored", "Score", "95 % CI", "Input TPS", "Input TPS/GPU"]


# --- number formatting -----------------------------------------------------------------------------
def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f} %"


def ci_text(ci: Interval | None) -> str:
    return "n/a" if ci is None else f"[{100 * ci.lower:.1f}, {100 * ci.upper:.1f}] %"


def rate(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.1f}"


def plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def join_words(parts: list[str]) -> str:
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


# --- tables ------------------------------------------------------------------------------------------
def results_rows(summary: Summary) -> list[list[str]]:
    """Rows of the main table (also used by the terminal view)."""
    rows = []
    for b in summary.benchmarks:
        tp = b.throughput
        rows.append(
            [
                f"{b.display_name} / {b.metric}",
                f"{b.correct}/{b.scored}",
                pct(b.score),
                ci_text(b.interval),
                rate(tp.input_tps if tp else None),
                rate(tp.input_tps_per_gpu if tp else None),
            ]
        )
    return rows


def _secondary_table(b: BenchmarkResult) -> Table:
    rows: list[list[Inline]] = []
    for m in b.secondary:
        counts = f"{m.numerator}/{m.denominator}" if m.numerator is not None else "n/a"
        rows.append(
            [[C(m.name)], [T(counts)], [T(pct(m.score))], [T(ci_text(m.interval))], [T(m.note or "")]]
        )
    return Table(
        headers=["Metric", "Followed / total", "Score", "95 % CI", "Note"],
        rows=rows,
        align=["left", "right", "right", "right", "left"],
    )


def _length_table(b: BenchmarkResult) -> Table:
    rows: list[list[Inline]] = [
        [[T(x.length)], [T(str(x.n))], [T(f"{x.correct}/{x.n}")], [T(pct(x.score))], [T(ci_text(x.interval))]]
        for x in b.by_length
    ]
    return Table(
        headers=["Context length", "n", "Correct", "Score", "95 % CI"],
        rows=rows,
        align=["left", "right", "right", "right", "right"],
    )


# --- paragraphs --------------------------------------------------------------------------------------
def _names(entries: list[tuple[BenchmarkResult, int]]) -> str:
    return join_words([f"{n} {b.display_name}" for b, n in entries])


_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _number(n: int) -> str:
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def _budget_sentence(entries: list[tuple[BenchmarkResult, int]], how: str) -> str:
    """E.g. "One C-Eval and one LiveCodeBench response exhausted the respective 32768/65536-token output
    budgets without a final answer; both count as incorrect" (the budget per benchmark)."""
    total = sum(n for _, n in entries)
    names = join_words([f"{_number(n)} {b.display_name}" for b, n in entries])
    noun = "response" if all(n == 1 for _, n in entries) else "responses"
    budgets = [str(b.max_tokens) if b.max_tokens else "?" for b, _ in entries]
    if len(entries) > 1:
        whose = f"the respective {'/'.join(budgets)}-token output budgets"
    else:
        whose = f"{'its' if total == 1 else 'their'} {budgets[0]}-token output budget"
    count = "it counts" if total == 1 else ("both count" if total == 2 else "all count")
    return f"{names[0].upper()}{names[1:]} {noun} exhausted {whose} {how}; {count} as incorrect"


def failure_paragraph(summary: Summary) -> str:
    """The failure-treatment paragraph, generated from the taxonomy counts."""

    def by_class(cls: str) -> list[tuple[BenchmarkResult, int]]:
        out = []
        for b in summary.benchmarks:
            n = sum(f.count for f in b.failures if f.failure_class == cls)
            if n:
                out.append((b, n))
        return out

    sentences: list[str] = []
    thinking = by_class("budget_exhausted_in_reasoning")
    if thinking:
        sentences.append(_budget_sentence(thinking, "without a final answer") + ".")
    budget = by_class("budget_exhausted")
    if budget:
        scored = sum(b.budget_exhausted_scored_correct for b, _ in budget)
        sentences.append(
            _budget_sentence(budget, "while writing the answer, which is cut off")
            + (f" (EvalScope scored {scored} of the truncated answers correct)." if scored else ".")
        )
    unparsable = by_class("unparsable_answer")
    if unparsable:
        total = sum(n for _, n in unparsable)
        sentences.append(
            f"{_names(unparsable)} {'response' if total == 1 else 'responses'} had no parsable final answer; "
            "counted as incorrect."
        )
    runtime: dict[str, int] = {}
    for b in summary.benchmarks:
        for f in b.failures:
            if f.failure_class == "code_runtime_error":
                runtime[f.detail or "an unknown exception"] = (
                    runtime.get(f.detail or "an unknown exception", 0) + f.count
                )
    if runtime:
        items = sorted(runtime.items(), key=lambda kv: (-kv[1], kv[0]))
        parts = [f"{plural(items[0][1], 'code sample')} raised {items[0][0]}"]
        parts += [f"{n} raised {exc}" for exc, n in items[1:]]
        sentences.append(join_words(parts) + ".")
    for cls, what in (
        ("code_timeout", "timed out"),
        ("code_compile_error", "failed to compile"),
        ("code_wrong_answer", "failed its tests"),
    ):
        n = sum(n for _, n in by_class(cls))
        if n:
            verb = what if n == 1 or cls != "code_wrong_answer" else "failed their tests"
            sentences.append(f"{plural(n, 'code sample')} {verb}.")
    scoring = by_class("scoring_error")
    if scoring:
        total = sum(n for _, n in scoring)
        sentences.append(
            f"{_names(scoring)} {'sample' if total == 1 else 'samples'} could not be scored (scorer error); "
            "counted as incorrect."
        )
    missing = [
        (b, n)
        for b, n in by_class("missing_prediction") + by_class("missing_review") + by_class("missing_outcome")
    ]
    if missing:
        sentences.append(
            f"{_names(missing)} {'sample has' if sum(n for _, n in missing) == 1 else 'samples have'} "
            "no prediction, review or outcome; counted as incorrect."
        )
    api = by_class("api_error")
    failures = summary.requests.transport_failures
    if api:
        total = sum(n for _, n in api)
        sentences.append(
            f"{_names(api)} {'sample' if total == 1 else 'samples'} got no response (API/transport error); "
            "counted as incorrect."
        )
    if failures:
        retried = summary.requests.retries or 0
        sentences.append(
            f"{plural(failures, 'request attempt')} failed at the API/transport level"
            + (f"; {plural(retried, 'retry', 'retries')} followed." if retried else ".")
        )
        if not api:
            sentences.append("No sample was left without a response.")
    elif not api:
        sentences.append(
            "No API/transport failures."
            if failures == 0
            else "API/transport failures not verified (no request log)."
        )
    if not sentences:
        return "No failures other than wrong answers."
    return " ".join(sentences)


def reasoning_line(b: BenchmarkResult) -> str:
    """E.g. "GSM8K reasoning length: median 812 / p95 1,950 / max 2,048 tokens = 39.7 % / 95.2 % / 100.0 % of
    the 2048-token budget (5 of 5 responses reasoned; tokens reported for 5)"."""
    r = b.reasoning
    if r is None:
        return ""
    scope = f"{r.with_reasoning} of {r.responses} responses reasoned"
    if r.tokens is not None:
        t = r.tokens
        line = f"{b.display_name} reasoning length: median {t.median:,.0f} / p95 {t.p95:,.0f} / max {t.max:,.0f} tokens"
        if r.share_of_budget is not None and r.budget:
            sh = r.share_of_budget
            line += f" = {pct(sh.median)} / {pct(sh.p95)} / {pct(sh.max)} of the {r.budget}-token budget"
        return f"{line} ({scope}; tokens reported for {r.tokens_reported})."
    c = r.chars
    chars = f"median {c.median:,.0f} / p95 {c.p95:,.0f} / max {c.max:,.0f} characters" if c else "no length"
    return (
        f"{b.display_name} reasoning length: {chars}; the server reported no reasoning-token counts, so the "
        f"share of the {r.budget or '?'}-token budget is unknown ({scope})."
    )


def code_execution_line(b: BenchmarkResult) -> str:
    """The execution policy of a code benchmark and what its re-checks changed."""
    c = b.code_execution
    if c is None:
        return ""
    if c.rechecked:
        what = (
            f"{c.rechecked} of {c.executed} programs re-checked"
            f" ({plural(c.changed_class, 'class', 'classes')} changed, {c.passed_on_recheck} passed)"
        )
    else:
        what = f"none of {c.executed} programs needed a re-check"
    return f"{b.display_name} execution: {c.policy} In this run: {what}."


def request_paragraph(summary: Summary) -> str:
    r = summary.requests
    if r.actual_requests is None:
        return f"Request audit not available: no request log. {summary.response_selection.statement}"
    parts = [f"{plural(r.actual_requests, 'actual request')} for {plural(r.samples, 'sample')}"]
    parts.append(plural(r.duplicates or 0, "duplicate") if r.duplicates else "no duplicates")
    if r.retries:
        text = plural(r.retries, "retry", "retries")
        if len(r.retry_causes) == 1:
            text += f" after {next(iter(r.retry_causes))}"
        elif r.retry_causes:
            text += " (" + ", ".join(f"{n} after {cause}" for cause, n in r.retry_causes.items()) + ")"
        parts.append(text)
    else:
        parts.append("no retries")
    if r.transport_failures:
        parts.append(plural(r.transport_failures, "transport failure"))
    if r.unlinked:
        parts.append(f"{plural(r.unlinked, 'request')} not linked to any sample")
    if r.samples_with_requests is not None and r.samples_with_requests < r.samples:
        parts.append(f"{r.samples - r.samples_with_requests} sample(s) without a logged request")
    sel = summary.response_selection
    if sel.correctness_based_selection is False:
        parts.append("no correctness-based selection")
    else:
        parts.append(sel.statement.rstrip(".")[0].lower() + sel.statement.rstrip(".")[1:])
    text = "; ".join(parts) + "."
    if r.log_torn_tail:
        text += " The request log's last line was torn (crash mid-write) and skipped."
    return text


def sampling_paragraphs(summary: Summary) -> list[Inline]:
    s = summary.sampling
    results = {b.benchmark: b for b in summary.benchmarks}
    out: list[Inline] = [
        [
            T(f"Seed {s.seed}. Selection rule: {s.selection_rule} The sampled ids are listed in "),
            C(summary.sampled_ids_csv or "sampled_ids.csv"),
            T("."),
        ]
    ]
    for bs in s.benchmarks:
        b = results.get(bs.benchmark)
        name = b.display_name if b else bs.benchmark
        strata = ", ".join(f"{st.stratum}: {st.selected}/{st.population}" for st in bs.strata)
        spans: Inline = [
            B(name),
            T(f": {bs.sample_size} of {bs.population} records; {bs.rule}. Strata (n_h/N_h): {strata}."),
        ]
        if b is not None and b.stratified is not None:
            st = b.stratified
            kind = "equal-difficulty" if bs.stratify_by == "difficulty" else "equal-allocation"
            lead = (
                f" This {kind} sample is not a population-weighted score: "
                if not b.allocation_proportional
                else " Population-weighted estimate (design weights N_h/n_h): "
            )
            spans.append(
                T(
                    f"{lead}sample score {pct(b.score)} ({b.correct}/{b.scored}), population-weighted "
                    f"estimate {pct(st.estimate)} {ci_text(st.interval)} (effective n {st.effective_sample_size:.1f})."
                )
            )
        if bs.drift_allowed:
            spans.append(T(" The dataset differs from its pinned fingerprint (drift was allowed)."))
        out.append(spans)
    return out


def _finding_item(f) -> Inline:  # type: ignore[no-untyped-def]
    spans: Inline = [B(f.severity), T(" "), C(f.code)]
    where = []
    if f.benchmark:
        where.append(f.benchmark)
    if f.path:
        where.append(f.path)
    if where:
        spans.append(T(f" ({', '.join(where)})"))
    spans.append(T(f": {f.message}"))
    if f.sample_ids:
        spans += [T(" — samples "), C(", ".join(f.sample_ids))]
    if f.attempt_ids:
        spans += [T(" — attempts "), C(", ".join(f.attempt_ids))]
    return spans


def _failure_rows(summary: Summary) -> list[list[Inline]]:
    rows: list[list[Inline]] = []
    for b in summary.benchmarks:
        fs: list[FailureCount] = [f for f in b.failures if f.failure_class not in ("ok",)]
        for f in fs:
            ids = ", ".join(f.sample_ids[:8]) + (" …" if len(f.sample_ids) > 8 else "")
            rows.append([[T(b.display_name)], [C(f.label)], [T(str(f.count))], [C(ids)]])
    return rows


def _provenance_items(summary: Summary) -> list[Inline]:
    items: list[Inline] = [
        [
            T("Run "),
            C(summary.run_id),
            T(f", audited {summary.audited_at} by evalpipe {summary.evalpipe_version}."),
        ],
    ]
    if summary.config_sha256:
        items.append([T(f"Config {summary.config_name or '?'}: sha256 "), C(summary.config_sha256)])
    p = summary.provenance
    if p is None:
        items.append([T("Provenance: not recorded (provenance.json absent).")])
    else:
        versions = ", ".join(f"{pk.name} {pk.version or 'not installed'}" for pk in p.packages)
        if versions:
            items.append([T(f"Packages: {versions}.")])
        if p.evalpipe_git and p.evalpipe_git.commit:
            dirty = " (dirty)" if p.evalpipe_git.dirty else ""
            items.append([T("evalpipe git "), C(p.evalpipe_git.commit + dirty)])
        if p.sglang_git and p.sglang_git.commit:
            dirty = " (dirty)" if p.sglang_git.dirty else ""
            items.append([T("SGLang git "), C(p.sglang_git.commit + dirty)])
        if p.gpus:
            names: dict[str, int] = {}
            for g in p.gpus:
                names[g.name] = names.get(g.name, 0) + 1
            gpus = ", ".join(f"{n}× {name}" for name, n in names.items())
            items.append([T(f"GPUs: {gpus}; CUDA {p.cuda_version or 'unknown'}; host {p.host}.")])
        else:
            items.append([T(f"GPUs: none recorded; host {p.host}.")])
        items.append([T(f"Run window: {p.started_at} → {p.finished_at or 'unfinished'}.")])
        for ct in p.component_tests:
            items.append(
                [
                    T("Component test "),
                    C(ct.name),
                    T(
                        f": exit {ct.exit_code if ct.exit_code is not None else 'none (not run)'}; "
                        f"{ct.passed} passed, {ct.failed} failed, {ct.errors} errors, {ct.skipped} skipped."
                    ),
                ]
            )
    for bs in summary.sampling.benchmarks:
        items.append([T(f"{bs.benchmark} dataset fingerprint "), C(bs.dataset_fingerprint)])
    items.append(
        [
            T(
                f"Scope: {sum(b.scored for b in summary.benchmarks)} samples over "
                f"{len(summary.benchmarks)} benchmarks; a sampled sign-off, not a full-benchmark score."
            )
        ]
    )
    return items


def build_document(summary: Summary) -> list[Block]:
    blocks: list[Block] = []
    title = summary.config_name or summary.run_id
    blocks.append(Heading(1, f"Accuracy sign-off: {title}"))
    fc = summary.finding_counts
    blocks.append(
        Paragraph(
            [
                B(f"Verdict: {VERDICT_TEXT[summary.verdict]}"),
                T(
                    f" (exit {summary.exit_code}) — {plural(fc.get('error', 0), 'error')}, "
                    f"{plural(fc.get('warn', 0), 'warning')}, {fc.get('info', 0)} info finding(s)."
                ),
            ]
        )
    )

    blocks.append(Heading(2, "Configuration under test"))
    srv = summary.server
    m = summary.model
    if srv.verified:
        verified = "verified from server_info"
    elif srv.resolved_config_available is False:
        verified = "not verifiable: the server has no /server_info"
    else:
        verified = "not verified"
    cfg_items: list[Inline] = [
        [
            T("Model: "),
            C(m.path or "unknown"),
            T(" served as "),
            C(srv.served_model_name or m.served_name or "unknown"),
            T(
                f" ({verified})"
                if srv.served_model_name and srv.resolved_config_available is not False
                else (" (checked from /v1/models)" if srv.served_model_name else " (not verified)")
            ),
        ],
    ]
    if srv.verified is None:
        cfg_items.append(
            [T("Runtime, KV layout and kernels: not verified (no server_info verification record).")]
        )
    else:
        runtime = f"{srv.engine or srv.kind or 'server'} {srv.server_version or '(version unknown)'}"
        par = ", ".join(
            x
            for x in (
                f"TP {srv.tp_size}" if srv.tp_size else "",
                f"EP {srv.ep_size}" if srv.ep_size else "",
                f"speculative {srv.speculative_algorithm}" if srv.speculative_algorithm else "",
            )
            if x
        )
        cfg_items.append([T(f"Runtime: {runtime}{'; ' + par if par else ''} ({verified}).")])
        kv = ", ".join(
            x
            for x in (
                f"KV cache {srv.kv_cache_dtype}" if srv.kv_cache_dtype else "",
                f"attention {srv.attention_backend}" if srv.attention_backend else "",
                f"DSA prefill {srv.dsa_prefill_backend}" if srv.dsa_prefill_backend else "",
                f"DSA decode {srv.dsa_decode_backend}" if srv.dsa_decode_backend else "",
            )
            if x
        )
        if kv:
            cfg_items.append([T(f"KV layout and kernels: {kv} ({verified}).")])
    cfg_items.append([T("Server verification: "), T(srv.description)])
    g = summary.generation
    seed_state = {True: "effective", False: "not effective", None: "effectiveness not verified"}[
        g.seed_effective
    ]
    cfg_items.append(
        [
            T(
                f"Generation: temperature {g.temperature}, top_p {g.top_p}, seed {g.seed} ({seed_state}); "
                f"thinking {m.thinking or 'unknown'}."
            )
        ]
    )
    blocks.append(Bullets(cfg_items))

    blocks.append(Heading(2, "Results"))
    blocks.append(
        Table(
            headers=RESULTS_HEADERS,
            rows=[[[T(c)] for c in row] for row in results_rows(summary)],
            align=["left", "right", "right", "right", "right", "right"],
            key="results",
        )
    )
    blocks.append(
        Paragraph(
            [
                T(
                    "Score = correct / scored; every sampled record is in the denominator and a record without a "
                    "score counts as incorrect. 95 % CI: Wilson score interval. Input TPS: prompt tokens of the "
                    "benchmark's logged requests over its wall time (first request start → last request end); "
                    "per GPU: divided by the verified TP size."
                )
            ]
        )
    )
    for b in summary.benchmarks:
        if b.secondary:
            blocks.append(Heading(3, f"{b.display_name} secondary metrics"))
            blocks.append(_secondary_table(b))
    for b in summary.benchmarks:
        if b.by_length:
            blocks.append(Heading(3, f"{b.display_name} by context length"))
            blocks.append(
                Paragraph(
                    [
                        T(
                            "KV-cache view: the primary metric within each context-length bucket of the sample "
                            "(unweighted; same denominator rule), so a loss that grows with the context shows "
                            "here. Paired runs: compare.md and compare.json carry the difference and flips per bucket."
                        )
                    ]
                )
            )
            blocks.append(_length_table(b))

    blocks.append(Heading(2, "Sampling"))
    for spans in sampling_paragraphs(summary):
        blocks.append(Paragraph(spans))

    blocks.append(Heading(2, "Failure treatment"))
    blocks.append(Paragraph([T(failure_paragraph(summary))]))
    lengths = [reasoning_line(b) for b in summary.benchmarks if b.reasoning is not None]
    lengths += [code_execution_line(b) for b in summary.benchmarks if b.code_execution is not None]
    if lengths:
        blocks.append(Bullets([[T(x)] for x in lengths]))
    frows = _failure_rows(summary)
    if frows:
        blocks.append(
            Table(
                headers=["Dataset", "Outcome", "Count", "Samples"],
                rows=frows,
                align=["left", "left", "right", "left"],
            )
        )

    blocks.append(Heading(2, "Request audit"))
    blocks.append(Paragraph([T(request_paragraph(summary))]))
    blocks.append(
        Paragraph(
            [
                T("Declared response-selection rule: " + summary.response_selection.rule + ". "),
                T(summary.response_selection.statement),
            ]
        )
    )

    blocks.append(Heading(2, "Findings"))
    if summary.findings:
        blocks.append(Bullets([_finding_item(f) for f in summary.findings]))
    else:
        blocks.append(Paragraph([T("No findings.")]))

    blocks.append(Heading(2, "Gates"))
    blocks.append(
        Table(
            headers=["Gate", "Benchmark", "Result", "Detail"],
            rows=[
                [
                    [C(gr.gate)],
                    [T(gr.benchmark or "—")],
                    [B("pass") if gr.passed else B("FAIL")],
                    [T(gr.message)],
                ]
                for gr in summary.gates
            ],
            align=["left", "left", "left", "left"],
        )
    )

    blocks.append(Heading(2, "Provenance and scope"))
    blocks.append(Bullets(_provenance_items(summary)))
    blocks.append(Heading(2, "Limitations"))
    blocks.append(Bullets([[T(x)] for x in summary.limitations]))
    return blocks
