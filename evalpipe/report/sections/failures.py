""" "Failure treatment": how each kind of failure was counted (a paragraph generated from the taxonomy
counts), reasoning length and code-execution policy per benchmark, and the outcome table."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import BenchmarkResult, FailureCount, Summary
from evalpipe.report.blocks import Block, Bullets, C, Heading, Inline, Paragraph, T, Table
from evalpipe.words.numbers import join_words, number_word, pct, plural


def _names(entries: list[tuple[BenchmarkResult, int]]) -> str:
    return join_words([f"{n} {b.display_name}" for b, n in entries])


def _budget_sentence(entries: list[tuple[BenchmarkResult, int]], how: str) -> str:
    """E.g. "One C-Eval and one LiveCodeBench response exhausted the respective 32768/65536-token output
    budgets without a final answer; both count as incorrect" (the budget per benchmark)."""
    total = sum(n for _, n in entries)
    names = join_words([f"{number_word(n)} {b.display_name}" for b, n in entries])
    noun = "response" if all(n == 1 for _, n in entries) else "responses"
    budgets = [str(b.max_tokens) if b.max_tokens else "?" for b, _ in entries]
    if len(entries) > 1:
        whose = f"the respective {'/'.join(budgets)}-token output budgets"
    else:
        whose = f"{'its' if total == 1 else 'their'} {budgets[0]}-token output budget"
    count = "it counts" if total == 1 else ("both count" if total == 2 else "all count")
    return f"{names[0].upper()}{names[1:]} {noun} exhausted {whose} {how}; {count} as incorrect"


def failure_paragraph(summary: Summary) -> str:
    """The failure-treatment paragraph, generated from the taxonomy counts: answers, code, scoring and missing
    rows, then the API/transport level."""
    sentences = [*_answer_sentences(summary), *_code_sentences(summary), *_unscored_sentences(summary)]
    sentences += _transport_sentences(summary)
    if not sentences:
        return "No failures other than wrong answers."
    return " ".join(sentences)


def _by_class(summary: Summary, cls: str) -> list[tuple[BenchmarkResult, int]]:
    """Each benchmark with failures of class ``cls``, and how many."""
    out = []
    for b in summary.benchmarks:
        n = sum(f.count for f in b.failures if f.failure_class == cls)
        if n:
            out.append((b, n))
    return out


def _answer_sentences(summary: Summary) -> list[str]:
    """Budgets exhausted (in the reasoning, in the answer) and answers with nothing to parse."""
    sentences: list[str] = []
    thinking = _by_class(summary, "budget_exhausted_in_reasoning")
    if thinking:
        sentences.append(_budget_sentence(thinking, "without a final answer") + ".")
    budget = _by_class(summary, "budget_exhausted")
    if budget:
        scored = sum(b.budget_exhausted_scored_correct for b, _ in budget)
        sentences.append(
            _budget_sentence(budget, "while writing the answer, which is cut off")
            + (f" (EvalScope scored {scored} of the truncated answers correct)." if scored else ".")
        )
    unparsable = _by_class(summary, "unparsable_answer")
    if unparsable:
        total = sum(n for _, n in unparsable)
        sentences.append(
            f"{_names(unparsable)} {'response' if total == 1 else 'responses'} had no parsable final answer; "
            "counted as incorrect."
        )
    return sentences


def _code_sentences(summary: Summary) -> list[str]:
    """Code samples that raised (by exception), timed out, failed to compile or failed their tests."""
    sentences: list[str] = []
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
        n = sum(n for _, n in _by_class(summary, cls))
        if n:
            verb = what if n == 1 or cls != "code_wrong_answer" else "failed their tests"
            sentences.append(f"{plural(n, 'code sample')} {verb}.")
    return sentences


def _unscored_sentences(summary: Summary) -> list[str]:
    """Samples the scorer failed on, and samples without a prediction, review or outcome."""
    sentences: list[str] = []
    scoring = _by_class(summary, "scoring_error")
    if scoring:
        total = sum(n for _, n in scoring)
        sentences.append(
            f"{_names(scoring)} {'sample' if total == 1 else 'samples'} could not be scored (scorer error); "
            "counted as incorrect."
        )
    missing = [
        (b, n)
        for b, n in _by_class(summary, "missing_prediction")
        + _by_class(summary, "missing_review")
        + _by_class(summary, "missing_outcome")
    ]
    if missing:
        sentences.append(
            f"{_names(missing)} {'sample has' if sum(n for _, n in missing) == 1 else 'samples have'} "
            "no prediction, review or outcome; counted as incorrect."
        )
    return sentences


def _transport_sentences(summary: Summary) -> list[str]:
    """Samples left without a response, and the request attempts that failed at the API/transport level."""
    sentences: list[str] = []
    api = _by_class(summary, "api_error")
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
    return sentences


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
    where = ", ".join(f"{n} in {kind}" for kind, n in c.sandboxes.items())
    denied = ", ".join(f"{kind} {n}" for kind, n in c.denied.items())
    boxed = f" Programs ran {where}" + (f"; the sandbox denied (programs): {denied}." if denied else ".")
    return f"{b.display_name} execution: {c.policy} In this run: {what}.{boxed if c.sandboxes else ''}"


def _failure_rows(summary: Summary) -> list[list[Inline]]:
    rows: list[list[Inline]] = []
    for b in summary.benchmarks:
        fs: list[FailureCount] = [f for f in b.failures if f.failure_class not in ("ok",)]
        for f in fs:
            ids = ", ".join(f.sample_ids[:8]) + (" …" if len(f.sample_ids) > 8 else "")
            rows.append([[T(b.display_name)], [C(f.label)], [T(str(f.count))], [C(ids)]])
    return rows


def failure_section(summary: Summary) -> list[Block]:
    blocks: list[Block] = [Heading(2, "Failure treatment"), Paragraph([T(failure_paragraph(summary))])]
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
    return blocks
