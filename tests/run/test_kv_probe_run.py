"""The KV-cache probe through a whole run on the answer-key server: lengths beyond the context the server
resolves in ``/server_info`` are dropped before anything is sent (one line naming them, the context and
its source; the manifest keeps every sampled entry), and ``verify-sample`` regenerates every item from the
manifest's recorded parameters, naming an item whose materialised row or recorded hash was tampered with."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from evalpipe.artifacts import read_model
from evalpipe.artifacts.schema.context_fit import ContextFit
from evalpipe.benchmarks.kv_probe import dropped_line
from evalpipe.resolve import load_run
from evalpipe.run import pipeline
from evalpipe.run.options import FreshRun
from evalpipe.run.pipeline import RunResult
from evalpipe.run.spec import RunSpec
from evalpipe.run.stages import state

REPO = Path(__file__).resolve().parents[2]
SPEC = {"seed": 11, "tasks": ["word", "two_digit"], "lengths": [256, 512, 1024], "depths": [0.1, 0.9]}
CONTEXT = 700  # 256 + the 256-token reserve fits; 512 and 1024 do not

CONFIG = """
schema_version: 1
name: kv-probe-served-context
model: {{path: answer-key, served_name: answer-key}}
server:
  kind: answer_key
  host: 127.0.0.1
  port: 0
  launch_timeout_s: 60
  stop_timeout_s: 10
  answer_key: {{mode: positive, data_dir: {data}, context_length: {context}}}
generation: {{temperature: 0.0, seed: 1, concurrency: 4, request_timeout_s: 30, default_max_tokens: 64}}
sampling_seed: 3
benchmarks:
  - name: kv_probe
    few_shot: 0
    sampling: {sampler}
    source: {{local: {data}/kv_probe}}
