"""``compare.md``: the paired comparison (``compare.json``) as the report section a reader opens.

Differences are test − control (A − B) in signed points; the sentences it lists (A/A noise, MDE,
non-inferiority, the length verdict, one line per benchmark) are made here from ``compare.json``'s numbers
(``evalpipe.words.compare``).
"""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import AttemptSeedCheck, CompareResult, PairedBenchmark
from evalpipe.artifacts.schema.explorer import ExplorerRecord
from evalpipe.words.compare import (
    design_check_sentence,
    dropped_sentence,
    mde_basis_text,
    paired_line,
    power_sentences,
    scoring_sentence,
    versions_sentence,
)
from evalpipe.words.length_verdict import length_interval, length_verdict
from evalpipe.words.numbers import fmt_bytes, fmt_signed_pts_from_fraction
from evalpipe.words.numerics import table_lines as numerics_table_lines
from evalpipe.words.sentences import operating_sentence, sequential_design_line, verdict_cell


def attempt_seeds_line(check: AttemptSeedCheck, label_a: str, label_b: str) -> str:
    """One line on the attempts' request seeds and the samples whose attempts returned identical text."""
    n = check.samples
    if check.seeded == 0:
        seeds = f"attempt seeds: none recorded (checked: 0/{n} samples)"
    elif check.distinct == check.seeded and check.common == check.seeded:
        seeds = f"attempt seeds: distinct per attempt, identical across arms (checked: {check.seeded}/{n} samples)"
    else:
        seeds = (
            f"attempt seeds: distinct per attempt in {check.distinct} of {check.seeded} samples, identical "
            f"across arms in {check.common} of {check.seeded} (checked: {check.seeded}/{n} samples)"
        )
    same = (
        f"{label_a}: {check.identical_a} of {check.compared_a}, {label_b}: {check.identical_b} of "
        f"{check.compared_b} samples' {check.repeats} attempts returned identical text"
    )
    if check.temperature is not None:
        same += f" at temperature {check.temperature:g}"
        if check.temperature == 0:
            same += (
                " (greedy): a sample whose attempts are identical gained nothing from them — its disagreement is "
                "between samples, which attempts do not average"
            )
    return f"{seeds}; {same}"


def placement_grid_lines(block: PairedBenchmark, label_a: str, label_b: str) -> list[str]:
    """A generated benchmark's length × placement grid: each cell ``A/B of n``, marked with the flips where
    the candidate (A) lost the evidence B found (``▼k``) and the reverse (``▲k``)."""
    if not block.by_placement:
        return []
    placements = list(dict.fromkeys(c.placement for c in block.by_placement))
    lengths = sorted({c.length for c in block.by_placement})
    cell = {(c.length, c.placement): c for c in block.by_placement}
    lines = [
        f"{block.benchmark}: correct {label_a} / {label_b} of n, by context length (rows) and where the evidence "
        f"sat (columns); ▼k = k flips where {label_a} lost what {label_b} found, ▲k the reverse:",
        "",
        "| Length | " + " | ".join(placements) + " |",
        "|---|" + "---|" * len(placements),
    ]
    for length in lengths:
        row = []
        for placement in placements:
            c = cell.get((length, placement))
            if c is None:
                row.append("–")
                continue
            marks = (f" ▼{c.b_only}" if c.b_only else "") + (f" ▲{c.a_only}" if c.a_only else "")
            row.append(f"{c.a_correct}/{c.b_correct} of {c.n_pairs}{marks}")
        lines.append(f"| {length} | " + " | ".join(row) + " |")
    lines.append("")
    return lines


def compare_markdown(result: CompareResult, *, explorer: ExplorerRecord | None = None) -> str:
    """Report section: one line per benchmark plus the flipped samples; ``explorer``: the page beside it that
    shows every sample of the pair, flips first (and what it truncated)."""
    blocks = [*result.benchmarks, *result.pools, *([result.overall] if result.overall else [])]
    lines = _header_lines(result, explorer)
    lines += _table_lines(result, blocks)
    for b in blocks:
        lines += _block_notes(result, b)
    lines.append("")
    lines += _by_length_lines(result)
    if result.numerics is not None:
        lines += numerics_table_lines(result.numerics)
    for b in result.benchmarks:
        lines += placement_grid_lines(b, result.label_a, result.label_b)
    for b in result.benchmarks:
        lines.append(f"- {paired_line(b, result.label_a, result.label_b)}")
    flips = [f for b in result.benchmarks for f in b.flips]
    if flips:
        lines.append("")
        lines.append("Flipped samples:")
        lines.append("")
        for f in flips:
            lines.append(
                f"- {f.benchmark} `{f.source_id}`: {result.label_a} {f.failure_a}, {result.label_b} {f.failure_b}"
            )
    return "\n".join(lines) + "\n"


