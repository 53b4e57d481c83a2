"""Terminal table of a manifest's strata (N_h, n_h, weights) per benchmark."""

from __future__ import annotations

from rich.table import Table

from evalpipe.artifacts.schema.manifest import Manifest


def sampling_table(manifest: Manifest) -> Table:
    table = Table(title=f"Sample manifest (seed {manifest.seed})", show_lines=False)
    for col in ("benchmark", "stratum", "N_h", "n_h", "weight N_h/n_h", "fingerprint"):
        table.add_column(col, justify="right" if col in ("N_h", "n_h", "weight N_h/n_h") else "left")
    for block in manifest.benchmarks:
        for i, s in enumerate(block.strata):
            table.add_row(
                block.benchmark if i == 0 else "",
                s.stratum + (f" (short {s.shortfall})" if s.shortfall else ""),
                str(s.population),
                str(s.selected),
                f"{s.population / s.selected:.2f}" if s.selected else "-",
                block.dataset.fingerprint[:16] if i == 0 else "",
            )
        table.add_row(
            "", "[bold]total[/]", str(block.filtered_population), f"[bold]{block.sample_size}[/]", "", ""
        )
        table.add_section()
    return table
