"""``configs/sglang-gpu.yaml`` — the sign-off the GPU run makes against a live SGLang — end to end on the test
double of SGLang in the shape a live 0.5.17 answered (``FAKE_SGLANG_SHAPE=live-0.5.17``): the shipped config
with only its device paths moved here and its probe cut to one length and task.  SGLang is importable only
through ``server.env`` (as on the device, where it sits on the servers' PYTHONPATH beside the image's torch),
so the speed stage's ``python -m sglang.bench_serving`` running at all shows it got the server's environment.
Three launches, one per arm, each verified from the log's KV pool; the FP8 arm's unscaled cache is a finding;
every recorded attempt is joined to its response by the body ``rid``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_sglang.support import FAKE_SGLANG_DIR, fake_nvidia_smi

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "sglang-gpu.yaml"


@pytest.fixture(scope="module")
def gpu_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("sglang_gpu")
    cfg = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text('{"architectures": ["LlamaForCausalLM"]}', encoding="utf-8")
    probe = json.loads((REPO / "configs" / "sglang-gpu-kv-probe" / "probe.json").read_text(encoding="utf-8"))
    probe.update(tasks=["word"], lengths=[1024], items_per_cell=1)
    (root / "probe").mkdir()
    (root / "probe" / "probe.json").write_text(json.dumps(probe), encoding="utf-8")
    bin_dir = fake_nvidia_smi(root / "bin", [("NVIDIA H100 80GB HBM3", "9.0")], cuda="13.0").parent
    cfg["model"]["path"] = str(root / "model")
    cfg["model"]["chat_template"] = str(REPO / "tools" / "gpu" / "sglang" / "smollm2_chat_template.jinja")
    env = cfg["server"]["env"]
    assert env["PYTHONPATH"] == "/tmp/sgl/site"  # the device layout this test moves
    env.update(PYTHONPATH=str(FAKE_SGLANG_DIR), FAKE_SGLANG_SHAPE="live-0.5.17", PATH=f"{bin_dir}:/usr/bin:/bin")
    cfg["server"]["port"] = 0
    cfg["server"]["launch_timeout_s"] = 60
    benches = {b["name"]: b for b in cfg["benchmarks"]}
    benches["kv_probe"]["source"] = {"local": str(root / "probe")}
    benches["kv_probe"]["sampling"] = str(REPO / "samplers" / "demo" / "kv_probe.yaml")
    benches["gsm8k"]["source"] = {"local": str(REPO / "evalpipe" / "selftest" / "data" / "gsm8k")}
    benches["gsm8k"]["sampling"] = str(REPO / "samplers" / "demo" / "gsm8k.yaml")
    cfg["benchmarks"] = [benches["kv_probe"], benches["gsm8k"]]
    cfg["speed"]["workloads"][0]["prompts_per_round"] = 4
    cfg["output_root"] = str(root / "results")
    path = root / "sglang-gpu.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    evalpipe = Path(sys.executable).parent / "evalpipe"
    done = subprocess.run(
        [str(evalpipe), "run", str(path), "--out", str(root / "run")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    return root / "run", done


def test_the_shipped_config_runs_three_verified_launches(gpu_run) -> None:
    run, done = gpu_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    storage = {}
    for arm in ("kv_fp8", "kv_bf16", "kv_bf16_again"):
        v = json.loads((run / arm / "server" / "verification.json").read_text(encoding="utf-8"))
        launch = json.loads((run / arm / "server" / "launch.json").read_text(encoding="utf-8"))
        assert v["verified"] and launch["stop_method"] in ("sigterm", "exited")
        assert v["cache_state"] == {"prefix_cache": "on", "fresh_start": True}  # the A/A arm too: its own server
        assert v["served_context_tokens"] == 8186
        checked = {c["key"]: c["resolved"] for c in v["checks"]}
        assert checked["chunked_prefill_size"] == 256 and checked["attention_backend"] == "triton"
        storage[arm] = v["kv_cache"]
    assert storage["kv_fp8"]["storage_dtype"] == "float8_e4m3fn" and storage["kv_fp8"]["fp8_scales"] == "default_1.0"
    assert storage["kv_bf16"]["storage_dtype"] == storage["kv_bf16_again"]["storage_dtype"] == "bfloat16"
    summary = json.loads((run / "kv_fp8" / "summary.json").read_text(encoding="utf-8"))
    assert "fp8_kv_unscaled" in {f["code"] for f in summary["findings"]}
    control = json.loads((run / "kv_bf16" / "summary.json").read_text(encoding="utf-8"))
    assert "fp8_kv_unscaled" not in {f["code"] for f in control["findings"]}
    assert "FP8 scales 1.0 (none provided)" in (run / "kv_fp8" / "report.md").read_text(encoding="utf-8")


def test_every_attempt_joins_its_response_by_rid_and_speed_ran_with_the_server_env(gpu_run) -> None:
    run, done = gpu_run
    assert done.returncode == 0
    for arm in ("kv_fp8", "kv_bf16", "kv_bf16_again"):
        rows = [json.loads(x) for x in (run / arm / "requests.jsonl").read_text(encoding="utf-8").splitlines()]
        assert rows and all(r["response_id"] == r["attempt_id"] for r in rows)
        speed = json.loads((run / arm / "speed.json").read_text(encoding="utf-8"))
        assert speed["client"]["name"] == "sglang" and speed["client"]["version"] == "0.5.23"
        rounds = speed["workloads"][0]["rounds"]
        assert len(rounds) == 3 and all(r["completed"] == r["requested"] == 4 and not r["problems"] for r in rounds)
    compare = json.loads((run / "compare.json").read_text(encoding="utf-8"))
    assert compare["run_aa"].endswith("kv_bf16_again")
    assert (run / "speed_compare.json").is_file()