"""


def _config(root: Path, context: int) -> Path:
    (root / "data" / "kv_probe").mkdir(parents=True, exist_ok=True)
    (root / "data" / "kv_probe" / "probe.json").write_text(json.dumps(SPEC), encoding="utf-8")
    path = root / "run.yaml"
    sampler = REPO / "samplers" / "demo" / "kv_probe.yaml"
    path.write_text(CONFIG.format(data=root / "data", context=context, sampler=sampler), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunResult, list[str]]:
    root = tmp_path_factory.mktemp("kvrun")
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    handler = Keep(level=logging.INFO)
    log = logging.getLogger(state.__name__)  # where a stage's notice goes without a progress display
    old_level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        result = pipeline.run(RunSpec(load_run(_config(root, CONTEXT)), FreshRun(out=root / "run")))
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
    return result, lines


def test_lengths_beyond_the_served_context_are_dropped_before_sending(capped) -> None:
    result, lines = capped
    line = dropped_line([512, 1024], CONTEXT, 256, "context_length from /server_info")
    assert line in lines  # the run log's one line
    fit = read_model(result.rundir.context_fit, ContextFit)
    assert (fit.served_context_length, fit.served_context_source) == (
        CONTEXT,
        "context_length from /server_info",
    )
    assert fit.served_drops == [line]
    # the manifest keeps every sampled entry; only the 256-token items were materialised and sent
    lengths = {e.generated.length for e in result.manifest.entries if e.generated is not None}
    assert lengths == {256, 512, 1024}
    sent = {e.source_id.split("-")[1] for e in result.index_map.entries}
    assert sent == {"256"}
    requests = result.rundir.requests_log.read_text(encoding="utf-8")
    assert all(f"-{n}-" not in requests for n in (512, 1024)) and requests.count("\n") == len(
        result.index_map.entries
    )
    # the dropped entries are consented drops: scored context_overflow with the line, a warning not an error
    rows = {r.source_id: r for r in result.outcomes}
    dropped = [r for sid, r in rows.items() if sid.split("-")[1] != "256"]
    assert dropped and {(r.failure_class, r.failure_detail) for r in dropped} == {
        ("context_overflow", f"{line}: dropped, not sent")
    }
    kept = [r for sid, r in rows.items() if sid.split("-")[1] == "256"]
    assert {(r.failure_class, r.score) for r in kept} == {("ok", 1.0)}
    assert result.summary is not None and result.summary.verdict == "pass"


def test_a_server_without_a_context_drops_nothing() -> None:
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.run.context_fit import cap_to_served_context

    empty = Manifest(seed=0, benchmarks=[], entries=[])
    assert cap_to_served_context(_empty_fit(), empty, {}, {"version": "x"}, lambda _: 64, {}) is None
    assert cap_to_served_context(_empty_fit(), empty, {}, None, lambda _: 64, {}) is None


def _empty_fit() -> ContextFit:
    return ContextFit(
        context_length=None,
        context_length_source="unknown",
        estimator="heuristic",
        estimator_detail="",
        template_margin_tokens=0,
        benchmarks=[],
        overlong=[],
    )


# ---------------------------------------------------------------- verify-sample regenerates every item


@pytest.fixture
def copy_of_run(capped, tmp_path: Path) -> Path:
    result, _ = capped
    # the copy points at the same probe folder (run.json's dataset location): only the run's files change
    return Path(shutil.copytree(result.rundir.root, tmp_path / "run"))


def test_verify_regenerates_every_item_from_its_recorded_parameters(copy_of_run: Path) -> None:
    from evalpipe.samplers import verify_sample

    result = verify_sample(copy_of_run)
    assert result.identical, result.differences
    assert all(e.generated is not None for e in result.manifest.entries)


def _flip_one_byte(path: Path, index: int, old: bytes, new: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new, 1)
    path.write_bytes(b"\n".join(lines))


def test_a_tampered_materialised_row_is_named(copy_of_run: Path) -> None:
    from evalpipe.artifacts.schema.evalscope import IndexMap
    from evalpipe.samplers import verify_sample

    index_map = read_model(copy_of_run / "index_map.json", IndexMap)
    entry = index_map.entries[1]
    path = copy_of_run / "datasets" / "kv_probe" / entry.subset / "test.jsonl"
    _flip_one_byte(path, entry.index, b"The ", b"Tha ")  # one byte of the context
    result = verify_sample(copy_of_run)
    assert not result.identical
    assert result.differences == [
        f"kv_probe {entry.source_id}: materialised row datasets/kv_probe/{entry.subset}/test.jsonl:"
        f"{entry.index + 1} differs from the regenerated item"
    ]


def test_a_tampered_manifest_hash_is_named(copy_of_run: Path) -> None:
    from evalpipe.samplers import verify_sample

    manifest = copy_of_run / "manifest.json"
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    entry = raw["entries"][2]
    good = entry["record_sha256"]
    entry["record_sha256"] = ("0" if good[0] != "0" else "1") + good[1:]  # one byte of the recorded hash
    manifest.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    result = verify_sample(copy_of_run)
    assert not result.identical
    named = [d for d in result.differences if d.startswith(f"kv_probe {entry['source_id']}: ")]
    assert (
        f"kv_probe {entry['source_id']}: regenerated from its recorded parameters, sha256 {good} != the "
        f"manifest's {entry['record_sha256']}" in named
    )
    assert all(entry["source_id"] in d for d in result.differences if "manifest content" not in d)


def test_the_explorer_highlights_each_items_evidence_where_it_sits(capped) -> None:
    """The run's explorer: every sent probe item's prompt marks its evidence sentences (drawn again from the
    item's seed and id), at the place the generator put them."""
    import base64
    import gzip
    import re

    from evalpipe.artifacts.schema.explorer import ExplorerData, SampleCard
    from evalpipe.artifacts.schema.manifest import Manifest
    from evalpipe.benchmarks import benchmark
    from evalpipe.explore import build_run_explorer

    result, _ = capped
    run = result.rundir.root
    html = build_run_explorer(run).path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    assert m is not None
    data = ExplorerData.model_validate_json(m.group(1))
    entries = {e.source_id: e for e in read_model(run / "manifest.json", Manifest).entries}
    marked = 0
    for sample in data.samples:
        card = SampleCard.model_validate_json(gzip.decompress(base64.b64decode(sample.card)))
        user = [x for x in card.prompt if x.role == "user"]
        if not user:
            continue  # dropped before sending: no prompt recorded
        entry = entries[sample.source_id]
        assert entry.generated is not None
        needles = benchmark("kv_probe").evidence(entry.generated, entry.source_id)
        shown = [user[-1].content[s.start : s.end] for s in user[-1].evidence]
        assert needles and shown and set(shown) <= set(needles), (sample.source_id, shown, needles)
        marked += 1
    assert marked == 4  # the 256-token items that were sent (2 tasks x 2 depths)


def test_a_long_prompt_keeps_head_tail_and_a_window_around_each_evidence() -> None:
    from evalpipe.explore.collect import EVIDENCE_WINDOW, evidence_cut

    filler = "".join(f"w{i:05d} " for i in range(3000))  # 21 000 characters
    needle = "The special magic word is lantern."
    text = filler[:9000] + needle + filler[9000:]
    shown, cut, spans = evidence_cut(text, 1000, [needle])
    assert cut is not None and cut.evidence_windows == 1 and cut.chars == len(text)
    assert [shown[s.start : s.end] for s in spans] == [needle]
    assert shown.startswith(text[:1000]) and shown.endswith(text[-1000:])
    assert text[9000 - EVIDENCE_WINDOW : 9000 + len(needle) + EVIDENCE_WINDOW] in shown
    assert shown.count("characters not kept in this page") == 2
    whole, none, spans = evidence_cut(text, None, [needle])  # a flagged card: whole, still marked
    assert whole == text and none is None and [whole[s.start : s.end] for s in spans] == [needle]
    short, none, spans = evidence_cut("no evidence here", 1000, [needle])
    assert short == "no evidence here" and none is None and spans == []


def test_the_evidence_is_marked_in_a_real_browser(capped) -> None:
    """The explorer draws each evidence span as a <mark>, its text the evidence sentence, and runs nothing."""
    from helpers.browser import chromium, open_page

    from evalpipe.explore import build_run_explorer

    result, _ = capped
    path = build_run_explorer(result.rundir.root).path
    with chromium() as browser:
        opened = open_page(browser, path)
        page = opened.page
        marks: list[str] = []
        for li in page.locator("#queue li").all():
            li.click()
            marks = [m.text_content() or "" for m in page.locator("mark.evidence").all()]
            if marks:
                break
        assert marks and all(
            m.startswith(("The special magic", "One of the special magic")) for m in marks
        ), marks
        assert not opened.errors and not opened.dialogs
        opened.close()


def test_the_report_shows_each_length_by_evidence_placement(capped) -> None:
    """summary.json carries the probe's correct / n per (length, placement) — every manifest entry in its cell,
    a dropped one counted wrong — and report.md/.html show the grid."""
    from evalpipe.artifacts.schema.summary import Summary

    result, _ = capped
    run = result.rundir.root
    summary = read_model(run / "summary.json", Summary)
    (probe,) = [b for b in summary.benchmarks if b.benchmark == "kv_probe"]
    cells = {(c.length, c.placement): (c.correct, c.n) for c in probe.by_placement}
    assert set(cells) == {(n, p) for n in (256, 512, 1024) for p in ("d10", "d90")}
    assert all(cells[(256, p)] == (2, 2) for p in ("d10", "d90"))  # the answer key answers what was sent
    assert all(cells[(n, p)] == (0, 2) for n in (512, 1024) for p in ("d10", "d90"))  # dropped: counted wrong
    for name in ("report.md", "report.html"):
        assert "by context length and evidence placement" in (run / name).read_text(encoding="utf-8")


def test_hostile_text_inside_an_evidence_mark_shows_as_text(capped, tmp_path: Path) -> None:
    """The evidence path of the explorer (``withEvidence``) draws a marked span as text: a prompt whose marked
    evidence is an HTML payload shows it literally, runs nothing and loads nothing."""
    import base64
    import gzip
    import re

    from helpers.browser import chromium, open_page

    from evalpipe.artifacts.schema.explorer import ExplorerData, SampleCard, TextSpan
    from evalpipe.explore import build_run_explorer
    from evalpipe.explore.page import render_page

    result, _ = capped
    html = build_run_explorer(result.rundir.root).path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', html, re.S)
    assert m is not None
    data = ExplorerData.model_validate_json(m.group(1))
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    for sample in data.samples:
        card = SampleCard.model_validate_json(gzip.decompress(base64.b64decode(sample.card)))
        for message in card.prompt:
            if message.evidence:
                message.content = "before " + hostile + " after"
                message.evidence = [TextSpan(start=7, end=7 + len(hostile))]
        packed = gzip.compress(card.model_dump_json(exclude_none=True).encode("utf-8"), mtime=0)
        sample.card = base64.b64encode(packed).decode("ascii")
    page_path = tmp_path / "explorer.html"
    page_path.write_text(render_page(data), encoding="utf-8")
    with chromium() as browser:
        opened = open_page(browser, page_path)
        page = opened.page
        marks: list[str] = []
        for li in page.locator("#queue li").all():
            li.click()
            marks = [x.text_content() or "" for x in page.locator("mark.evidence").all()]
            if marks:
                break
        assert marks == [hostile]
        assert page.locator("mark.evidence img, mark.evidence script").count() == 0
        assert not opened.dialogs and not opened.errors
        assert not [r for r in opened.requests if not r.startswith("file://")]
        opened.close()