def _header_lines(result: CompareResult, explorer: ExplorerRecord | None) -> list[str]:
    """The title, what was compared and how, the explorer beside it, and what the A/A pair is."""
    if result.aa_only:
        lines = [f"## A/A control: {result.label_a} vs its repeat {result.label_b}", ""]
    else:
        lines = [f"## Paired control: {result.label_a} vs {result.label_b}", ""]
    lines.append(
        f"Same {sum(b.n_pairs for b in result.benchmarks)} samples (manifest sha256 `{result.manifest_sha256[:16]}`), "
        "same rendered prompts. Difference = A − B in percentage points; "
        f"{int(result.confidence * 100)} % paired-bootstrap interval (descriptive); exact McNemar test on discordant "
        "pairs; a verdict is printed with the interval of the test that decided it."
        + (f" {scoring}." if (scoring := scoring_sentence(result)) else "")
        + (f" {versions}." if (versions := versions_sentence(result)) else "")
    )
    if explorer is not None:
        name = explorer.file
        cut = (
            f"{explorer.truncated} truncated to head and tail ({explorer.tier}): "
            + ", ".join(explorer.truncated_ids[:10])
            + (" …" if explorer.truncated > 10 else "")
            if explorer.truncated
            else "nothing truncated"
        )
        lines.append("")
        lines.append(
            f"Read the flips side by side, every sample of both runs: [{name}](<{name}>) "
            f"({explorer.samples} samples, {fmt_bytes(explorer.bytes)}; {cut})."
        )
    lines.append("")
    if result.aa_only:
        lines.append("")
        lines.append(
            f"No A/B control ran: {result.label_b} is {result.label_a} launched again with the same settings on "
            "the same samples. Every difference below is the server's own noise; the MDE is what an A/B "
            "comparison of this size, against this noise, could detect."
        )
    elif result.run_aa is not None:
        lines.append("")
        lines.append(
            f"A/A control: {result.label_b} ran again as {result.label_aa} on the same samples; its discordance "
            "is the server's own noise, the noise model of the MDE."
        )
    lines.append("")
    return lines


def _table_lines(result: CompareResult, blocks: list[PairedBenchmark]) -> list[str]:
    """One table row per block with samples (benchmarks, pools, the overall block)."""
    lines = [
        f"| Dataset | {result.label_a} | {result.label_b} | Diff (pts) | Bootstrap 95 % CI (descriptive) | McNemar p "
        "| MDE (80 %) | Non-inferiority (the deciding interval, pts) | Sequential | Flips |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in blocks:
        if b.difference is None or b.diff_ci_low is None or b.diff_ci_high is None or b.mcnemar_p is None:
            continue  # no samples (all four are set together)
        mde = (
            f"{b.mde_pts:.1f} pts" if b.mde_pts is not None else ("none" if b.mde_basis is not None else "–")
        )
        ni = verdict_cell(b.non_inferiority) if b.non_inferiority else "–"
        seq = (
            f"{b.sequential.verdict} at {b.sequential.units_used}/{b.sequential.units_available}"
            if b.sequential
            else "–"
        )
        lines.append(
            f"| {b.benchmark} | {b.a.correct}/{b.a.scored} | {b.b.correct}/{b.b.scored} | {fmt_signed_pts_from_fraction(b.difference)} | "
            f"[{fmt_signed_pts_from_fraction(b.diff_ci_low)}, {fmt_signed_pts_from_fraction(b.diff_ci_high)}] | {b.mcnemar_p:.3g} | {mde} | {ni} | {seq} | {len(b.flips)} |"
        )
    lines.append("")
    return lines


def _block_notes(result: CompareResult, b: PairedBenchmark) -> list[str]:
    """A block's sentences under the table: power, the sequential design, drops, the operating characteristic,
    the design check and the attempts' seeds."""
    lines = []
    said = power_sentences(b)
    if b.paired_ci_low is not None and b.paired_ci_high is not None:
        said.append(
            f"Bonett–Price 95 % interval (descriptive) [{fmt_signed_pts_from_fraction(b.paired_ci_low)}, "
            f"{fmt_signed_pts_from_fraction(b.paired_ci_high)}] pts, {b.paired_test} p = {b.paired_p:.3g}"
        )
    if said:
        basis = mde_basis_text(b.mde_basis, b.n_pairs)
        lines.append(f"- {b.benchmark}: " + "; ".join(said) + (f" ({basis})" if basis else ""))
    if b.sequential:
        lines.append(f"- {b.benchmark}: {sequential_design_line(b.sequential, b.members)}")
    dropped = dropped_sentence(b)
    if dropped:
        lines.append(f"- {b.benchmark}: {dropped}")
    if b.operating:
        lines.append(f"- {b.benchmark}: {operating_sentence(b.operating)}")
    if b.design_check is not None:
        lines.append(f"- {b.benchmark}: {design_check_sentence(b.design_check, b.operating)}")
    if b.attempt_seeds is not None:
        lines.append(
            f"- {b.benchmark}: {attempt_seeds_line(b.attempt_seeds, result.label_a, result.label_b)}"
        )
        if b.attempt_seeds.common < b.attempt_seeds.seeded:
            lines.append(
                f"- {b.benchmark}: the arms sent different seeds for "
                f"{b.attempt_seeds.seeded - b.attempt_seeds.common} sample(s) "
                f"({', '.join(b.attempt_seeds.differing_across_arms)}): their draws are not coupled"
            )
    return lines


def _by_length_lines(result: CompareResult) -> list[str]:
    """The by-context-length table and its verdicts (none without length buckets)."""
    by_length = [(b, x) for b in result.benchmarks for x in b.by_length]
    if not by_length:
        return []
    lines = [
        "By context length (KV-cache view: does the difference grow with the context?):",
        "",
        f"| Dataset | Length | n | {result.label_a} | {result.label_b} | Diff (pts) | 95 % CI (the test of "
        "'behind') | Flips |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for b, x in by_length:
        low, high, name = length_interval(x)
        diff = (
            f"{fmt_signed_pts_from_fraction(x.difference)} | [{fmt_signed_pts_from_fraction(low)}, "
            f"{fmt_signed_pts_from_fraction(high)}] {name}"
            if x.difference is not None and low is not None and high is not None
            else "– | –"
        )
        lines.append(
            f"| {b.benchmark} | {x.length} | {x.n_pairs} | {x.a.correct}/{x.a.scored} | {x.b.correct}/{x.b.scored} | "
            f"{diff} | {len(x.flips)} |"
        )
    lines.append("")
    verdicts = (length_verdict(b.benchmark, b.by_length) for b in result.benchmarks)
    lines += [f"- {verdict}" for verdict in verdicts if verdict]
    lines.append("")
    return lines
