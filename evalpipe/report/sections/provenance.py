""" "Provenance and scope" (run, config hash, package versions, git revisions, GPUs, component tests,
dataset fingerprints) and "Limitations" (what this sign-off does not establish)."""

from __future__ import annotations

from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.blocks import Block, Bullets, C, Heading, Inline, T


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


def provenance_section(summary: Summary) -> list[Block]:
    return [Heading(2, "Provenance and scope"), Bullets(_provenance_items(summary))]


def limitations_section(summary: Summary) -> list[Block]:
    return [Heading(2, "Limitations"), Bullets([[T(x)] for x in summary.limitations])]
