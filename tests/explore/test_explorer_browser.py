"""explorer.html in a real headless browser (Chromium through Playwright), from ``file://``.

On the demo's paired run (``paired_demo``: the faults variant under test, the clean control, its A/A repeat):
the planted flip heads the queue, a card shows both arms' recorded answers, filters and the URL hash restore
state, the copied Markdown is the selected flips', and exported verdicts go through ``evalpipe audit
--reviews`` into summary.json and the report.  On a pair built from files with hostile answers: nothing runs,
nothing loads, the text shows as text.  One browser for the module, several checks per page load.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.browser import chromium, open_page, screenshot
from helpers.paired_demo import PairedDemo
from helpers.scored_runs import one_stratum_manifest
from helpers.text_runs import Answer, prompt_of, write_text_run

from evalpipe.artifacts import RunDir, read_jsonl, read_model
from evalpipe.artifacts.schema.compare import CompareResult
from evalpipe.artifacts.schema.outcomes import OutcomeRow, is_correct
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.cli.main import main
from evalpipe.compare import Arms, Bootstrap, PairedDesign, compare_runs
from evalpipe.explore import build_paired_explorer
from evalpipe.words.sentences import aa_sentence

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

HOSTILE = {
    "script": "<script>alert(1)</script>",
    "img": "<img src=x onerror=alert(1)>",
    "close": "</script><script>alert(2)</script>",
    "link": '<a href="javascript:alert(1)">click</a> javascript:alert(1)',
    "separators": "line\u2028separator\u2029paragraph ' & \" <b>bold</b>",
}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as b:
        yield b


def _outcomes(run: Path) -> dict[str, OutcomeRow]:
    return {f"{r.benchmark}/{r.source_id}": r for r in read_jsonl(RunDir(run).outcomes, OutcomeRow)}


def _recorded_answer(run: Path, response_id: str | None) -> str:
    """The final answer as the proxy recorded it, read here without evalpipe's reader."""
    attempt = next(
        a for a in read_jsonl(RunDir(run).requests_log) if response_id and a.get("response_id") == response_id
    )
    with gzip.open(RunDir(run).responses_log, "rt", encoding="utf-8") as fh:
        bodies = {rec["attempt_id"]: rec["body"] for rec in map(json.loads, fh)}
    return str(json.loads(bodies[attempt["attempt_id"]])["choices"][0]["message"]["content"])


def _queue(page: Page) -> list[str]:
    return [str(li.get_attribute("data-key")) for li in page.locator("#queue li").all()]


def _flip_badges(page: Page) -> list[str]:
    return [b.inner_text() for b in page.locator("#queue li .badge:first-of-type").all()]


