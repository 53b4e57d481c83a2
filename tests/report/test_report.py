"""report.md / report.html: rendered from the Summary alone, with the sign-off paragraphs."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fixtures_rundir import Attempt, RunDirBuilder, Sample, clean_run, planted_faults_run

from evalpipe.artifacts import write_model
from evalpipe.artifacts.schema.sandbox import SandboxRecord, SandboxStartup
from evalpipe.artifacts.schema.summary import Summary
from evalpipe.report.html import render_html
from evalpipe.report.markdown import render_markdown
from evalpipe.report.plot import score_plot
from evalpipe.report.sections.failures import failure_paragraph
from evalpipe.report.sections.request_audit import request_paragraph
from evalpipe.run.audit import audit_run


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Summary]:
    """The planted-faults run, audited once for the module: read-only (a test that deletes copies it first)."""
    rd = planted_faults_run(tmp_path_factory.mktemp("planted") / "run").write()
    return rd.root, audit_run(rd.root)


def test_markdown_table_and_paragraphs(planted: tuple[Path, Summary]) -> None:
    root, _ = planted
    md = (root / "report.md").read_text()
    assert "| Dataset / metric | Correct / scored | Score | 95 % CI | Input TPS | Input TPS/GPU |" in md
    assert "| C-Eval / acc | 1/3 | 33.3 % | [6.1, 79.2] % |" in md
    assert "| GSM8K / acc | 3/4 | 75.0 % | [30.1, 95.4] % |" in md
    assert (
        "KV cache fp8_e4m3, attention dsa, DSA prefill tilelang, DSA decode tilelang (verified from server_info)"
        in md
    )
    assert "**Verdict: AUDIT ERROR** (exit 3)" in md
    assert "### IFEval secondary metrics" in md
    assert "| `inst_level_strict` | 5/7 |" in md
    assert "This equal-difficulty sample is not a population-weighted score" in md
    assert "No paired control ran" in md
    assert "The request seed (42) was not effective" in md


def test_failure_paragraph_from_taxonomy(planted: tuple[Path, Summary]) -> None:
    _, s = planted
    assert failure_paragraph(s) == (
        "One C-Eval response exhausted its 32768-token output budget while writing the answer, which is cut "
        "off; it counts as incorrect. "
        "1 code sample raised IndexError. 2 code samples failed their tests. "
        "1 IFEval sample could not be scored (scorer error); counted as incorrect. "
        "1 request attempt failed at the API/transport level; 1 retry followed. "
        "No sample was left without a response."
    )


def test_failure_paragraph_two_budgets_and_no_failures(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample("ceval", "c", stratum="law", score=0.0, failure_class="budget_exhausted_in_reasoning"),
        Sample(
            "live_code_bench", "l", stratum="hard", score=0.0, failure_class="budget_exhausted_in_reasoning"
        ),
        Sample(
            "live_code_bench",
            "m",
            stratum="hard",
            score=0.0,
            failure_class="code_runtime_error",
            failure_detail="IndexError",
        ),
    )
    s = audit_run(b.write().root, write=False)
    assert failure_paragraph(s) == (
        "One C-Eval and one LiveCodeBench response exhausted the respective 32768/65536-token output budgets "
        "without a final answer; both count as incorrect. 1 code sample raised IndexError. "
        "No API/transport failures."
    )


def test_request_paragraph(tmp_path: Path, planted: tuple[Path, Summary]) -> None:
    _, s = planted
    assert request_paragraph(s) == (
        "20 actual requests for 18 samples; 1 duplicate; 1 retry after ReadTimeout; 1 transport failure; "
        "no selection-rule "
        "violation found, but 1 sample(s) could not be traced to a logged response."
    )
    b = RunDirBuilder(tmp_path / "clean")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(), Attempt()]), Sample("gsm8k", "b"))
    s2 = audit_run(b.write().root, write=False)
    assert (
        request_paragraph(s2)
        == "3 actual requests for 2 samples; 1 duplicate; no retries; no correctness-based selection."
    )
    b = RunDirBuilder(tmp_path / "causes")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(status=500), Attempt(status=503), Attempt()]))
    s3 = audit_run(b.write().root, write=False)
    assert s3.requests.retry_causes == {"HTTP 500": 1, "HTTP 503": 1}
    assert request_paragraph(s3).startswith(
        "3 actual requests for 1 sample; no duplicates; 2 retries (1 after HTTP 500, 1 after HTTP 503);"
    )
    b = RunDirBuilder(tmp_path / "resent")
    b.add(Sample("gsm8k", "a", attempts=[Attempt(resent_after="IncompleteReadError")]), Sample("gsm8k", "b"))
    s4 = audit_run(b.write().root, write=False)
    assert s4.requests.hidden_resends == 1
    assert request_paragraph(s4) == (
        "2 actual requests for 2 samples; no duplicates; no retries; 1 request re-sent by the proxy on a fresh "
        "connection after a reused one failed before any answer (the server may have received each twice); "
        "no correctness-based selection."
    )
    assert s3.requests.hidden_resends == 0


def test_html_has_same_content_and_a_valid_svg_plot(planted: tuple[Path, Summary]) -> None:
    root, s = planted
    html = (root / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<th>Dataset / metric</th>" in html
    assert failure_paragraph(s) in html
    start, end = html.index("<svg"), html.index("</svg>") + len("</svg>")
    svg = ET.fromstring(html[start:end])
    ns = "{http://www.w3.org/2000/svg}"
    circles = svg.findall(f"{ns}circle")
    diamonds = svg.findall(f"{ns}polygon")
    assert len(circles) == 4  # one per benchmark
    assert len(diamonds) == 2  # population-weighted C-Eval and LiveCodeBench
    labels = [t.text for t in svg.findall(f"{ns}text")]
    assert "LiveCodeBench (population-weighted)" in labels


def test_plot_positions_follow_scores(tmp_path: Path) -> None:
    s = audit_run(clean_run(tmp_path / "run").write().root, write=False)
    svg = ET.fromstring(score_plot(s))
    ns = "{http://www.w3.org/2000/svg}"
    xs = [float(c.get("cx")) for c in svg.findall(f"{ns}circle")]
    scores = [b.score for b in s.benchmarks]
    # x is affine in the score: ordering and ratios are preserved
    assert sorted(range(4), key=lambda i: xs[i]) == sorted(range(4), key=lambda i: scores[i])
    assert (xs[0] - xs[3]) / (xs[2] - xs[3]) == pytest.approx(
        (scores[0] - scores[3]) / (scores[2] - scores[3])
    )


def test_renderers_only_render_the_summary(planted: tuple[Path, Summary], tmp_path: Path) -> None:
    root, s = tmp_path / "run", planted[1]
    shutil.copytree(planted[0], root)
    written_md, written_html = (root / "report.md").read_text(), (root / "report.html").read_text()
    reloaded = Summary.model_validate_json((root / "summary.json").read_text())
    for p in root.iterdir():  # nothing else in the run directory is consulted
        if p.is_file():
            p.unlink()
    assert render_markdown(reloaded) == written_md
    assert render_html(reloaded) == written_html
    assert render_markdown(reloaded) == render_markdown(s)
    assert render_html(reloaded) == render_html(s)


def test_hostile_text_is_escaped(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "<script>x|y</script>", score=0.0, failure_class="wrong"))
    root = b.write().root
    audit_run(root)
    html = (root / "report.html").read_text()
    md = (root / "report.md").read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    table_line = next(line for line in md.splitlines() if line.startswith("| GSM8K | `wrong`"))
    assert table_line.count(" | ") == 3  # the id's pipe is escaped inside the cell


def test_unverified_server_is_said_so(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"))
    b.verification = None
    root = b.write().root
    audit_run(root)
    md = (root / "report.md").read_text()
    assert "Runtime, KV layout and kernels: not verified" in md
    assert "| GSM8K / acc | 1/1 | 100.0 % | [20.7, 100.0] % | 100.0 | n/a |" in md  # no TP size → no per GPU
    assert "Whether the request seed was effective is not verified." in md


def test_failure_paragraph_mentions_truncated_answers_scored_correct(tmp_path: Path) -> None:
    b = RunDirBuilder(tmp_path / "run")
    b.add(Sample("gsm8k", "a", score=1.0, failure_class="budget_exhausted"))
    s = audit_run(b.write().root, write=False)
    assert failure_paragraph(s) == (
        "One GSM8K response exhausted its 16384-token output budget while writing the answer, which is cut "
        "off; it counts as incorrect (EvalScope scored 1 of the truncated answers correct). "
        "No API/transport failures."
    )


def test_provenance_lists_component_tests_and_fingerprints(tmp_path: Path) -> None:
    from evalpipe.artifacts.schema.provenance import ComponentTestResult

    b = RunDirBuilder(tmp_path / "run").add(Sample("gsm8k", "a"))
    assert b.provenance is not None
    b.provenance.component_tests = [
        ComponentTestResult(
            name="tilelang_kernels", command=["pytest", "x.py"], exit_code=1, passed=7, failed=2
        )
    ]
    root = b.write().root
    s = audit_run(root)
    md = (root / "report.md").read_text()
    assert "- Component test `tilelang_kernels`: exit 1; 7 passed, 2 failed, 0 errors, 0 skipped." in md
    assert f"gsm8k dataset fingerprint `{s.sampling.benchmarks[0].dataset_fingerprint}`" in md
    assert "GPUs: 8× NVIDIA H200; CUDA 12.8; host gpu-node-1." in md


def test_code_execution_policy_and_rechecks_in_summary_and_report(tmp_path: Path) -> None:
    review = {
        "mode": "evalscope_review",
        "per_test_limit_s": 6.0,
        "limit_clock": "wall_from_interpreter_spawn",
    }
    recheck = {
        "mode": "isolated_recheck", "per_test_limit_s": 6.0, "limit_clock": "cpu_from_program_start",
        "wall_backstop_s": 30.0, "review_class": "code_timeout", "results": [-4], "attempts": 1,
    }  # fmt: skip
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample("live_code_bench", "p1", code_execution=review),
        Sample(
            "live_code_bench",
            "p2",
            score=0.0,
            failure_class="code_runtime_error",
            failure_detail="IndexError",
            code_execution=recheck,
        ),
        Sample("live_code_bench", "p3", code_execution={**recheck, "results": [True]}),
        Sample("gsm8k", "g1"),
    )
    s = audit_run(b.write().root, write=False)
    live_code_bench = next(x for x in s.benchmarks if x.benchmark == "live_code_bench")
    c = live_code_bench.code_execution
    assert (c.executed, c.rechecked, c.changed_class, c.passed_on_recheck) == (3, 2, 2, 1)
    assert next(x for x in s.benchmarks if x.benchmark == "gsm8k").code_execution is None
    md = render_markdown(s)
    assert "LiveCodeBench execution: LiveCodeBench programs are run by EvalScope's review" in md
    assert "6 s of the program's CPU time from its own start" in md
    assert "In this run: 2 of 3 programs re-checked (2 classes changed, 1 passed)." in md


def _sandbox_record(kind: str) -> SandboxRecord:
    from evalpipe.config.code_execution import SandboxLimits

    return SandboxRecord(
        requested="auto" if kind != "none" else "none",
        sandbox=kind,  # type: ignore[arg-type]
        version="bubblewrap 0.8.0" if kind == "bwrap" else "no sandbox",
        process_limit="cgroup",
        allow_unsandboxed=kind == "none",
        allow_unlimited_processes=False,
        limits=SandboxLimits(),
        startup=SandboxStartup(rounds=5, bare_ms=60.0, sandboxed_ms=125.0, added_ms=65.0, load_1min=1.0),
        benchmarks=["live_code_bench"],
        resolved_at="2026-12-03T00:00:00+00:00",
    )


@pytest.mark.parametrize("kind", ["bwrap", "none"])
def test_report_says_which_sandbox_ran_the_code_and_what_it_denied(tmp_path: Path, kind: str) -> None:
    """The summary carries code_sandbox.json and, per benchmark, programs by sandbox and by denial; the
    report names the sandbox under the verdict — or, unsandboxed, says so before the verdict."""
    denied = [{"kind": "filesystem", "detail": "FileNotFoundError(2, 'No such file or directory')"}]
    review = {"mode": "evalscope_review", "per_test_limit_s": 6.0, "limit_clock": "wall_from_program_start",
              "sandbox": kind}  # fmt: skip
    b = RunDirBuilder(tmp_path / "run")
    b.add(
        Sample("live_code_bench", "p1", code_execution=review),
        Sample(
            "live_code_bench",
            "p2",
            score=0.0,
            failure_class="code_runtime_error",
            failure_detail="FileNotFoundError; denied by the sandbox: filesystem",
            code_execution={**review, "denied": denied if kind != "none" else []},
        ),
    )
    rd = b.write()
    write_model(rd.code_sandbox, _sandbox_record(kind))
    s = audit_run(rd.root, write=False)
    assert s.code_sandbox is not None and s.code_sandbox.sandbox == kind
    c = next(x for x in s.benchmarks if x.benchmark == "live_code_bench").code_execution
    assert c.sandboxes == {kind: 2}
    assert c.denied == ({"filesystem": 1} if kind != "none" else {})
    md = render_markdown(s)
    verdict_at = md.index("**Verdict:")
    assert f"LiveCodeBench programs run in the run's sandbox ({kind})" in md
    if kind == "bwrap":
        assert "Programs ran 2 in bwrap; the sandbox denied (programs): filesystem 1." in md
        assert md.index("Model-written code ran in bwrap (bubblewrap 0.8.0): no network") > verdict_at
        assert "UNSANDBOXED" not in md
    else:
        assert (
            md.index("**Model-written code ran UNSANDBOXED on this host (code_execution.sandbox: none")
            < verdict_at
        )
        assert "Programs ran 2 in none." in md
