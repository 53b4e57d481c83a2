"""The one-line verdict of per-length blocks names the first length whose interval of A − B lies wholly
below zero, not the first with a negative point estimate, and says so when no length is behind."""

from __future__ import annotations

from evalpipe.artifacts.schema.compare import PairedBenchmark
from evalpipe.words.length_verdict import length_verdict


def _block(length: str, diff: float, low: float, high: float, *, paired: bool = True) -> PairedBenchmark:
    ci = (
        {"paired_ci_low": low, "paired_ci_high": high}
        if paired
        else {"diff_ci_low": low, "diff_ci_high": high}
    )
    return PairedBenchmark.model_construct(length=length, difference=diff, flips=[], n_pairs=12, **ci)


def test_first_length_whose_interval_is_below_zero() -> None:
    blocks = [
        _block("256", -0.05, -0.20, 0.10),  # lower, but within the noise
        _block("512", -0.30, -0.55, -0.05),  # behind
        _block("1024", -0.60, -0.85, -0.35),
    ]
    line = length_verdict("kv_probe", blocks)
    assert line == (
        "kv_probe: the candidate first falls behind at length 512 (-30.0 pts, Bonett–Price 95 % CI [-55.0, -5.0], "
        "0 flips, n = 12); it holds at 256"
    )


def test_the_bootstrap_interval_decides_when_there_is_no_paired_one() -> None:
    line = length_verdict("kv_probe", [_block("256", -0.4, -0.6, -0.2, paired=False)])
    assert line is not None and "first falls behind at length 256" in line
    assert line.endswith("it is behind from the shortest length")


def test_a_lower_score_within_the_noise_is_not_behind() -> None:
    line = length_verdict("kv_probe", [_block("256", 0.0, -0.1, 0.1), _block("512", -0.1, -0.3, 0.1)])
    assert line is not None and line.startswith(
        "kv_probe: no length where the candidate is significantly behind"
    )
    assert "the first with a lower score is 512" in line


def test_no_length_behind_and_no_buckets() -> None:
    assert length_verdict("kv_probe", [_block("256", 0.1, -0.05, 0.2)]) == (
        "kv_probe: the candidate is behind at no length (256)"
    )
    assert length_verdict("gsm8k", []) is None


def test_the_placement_grid_counts_each_cell_and_marks_where_the_candidate_lost() -> None:
    """``placement_grid`` groups a generated benchmark's units by (length, placement), lengths ascending and
    placements as first met, each cell the paired block's counts split by flip direction; the markdown grid
    marks the candidate's losses ▼ and gains ▲."""
    from types import SimpleNamespace

    from evalpipe.artifacts.schema.compare import PlacementCell
    from evalpipe.compare.paired import placement_grid
    from evalpipe.report.compare_markdown import placement_grid_lines

    def item(length: int, placement: str) -> SimpleNamespace:
        return SimpleNamespace(length=length, placement=placement)

    keys = [("kv_probe", f"i{n}", "s") for n in range(6)]
    generated = {
        ("kv_probe", "i0"): item(1024, "d10"),
        ("kv_probe", "i1"): item(256, "d10"),
        ("kv_probe", "i2"): item(256, "page_after"),
        ("kv_probe", "i3"): item(256, "d10"),
        ("kv_probe", "i4"): item(1024, "page_after"),
        ("kv_probe", "i5"): item(1024, "d10"),
    }
    # A wrong where B is right on i0 and i5 (1024, d10); A right where B is wrong on i2
    score = {
        "i0": (0.0, 1.0),
        "i1": (1.0, 1.0),
        "i2": (1.0, 0.0),
        "i3": (1.0, 1.0),
        "i4": (0.0, 0.0),
        "i5": (0.0, 1.0),
    }
    seen: list[str] = []

    def block_of(name: str, cell: list[tuple[str, str, str]]) -> SimpleNamespace:
        seen.append(name)
        # the block's own flip counts (its scoring rule), not the raw review scores of the flips
        return SimpleNamespace(
            n_pairs=len(cell),
            a=SimpleNamespace(correct=sum(int(score[k[1]][0]) for k in cell)),
            b=SimpleNamespace(correct=sum(int(score[k[1]][1]) for k in cell)),
            a_only=sum(1 for k in cell if score[k[1]][0] > score[k[1]][1]),
            b_only=sum(1 for k in cell if score[k[1]][0] < score[k[1]][1]),
            flips=[
                SimpleNamespace(score_a=None, score_b=None) for k in cell if score[k[1]][0] != score[k[1]][1]
            ],
        )

    grid = placement_grid(keys, generated, block_of)  # type: ignore[arg-type]
    assert seen == [
        "kv_probe 256 d10",
        "kv_probe 256 page_after",
        "kv_probe 1024 d10",
        "kv_probe 1024 page_after",
    ]
    assert grid == [
        PlacementCell(length=256, placement="d10", n_pairs=2, a_correct=2, b_correct=2, a_only=0, b_only=0),
        PlacementCell(
            length=256, placement="page_after", n_pairs=1, a_correct=1, b_correct=0, a_only=1, b_only=0
        ),
        PlacementCell(length=1024, placement="d10", n_pairs=2, a_correct=0, b_correct=2, a_only=0, b_only=2),
        PlacementCell(
            length=1024, placement="page_after", n_pairs=1, a_correct=0, b_correct=0, a_only=0, b_only=0
        ),
    ]
    lines = placement_grid_lines(SimpleNamespace(benchmark="kv_probe", by_placement=grid), "q4_0", "f16")  # type: ignore[arg-type]
    assert lines[2:6] == [
        "| Length | d10 | page_after |",
        "|---|---|---|",
        "| 256 | 2/2 of 2 | 1/0 of 1 ▲1 |",
        "| 1024 | 0/2 of 2 ▼2 | 0/0 of 1 |",
    ]
    assert placement_grid_lines(SimpleNamespace(benchmark="gsm8k", by_placement=[]), "a", "b") == []  # type: ignore[arg-type]


def test_the_explorer_stats_carry_the_placement_grid() -> None:
    """The explorer's statistics panel gets a generated block's grid as compare.json holds it (its JS draws it,
    the ▼ cells marked); other blocks carry none."""
    from evalpipe.artifacts.schema.compare import PairedBenchmark, PlacementCell
    from evalpipe.explore.build import _stats

    cell = PlacementCell(
        length=512, placement="page_before", n_pairs=2, a_correct=1, b_correct=2, a_only=0, b_only=1
    )
    fields = dict(
        benchmark="kv_probe", n_pairs=2, a_only=0, b_only=1, paired_p=None, mcnemar_p=1.0, paired_test=None,
        paired_ci_low=None, paired_ci_high=None, diff_ci_low=-0.5, diff_ci_high=0.0, mde_pts=None,
        non_inferiority=None, operating=None, aa_discordant=None, difference=-0.5, repeats=1, flips=[],
    )  # fmt: skip
    stats = _stats(PairedBenchmark.model_construct(**fields, by_placement=[cell]), "q4_0", "f16")
    assert stats.placement_grid == [cell]
    assert "placement_grid" in stats.model_dump(exclude_none=True)
    assert (
        stats.line
        == "q4_0 vs f16 (kv_probe): -50.0 pts (bootstrap 95 % [-50.0, +0.0], descriptive), McNemar p = 1, 0 flips"
    )
    plain = _stats(PairedBenchmark.model_construct(**fields, by_placement=[]), "q4_0", "f16")
    assert "placement_grid" not in plain.model_dump_json()  # written only for generated benchmarks