def test_flips_first_and_a_card_shows_both_recorded_answers(
    paired_demo: PairedDemo, browser: Browser, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = paired_demo.rundir
    cmp = read_model(root.root / "compare.json", CompareResult)
    test_rows, control_rows = _outcomes(Path(cmp.run_a)), _outcomes(Path(cmp.run_b))
    regressions = [k for k in test_rows if is_correct(control_rows[k]) and not is_correct(test_rows[k])]
    improvements = [k for k in test_rows if is_correct(test_rows[k]) and not is_correct(control_rows[k])]
    assert regressions  # the demo plants one: the truncated GSM8K answer

    opened = open_page(browser, root.root / "explorer.html")
    page = opened.page
    queue = _queue(page)
    assert set(queue[: len(regressions)]) == set(regressions)
    assert set(queue[len(regressions) : len(regressions) + len(improvements)]) == set(improvements)
    assert len(queue) == len(test_rows)
    badges = _flip_badges(page)
    assert badges[: len(regressions)] == ["regression"] * len(regressions)
    # the first flip is open: both arms' answers as the proxy recorded them, the prompt's hash verified
    key = queue[0]
    assert page.url.endswith("#" + key)
    assert page.locator("#answer-0").text_content() == _recorded_answer(
        Path(cmp.run_b), control_rows[key].response_id
    )
    assert page.locator("#answer-1").text_content() == _recorded_answer(
        Path(cmp.run_a), test_rows[key].response_id
    )
    # the word diff: the unchanged and deleted words read as the control's answer, unchanged and inserted as the test's
    parts = page.eval_on_selector_all(".diff > *", "ns => ns.map(n => [n.nodeName, n.textContent])")
    for arm, drop in ((0, "INS"), (1, "DEL")):
        kept = "".join(t for name, t in parts if name != drop)
        assert kept.split() == str(page.locator(f"#answer-{arm}").text_content()).split()
    assert {name for name, _ in parts} <= {"SPAN", "DEL", "INS"} and "DEL" in {name for name, _ in parts}
    card = page.locator("#card")
    assert "hash verified" in card.inner_text()
    assert not re.search(
        r"\bnull\b|undefined|\[object ", card.inner_text()
    )  # every field drawn, none missing
    assert card.locator(".badge.bad", has_text="cut by the budget").count() == 1  # the truncated answer
    assert test_rows[key].failure_class in card.inner_text()
    # the reproduction strip's command, run as shown: this sample re-derives from the bundled datasets
    command = str(page.locator("#verify-cmd").text_content())
    assert command == f"evalpipe verify-sample {cmp.run_a} --sample {key}"
    assert main(command.split()[1:]) == 0
    assert f"sample {key}: re-derived identically (stratum " in capsys.readouterr().out
    # the statistics, collapsed above the card behind one line: the compare.json numbers, the A/A line
    page.locator("#section-stats > summary").click()
    stats = page.locator("#section-stats").inner_text()
    for block in cmp.benchmarks:
        assert block.benchmark in stats
        assert block.aa_discordant is not None and aa_sentence(block.aa_discordant) in stats
    # the retried C-Eval request (HTTP 500 once): both attempts listed, the used one marked
    retried = next(
        k for k, r in test_rows.items() if r.benchmark == "ceval" and _attempts(Path(cmp.run_a), r) > 1
    )
    page.locator(f'#queue li[data-key="{retried}"]').click()
    page.wait_for_function("k => decodeURIComponent(location.hash) === '#' + k", arg=retried)
    attempts = page.locator("table.fields ul.attempts").nth(1).inner_text()
    assert "HTTP 500" in attempts and "used" in attempts
    assert opened.dialogs == [] and opened.errors == []
    assert opened.requests == [(root.root / "explorer.html").resolve().as_uri()]
    page.locator(f'#queue li[data-key="{key}"]').click()
    png = screenshot(page, tmp_path / "explorer.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    opened.close()


def _attempts(run: Path, row: OutcomeRow) -> int:
    return sum(
        1 for a in read_jsonl(RunDir(run).requests_log) if a.get("messages_sha256") == row.prompt_sha256
    )


def test_filters_hash_keyboard_and_markdown(paired_demo: PairedDemo, browser: Browser) -> None:
    root = paired_demo.rundir
    path = root.root / "explorer.html"
    cmp = read_model(root.root / "compare.json", CompareResult)
    test_rows, control_rows = _outcomes(Path(cmp.run_a)), _outcomes(Path(cmp.run_b))
    opened = open_page(browser, path)
    page = opened.page
    everything = _queue(page)
    page.select_option("select[name=flip]", "regression")
    page.wait_for_function("() => location.hash.includes('flip=regression')")
    only = _queue(page)
    assert only and all(not is_correct(test_rows[k]) and is_correct(control_rows[k]) for k in only)
    page.select_option("select[name=flip]", "")
    page.select_option("select[name=bench]", "gsm8k")
    page.fill("input[name=q]", "^Question|Janet|roll")
    page.wait_for_function("() => location.hash.includes('q=')")
    filtered = _queue(page)
    assert filtered and all(k.startswith("gsm8k/") for k in filtered) and len(filtered) < len(everything)
    url = page.url
    # a second page opened at that URL restores the filters, the regex and the open sample
    again = open_page(browser, path, url[url.index("#") :])
    assert again.page.input_value("select[name=bench]") == "gsm8k"
    assert again.page.input_value("input[name=q]") == "^Question|Janet|roll"
    assert _queue(again.page) == filtered
    assert again.page.url == url
    again.close()
    # keyboard: j opens the next sample of the queue, k the previous one
    page.select_option("select[name=bench]", "")
    page.fill("input[name=q]", "")
    page.wait_for_function("n => document.querySelectorAll('#queue li').length === n", arg=len(everything))
    page.locator("#card h2").click()
    page.keyboard.press("j")
    page.wait_for_function("k => decodeURIComponent(location.hash).startsWith('#' + k)", arg=everything[1])
    page.keyboard.press("k")
    page.wait_for_function("k => decodeURIComponent(location.hash).startsWith('#' + k)", arg=everything[0])
    # copy the selected flips as Markdown: the regression, selected with x
    flip = everything[0]
    page.keyboard.press("x")
    page.click("#copy-md")
    page.wait_for_function("() => document.getElementById('markdown').value.length > 0")
    md = page.input_value("#markdown")
    c, t = control_rows[flip], test_rows[flip]
    assert md == (
        f"| sample | flip | {cmp.label_b} | {cmp.label_a} | verdict | note |\n"
        "|---|---|---|---|---|---|\n"
        f"| {flip} | regression | {c.failure_class}, extracted {c.extracted_answer or '—'} | "
        f"{t.failure_class}, extracted {t.extracted_answer or '—'} | — |  |\n"
    )
    assert opened.dialogs == [] and opened.errors == []
    opened.close()


def test_verdicts_export_and_go_through_audit_reviews(
    paired_demo: PairedDemo, browser: Browser, tmp_path: Path
) -> None:
    root = paired_demo.rundir
    copy = tmp_path / "run"
    shutil.copytree(root.root, copy)
    cmp = read_model(copy / "compare.json", CompareResult)
    under_test = copy / Path(cmp.run_a).name
    opened = open_page(browser, copy / "explorer.html", downloads=True)
    page = opened.page
    flip = _queue(page)[0]
    note = "truncated at the budget | <b>not</b> a kernel bug"
    page.check("input[name=verdict][value=grader_error]")
    page.fill("textarea.note", note)
    with page.expect_download() as info:
        page.click("#export")
    exported = tmp_path / "reviews.json"
    info.value.save_as(exported)
    opened.close()
    data = json.loads(exported.read_text())
    assert data["reviews"] == [
        {"benchmark": flip.split("/")[0], "source_id": flip.split("/", 1)[1], "verdict": "grader_error",
         "note": note, "flip": "regression"}
    ]  # fmt: skip
    with pytest.raises(SystemExit):  # the demo's gates fail (exit 1): the verdicts are recorded all the same
        main(["audit", str(under_test), "--reviews", str(exported)])
    summary = read_model(under_test / "summary.json", Summary)
    assert summary.reviews is not None
    assert [(r.benchmark + "/" + r.source_id, r.verdict, r.note) for r in summary.reviews.reviews] == [
        (flip, "grader_error", note)
    ]
    assert summary.reviews.counts == {"regression": 0, "grader_error": 1, "noise": 0}
    assert (under_test / "reviews.json").read_bytes() == exported.read_bytes()
    report = (under_test / "report.md").read_text()
    assert "## Reviewer verdicts" in report and "grader error" in report and "kernel bug" in report
    html = (under_test / "report.html").read_text()
    assert "&lt;b&gt;not&lt;/b&gt;" in html and '<a href="explorer.html">' in html
    assert '<a href="../explorer.html">' in html


def _hostile_pair(root: Path) -> Path:
    """A control answering plainly and a test arm answering with markup, a few samples each."""
    ids = {"gsm8k": [*HOSTILE, "long"]}
    manifest = one_stratum_manifest(7, ids)
    control = {("gsm8k", k): Answer("The answer is 42.", True, extracted="42") for k in ids["gsm8k"]}
    test = {
        ("gsm8k", k): Answer(f"The answer is {v}", False, reasoning=f"thinking {v}", extracted=v)
        for k, v in HOSTILE.items()
    }
    test[("gsm8k", "long")] = Answer("", False, reasoning="step " * 20_000 + "needle", finish_reason="length")
    write_text_run(root / "control", manifest, control, tag="c")
    write_text_run(root / "test", manifest, test, tag="t")
    result = compare_runs(PairedDesign(Arms(root / "test", root / "control", "test", "control"), bootstrap=Bootstrap(resamples=200)))
    return build_paired_explorer(result, root).path


def test_hostile_answers_show_as_text_and_nothing_runs_or_loads(browser: Browser, tmp_path: Path) -> None:
    path = _hostile_pair(tmp_path)
    raw = path.read_text()
    assert raw.count("<script") == 2  # the data block and the viewer: no planted one survives
    assert "\u2028" not in raw and "\u2029" not in raw and "alert(1)</script>" not in raw
    opened = open_page(browser, path)
    page = opened.page
    for sid, text in HOSTILE.items():
        page.evaluate("k => { location.hash = k; }", f"#gsm8k/{sid}")
        page.wait_for_function(
            "k => document.querySelector('#card h2').textContent.includes(k)", arg=f"gsm8k/{sid}"
        )
        assert page.locator("#answer-1").text_content() == f"The answer is {text}"
        assert page.locator(".trace-text").nth(1).text_content() == f"thinking {text}"
        assert page.locator("#card img, #card a, #card script, #card b").count() == 0
        assert page.locator("#card .msg pre").text_content() == prompt_of("gsm8k", sid)
    # the regex searches what the answers say, markup included
    page.fill("input[name=q]", "onerror=alert")
    page.wait_for_function("() => document.querySelectorAll('#queue li').length === 1")
    assert _queue(page) == ["gsm8k/img"]
    # a long trace cut by the budget: the badge, rendered in steps, searched
    page.fill("input[name=q]", "")
    page.evaluate("() => { location.hash = '#gsm8k/long'; }")
    page.wait_for_function("() => document.querySelector('#card h2').textContent.includes('gsm8k/long')")
    trace = page.locator(".trace").nth(1)
    assert trace.locator(".badge", has_text="cut by the budget").count() == 1
    assert len(str(trace.locator(".trace-text").text_content())) == 20_000
    page.fill("input.trace-search", "needle")
    assert "test: 1" in page.locator("#card").inner_text()
    assert trace.locator("mark").text_content() == "needle"
    page.click("#copy-md")
    assert opened.dialogs == [] and opened.errors == []
    assert opened.requests == [path.resolve().as_uri()]
    opened.close()


SGLANG_RUN = Path(__file__).resolve().parents[2] / "perf" / "results" / "sglang_h100_20261206"


def test_the_first_flip_reads_at_a_glance_on_the_committed_sglang_run(
    browser: Browser, tmp_path: Path
) -> None:
    """At 1,400 × 1,000 (``helpers.browser.VIEWPORT``) on the committed SGLang run, written with ``--out`` (nothing
    into the run): the first flipped sample — the queue's first line and its card, both arms' final answers side
    by side, control first, each side saying why it counted right or wrong — is on the first screen; the
    statistics and the length × placement grid are one collapsed line each; opened, every table fits the width
    and the grid has its legend, control first."""
    page_file = tmp_path / "explorer.html"
    assert main(["explore", str(SGLANG_RUN), "--out", str(page_file)]) == 0
    assert not (SGLANG_RUN / "explorer.html").exists()
    opened = open_page(browser, page_file)
    page = opened.page
    height, width = page.viewport_size["height"], page.viewport_size["width"]  # type: ignore[index]
    assert (width, height) == (1400, 1000)

    def box(selector: str) -> dict[str, float]:
        found = page.locator(selector).first.bounding_box()
        assert found is not None, selector
        return found

    first = page.locator("#queue li").first
    assert first.locator(".badge").first.inner_text() == "regression"
    assert box("#queue li")["y"] + box("#queue li")["height"] <= height
    assert str(first.get_attribute("data-key")) in page.locator("#card h2").inner_text()
    control, test = box("#answer-0"), box("#answer-1")
    assert control["y"] == test["y"] and control["x"] < test["x"]  # side by side, the control first
    assert control["y"] + control["height"] <= height and test["y"] + test["height"] <= height
    heads = page.locator("table.fields thead th").all_inner_texts()
    assert heads[1].startswith("control: ") and heads[2].startswith("under test: ")
    score = page.locator("table.fields tr.row-score td").all_inner_texts()
    assert score[0].startswith("counted right") and score[1].startswith("counted wrong")
    assert "budget_exhausted" in score[1]  # the reason, in the same row
    assert box("table.fields tr.row-score")["y"] + box("table.fields tr.row-score")["height"] <= height
    # the copy keeps no EvalScope predictions: the record's question as materialised stands in, said so
    question = page.locator("#card .msg.question").inner_text()
    assert "as materialised (index_map.json)" in question and "What is the special magic number?" in question
    # every section one collapsed line; opened, its tables fit the page
    sections = page.locator("details.section").all()
    assert {s.get_attribute("id") for s in sections} >= {"section-stats", "section-length"}
    for s in sections:
        assert s.get_attribute("open") is None
        assert s.locator("summary").bounding_box()["height"] < 30  # type: ignore[index]
    page.evaluate("document.querySelectorAll('details.section').forEach(d => d.open = true)")
    for table in page.locator("details.section table").all():
        edge = table.bounding_box()
        assert edge is not None and edge["x"] + edge["width"] <= width
    legend = page.locator("#section-length .legend").inner_text()
    assert legend.index("SGLang KV bf16") < legend.index("SGLang KV fp8_e4m3 (raw)")
    # a cell is marked by its net change only: ▼1 ▲1 is unmarked, a net loss red
    cells = page.eval_on_selector_all("#section-length td", "ns => ns.map(n => [n.textContent, n.className])")
    for text, cls in cells:
        lost = int(m.group(1)) if (m := re.search(r"▼(\d+)", text)) else 0
        gained = int(m.group(1)) if (m := re.search(r"▲(\d+)", text)) else 0
        want = "grid-lost" if lost > gained else "grid-gained" if gained > lost else ""
        assert cls == want, (text, cls)
    assert opened.dialogs == [] and opened.errors == []
    page.evaluate("document.querySelectorAll('details.section').forEach(d => d.open = false)")
    png = screenshot(page, tmp_path / "explorer-1400.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    opened.close()
