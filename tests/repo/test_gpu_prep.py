"""The pieces of issue 40's GPU run that can be checked without a GPU: the external-server options of the
perf scripts (``perf/slot_scaling.py --endpoint --levels --json``, ``perf/bench_overhead.py --endpoint``,
``perf/tail_bound.py --curve-json``) against an in-process stand-in of llama.cpp's HTTP API, and
``tools/gpu/payload.py``'s source trim, requirement check and split."""

from __future__ import annotations

import importlib.util
import io
import json
import re
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str, rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


slot_scaling = _load("slot_scaling", "perf/slot_scaling.py")
tail_bound = _load("tail_bound_gpu", "perf/tail_bound.py")
bench_overhead = _load("bench_overhead", "perf/bench_overhead.py")
payload = _load("gpu_payload", "tools/gpu/payload.py")


class FakeLlama:
    """llama.cpp's /completion, /props and /v1/models as far as the scripts read them, on a thread; counts
    the requests in flight at once."""

    def __init__(self, slots: int | None, model: str = "smollm2") -> None:
        self.slots, self.model = slots, model
        self.lock = threading.Lock()
        self.in_flight = self.peak = self.completions = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _json(self, code: int, body: object) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/props" and fake.slots is not None:
                    self._json(200, {"total_slots": fake.slots})
                elif self.path == "/v1/models":
                    self._json(200, {"data": [{"id": fake.model}]})
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    fake.in_flight += 1
                    fake.peak = max(fake.peak, fake.in_flight)
                    fake.completions += 1
                time.sleep(0.08)  # a latency well above the host's own overhead, also on a loaded 2-core host
                with fake.lock:
                    fake.in_flight -= 1
                self._json(200, {"content": "x", "tokens_predicted": body["n_predict"]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        # a short poll: close() (shutdown) waits for the loop's next look, 0.5 s by default, per test
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def llama() -> Iterator[FakeLlama]:
    server = FakeLlama(slots=8)
    yield server
    server.close()


def test_levels_always_start_at_one_and_default_to_one_and_the_slots() -> None:
    assert slot_scaling.parse_levels(None, 4) == [1, 4]
    assert slot_scaling.parse_levels("64,8,2,8", 4) == [1, 2, 8, 64]
    with pytest.raises(SystemExit):
        slot_scaling.parse_levels("0,2", 4)
    with pytest.raises(SystemExit):
        slot_scaling.parse_levels("two", 4)


def test_each_level_sends_two_full_waves_and_at_least_the_minimum() -> None:
    assert slot_scaling.requests_for(1, 8) == 8  # one at a time on a GPU: two requests would be noise
    assert slot_scaling.requests_for(64, 8) == 128
    assert slot_scaling.round_order([1, 2, 4], 0) == [1, 2, 4]
    assert slot_scaling.round_order([1, 2, 4], 1) == [4, 2, 1]


def test_measure_fills_each_level_and_the_curve_is_relative_to_one_in_flight(llama: FakeLlama) -> None:
    rates = slot_scaling.measure(llama.base, [1, 4], tokens=10, rounds=2, min_requests=4)
    assert llama.peak == 4  # the 4-level filled its slots and never exceeded them
    assert llama.completions == 2 + 2 * (4 + 8)  # warm-up, then per round 4 requests at 1 and 8 at 4
    assert sorted(rates) == [1, 4] and all(len(v) == 2 for v in rates.values())
    summary = slot_scaling.summarise(rates)
    assert summary["ratio_to_one"]["1"] == pytest.approx(1.0)
    assert summary["ratio_to_one"]["4"] > 2  # the stand-in serves requests in parallel at a fixed latency
    assert slot_scaling.server_slots(llama.base) == 8


def test_slot_scaling_against_a_running_server_writes_the_curve(
    llama: FakeLlama, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "slots.json"
    argv = ["slot_scaling.py", "--endpoint", llama.base, "--levels", "1,2,8", "--tokens", "5", "--rounds", "1",
            "--min-requests", "2", "--json", str(out)]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    slot_scaling.main()  # no server is started: spawn would fail here (no xllamacpp model needed)
    record = json.loads(out.read_text())
    assert record["levels"] == [1, 2, 8] and record["server_slots"] == 8
    assert record["requests"] == {"1": 2, "2": 4, "8": 16}
    assert set(record["ratio_to_one"]) == {"1", "2", "8"}
    curve = tail_bound.curve_from_levels({int(k): v for k, v in record["ratio_to_one"].items()}, 4)
    assert len(curve) == 4 and curve[0] == pytest.approx(1.0)


def test_slot_scaling_refuses_a_server_with_fewer_slots_than_its_largest_level(
    llama: FakeLlama, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["slot_scaling.py", "--endpoint", llama.base, "--levels", "1,16"])
    with pytest.raises(SystemExit, match="8 slots, fewer than the level 16"):
        slot_scaling.main()
    assert llama.completions == 0


def test_the_measured_curve_interpolates_between_levels_and_stays_flat_past_the_last() -> None:
    measured = {1: 1.0, 2: 1.9, 4: 3.5, 8: 6.0}
    curve = tail_bound.curve_from_levels(measured, 10)
    assert curve[:4] == pytest.approx([1.0, 1.9, 2.7, 3.5])
    assert curve[5] == pytest.approx(3.5 + 2 / 4 * 2.5)  # k = 6, halfway between 4 and 8
    assert curve[7:] == pytest.approx([6.0, 6.0, 6.0])  # no gain is extrapolated past the largest level
    with pytest.raises(SystemExit):
        tail_bound.curve_from_levels({2: 1.5}, 4)


def test_bench_overhead_checks_the_endpoint_it_is_given(llama: FakeLlama) -> None:
    bench_overhead.check_endpoint(llama.base, 4)  # smollm2, 8 slots
    with pytest.raises(SystemExit, match="8 slots, fewer than the workload's concurrency 16"):
        bench_overhead.check_endpoint(llama.base, 16)
    other = FakeLlama(slots=None, model="qwen")
    try:
        with pytest.raises(SystemExit, match="not smollm2"):
            bench_overhead.check_endpoint(other.base, 2)
        other.model = "smollm2"
        bench_overhead.check_endpoint(other.base, 64)  # no /props: the slots are the caller's word
    finally:
        other.close()


def test_bench_overhead_unsandboxed_is_a_written_decision_the_config_accepts(tmp_path: Path) -> None:
    """On the device image (no bubblewrap, user namespaces refusing the sandbox's mounts) ``--unsandboxed``
    writes the config's own opt-out, which validates; without it the config keeps the default sandbox."""
    from evalpipe.config.loader import load_config

    load = bench_overhead.WORKLOADS["tails"]
    names = list(bench_overhead.BENCHES)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    plain = load_config(bench_overhead.write_config(tmp_path / "a", 1, load, "pipelined", names))
    opted = load_config(bench_overhead.write_config(tmp_path / "b", 1, load, "pipelined", names, True))
    assert (opted.code_execution.sandbox, opted.code_execution.allow_unsandboxed) == ("none", True)
    assert plain.code_execution.sandbox != "none"


def test_the_tokenizer_travels_in_call_two_and_call_two_makes_room_for_it() -> None:
    mib = 1024 * 1024
    roomy = payload.split_point(tree=4 * mib, fixed_call1=22 * mib, model_size=89 * mib)
    tight = payload.split_point(tree=4 * mib, fixed_call1=22 * mib, model_size=89 * mib, fixed_call2=2 * mib)
    assert roomy == tight  # call 1 still takes all it can; call 2's room only shrinks
    with pytest.raises(SystemExit, match="does not fit two calls"):
        payload.split_point(tree=4 * mib, fixed_call1=22 * mib, model_size=89 * mib, fixed_call2=30 * mib)
    setup = (ROOT / "tools/gpu/setup.sh").read_text(encoding="utf-8")
    assert "tokenizer.tar.xz" in setup and "cache_root" in setup


@pytest.mark.parametrize(
    ("rel", "kept"),
    [
        ("CMakeLists.txt", True),
        ("ggml/src/ggml-cuda/fattn.cu", True),
        ("ggml/src/ggml-cpu/ggml-cpu.c", True),
        ("tools/server/server.cpp", True),
        ("tools/mtmd/mtmd.cpp", True),
        ("tools/ui/ui.cpp.in", True),
        ("tools/ui/CMakeLists.txt", True),
        ("vendor/cpp-httplib/httplib.h", True),
        ("scripts/ui-assets.cmake", True),
        ("models/ggml-vocab-gemma-4.gguf", False),
        ("docs/ops/CUDA.csv", False),
        ("ggml/src/ggml-vulkan/ggml-vulkan.cpp", False),
        ("tools/ui/src/app.ts", False),
        ("tools/server/tests/unit/test_basic.py", False),
        (".git", False),
    ],
)
def test_the_llamacpp_trim_keeps_what_the_server_build_reads(rel: str, kept: bool) -> None:
    assert payload.keep_source(rel) is kept


def _listed(carried: dict[str, set[str]], waived: set[str]) -> object:
    return payload.WheelList({k: frozenset(v) for k, v in carried.items()}, frozenset(waived))


def test_the_requirement_check_follows_markers_extras_and_waivers() -> None:
    wheels = {
        "evalscope": [Requirement("modelscope[datasets]>=1.34"), Requirement("numpy"),
                      Requirement("nltk>=3.9; extra == 'ifeval'"), Requirement("torch; extra == 'rag'")],
        "modelscope": [Requirement("oss2; extra == 'datasets'"), Requirement("addict; extra == 'datasets'"),
                       Requirement("colorama; sys_platform == 'win32'")],
        "nltk": [],
    }  # fmt: skip
    listed = _listed({"evalscope": {"ifeval"}, "modelscope": set(), "nltk": set()}, {"oss2"})
    # numpy is on the image; torch only in an extra not asked for; colorama only on Windows; oss2 is waived;
    # addict comes through evalscope's modelscope[datasets] and is none of those
    problems = payload.unmet(wheels, listed, {"numpy"})
    assert problems == [
        'modelscope requires addict; extra == "datasets": not carried, not on the image, not waived'
    ]
    assert payload.unmet({"nltk": []}, _listed({"nltk": set(), "gguf": set()}, set()), set()) == [
        "gguf: pinned in wheels.txt, no wheel in .whl/"
    ]


def test_the_shipped_wheel_list_pins_every_line_and_waives_only_names() -> None:
    listed = payload.read_wheel_list(ROOT / "tools" / "gpu" / "wheels.txt")
    assert "evalscope" in listed.carried and listed.carried["evalscope"] == {"ifeval", "perf"}
    assert not set(listed.carried) & listed.waived
    device = payload.read_names(ROOT / "tools" / "gpu" / "device-packages.txt")
    assert not set(listed.carried) & device  # a second version of an image package could stop the install
    for raw in (ROOT / "tools" / "gpu" / "wheels.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("!"):
            assert "==" in line.split()[0], line


def test_two_calls_split_the_model_and_refuse_what_cannot_fit() -> None:
    mib = payload.MIB
    cut = payload.split_point(tree=4 * mib, fixed_call1=22 * mib, model_size=89 * mib)
    assert cut == payload.LIMIT - payload.MARGIN - 26 * mib
    assert 89 * mib - cut <= payload.LIMIT - payload.MARGIN - 4 * mib  # the rest fits call 2
    with pytest.raises(SystemExit, match="does not fit two calls"):
        payload.split_point(tree=4 * mib, fixed_call1=40 * mib, model_size=89 * mib)


def test_a_stored_wheel_has_the_same_members_and_bytes(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("pkg/__init__.py", "x = 1\n" * 100)
        z.writestr("pkg-1.0.dist-info/RECORD", "pkg/__init__.py,sha256=abc,600\n")
    src = tmp_path / "pkg-1.0-py3-none-any.whl"
    src.write_bytes(buf.getvalue())
    with zipfile.ZipFile(io.BytesIO(payload.stored(src))) as out, zipfile.ZipFile(src) as orig:
        assert out.namelist() == orig.namelist()
        assert all(i.compress_type == zipfile.ZIP_STORED for i in out.infolist())
        assert all(out.read(n) == orig.read(n) for n in orig.namelist())


# ---------------------------------------------------------------- the SGLang run's payload


def test_the_model_is_cut_over_the_room_each_sglang_call_leaves() -> None:
    mib = payload.MIB
    room = payload.LIMIT - payload.MARGIN - 5 * mib
    cuts = payload.model_cuts(5 * mib, [42 * mib, 18 * mib, 0], 89 * mib)
    assert sum(cuts) == 89 * mib and cuts[0] == room - 42 * mib and cuts[1] == room - 18 * mib
    assert all(c + f + 5 * mib <= payload.LIMIT - payload.MARGIN for c, f in zip(cuts, [42 * mib, 18 * mib, 0], strict=True))
    with pytest.raises(SystemExit, match="does not fit"):
        payload.model_cuts(5 * mib, [55 * mib, 55 * mib, 55 * mib], 89 * mib)


def test_every_sglang_wheel_is_pinned_by_version_and_sha256_once() -> None:
    lines = [
        ln for ln in (ROOT / "tools/gpu/sglang/requirements.txt").read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]  # fmt: skip
    names = [ln.split("==")[0].lower() for ln in lines]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^ ]+ --hash=sha256:[0-9a-f]{64}", ln) for ln in lines)
    assert len(names) == len(set(names)) and {"sglang", "sglang-kernel", "flashinfer-python"} <= set(names)
    assert "sglang==0.5.17 " in "\n".join(lines) + " "


def test_sglang_reaches_only_the_servers_and_their_speed_client() -> None:
    """SGLang's pins (transformers 5.12.1, openai 2.6.1) stay off evalpipe's own path: the device scripts
    never export its site tree; the config hands it to the servers, whose environment the speed client
    shares."""
    for script in ("env.sh", "stage.sh", "run.sh"):
        text = (ROOT / "tools/gpu/sglang" / script).read_text(encoding="utf-8")
        assert not re.search(r"^\s*export PYTHONPATH", text, re.MULTILINE), script
    import yaml

    cfg = yaml.safe_load((ROOT / "configs/sglang-gpu.yaml").read_text(encoding="utf-8"))
    assert cfg["server"]["env"]["PYTHONPATH"] == "/tmp/sgl/site" and cfg["speed"]["client"] == "sglang"
    # the A/A arm repeats the control on a server of its own; arms run one after the other on the one GPU
    assert not cfg.get("parallel_variants") and cfg["variants"][2]["repeat_of"] == cfg["variants"][1]["name"]
