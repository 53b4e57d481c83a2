""" "Sampling": seed and selection rule, then per benchmark its strata and — for a sample that is not
proportional to its strata — the population-weighted estimate."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import B, Block, C, Heading, Inline, Paragraph, T
from evalpipe.words.numbers import ci_text, pct


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


def sampling_section(summary: Summary) -> list[Block]:
    return [Heading(2, "Sampling"), *(Paragraph(spans) for spans in sampling_paragraphs(summary))]
