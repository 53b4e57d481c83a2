"""``evalpipe benchmarks``: the registered benchmark modules and what each needs.

One row per registered benchmark (built in, or registered through ``EVALPIPE_BENCHMARK_MODULES``): the
EvalScope adapter it drives, how a record's id is made, the strata a sampling rule can use, what a local
copy must look like, and whether the answer-key server (``evalpipe selftest``) covers it — i.e. how many
of its bundled miniature's records the key answers.  The answer key knows the bundled items only; a real
benchmark file is never in it.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from pydantic import BaseModel, ConfigDict


class BenchmarkListing(BaseModel):
    """One registered benchmark as ``evalpipe benchmarks`` lists it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    display_name: str
    version: str
    adapter: str
    id_rule: str
    strata: list[str]
    local_layout: str
    bundled_records: int
    answer_key_items: int

    @property
    def answer_key(self) -> str:
        if self.bundled_records == 0:
            return "no bundled miniature"
        covered = "yes" if self.answer_key_items == self.bundled_records else "partly"
        return f"{covered}: {self.answer_key_items}/{self.bundled_records} bundled items"


def listings() -> list[BenchmarkListing]:
    """Every registered benchmark, in registry order."""
    # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
    from evalpipe.benchmarks import REGISTRY
    from evalpipe.benchmarks.base import bundled_data_dir
    from evalpipe.engines.answer_key import AnswerKey

    key = AnswerKey.load(bundled_data_dir())
    out = []
    for name, spec in REGISTRY.items():
        meta = spec.meta
        folder = spec.bundled_dir()
        records = len(spec.load_local(folder, None).eval.records) if folder.exists() else 0
        adapter = name if meta.evalscope_module is None else f"{name} (registered by {meta.evalscope_module})"
        out.append(
            BenchmarkListing(
                name=name,
                display_name=meta.display_name,
                version=meta.version,
                adapter=adapter,
                id_rule=meta.id_rule or f"see evalpipe module of {name}",
                strata=list(meta.stratifications),
                local_layout=meta.local_layout or f"{meta.mirror_dir}/ (see the benchmark's module)",
                bundled_records=records,
                answer_key_items=sum(1 for it in key.items if it.benchmark == name),
            )
        )
    return out


def register(app: typer.Typer) -> None:
    @app.command("benchmarks")
    def benchmarks(
        as_json: Annotated[
            bool, typer.Option("--json", help="One JSON object per benchmark, one a line.")
        ] = False,
    ) -> None:
        """List the registered benchmarks: adapter, id rule, strata, local layout, answer-key coverage."""
        # import cost: the command's modules load when it runs (`evalpipe --help` stays instant)
        from rich.table import Table

        from evalpipe.cli.console import out

        rows = listings()
        if as_json:
            for row in rows:
                typer.echo(json.dumps({**row.model_dump(), "answer_key": row.answer_key}, ensure_ascii=False))
            return
        table = Table(title="Registered benchmarks", show_lines=True)
        for col in ("benchmark", "adapter", "id", "strata", "local copy", "answer key"):
            table.add_column(col, overflow="fold")
        for row in rows:
            table.add_row(
                f"{row.name} v{row.version}\n({row.display_name})",
                row.adapter,
                row.id_rule,
                ", ".join(row.strata) or "-",
                row.local_layout,
                row.answer_key,
            )
        out.print(table)
