"""``configs/sglang-gpu-dsa.yaml`` — the DSA run the GPU makes against a live SGLang 0.5.17 — end to end on the
test double of SGLang in the shape the live 0.5.17 DSA server answered (``FAKE_SGLANG_SHAPE=live-0.5.17-dsa``):
the shipped config with only its device paths moved here and its probe cut to two lengths and one task.  Three
launches, one per arm, each verified from ``/server_info`` and the log: the resolved kernels, the page size SGLang
forces, the KV pool's dtype."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from fake_sglang.support import fake_nvidia_smi, fake_sglang_at

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "sglang-gpu-dsa.yaml"
MODEL_CONFIG = REPO / "tools" / "gpu" / "sglang" / "glm-dsa-tiny" / "config.json"
#: The distributions the live DSA server's environment held (its versions.txt: "name version" lines).
LIVE_VERSIONS = REPO / "tests" / "fixtures" / "sglang-0.5.17-dsa-live" / "versions.txt"


def live_distributions() -> dict[str, str]:
    rows = [ln.split() for ln in LIVE_VERSIONS.read_text(encoding="utf-8").splitlines()]
    return {r[0]: r[1] for r in rows if len(r) == 2 and r[0] not in ("python", "import")}


def server_site(root: Path) -> Path:
    """The double of SGLang claiming 0.5.17, beside the live server's kernel distributions (metadata only)."""
    site = fake_sglang_at("0.5.17", root / "site")
    for name, version in live_distributions().items():
        if name == "sglang":
            continue
        dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
        )
    return site


def dsa_config(root: Path, **env: str) -> Path:
    """The shipped config, its device paths moved under ``root``; ``env`` added to the servers'."""
    cfg = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    (root / "model").mkdir()
    (root / "model" / "config.json").write_bytes(MODEL_CONFIG.read_bytes())
    probe = json.loads(
        (REPO / "configs" / "sglang-gpu-dsa-kv-probe" / "probe.json").read_text(encoding="utf-8")
    )
    assert (
        probe["tokenizer"] == cfg["model"]["path"]
    )  # the device's model directory holds SmolLM2's tokenizer
    probe.update(tasks=["word"], lengths=[1536, 3072], items_per_cell=1, tokenizer="gguf:smollm2")
    (root / "probe").mkdir()
    (root / "probe" / "probe.json").write_text(json.dumps(probe), encoding="utf-8")
    bin_dir = fake_nvidia_smi(root / "bin", [("NVIDIA H100 80GB HBM3", "9.0")], cuda="13.0").parent
    cfg["model"]["path"] = str(root / "model")
    cfg["model"]["chat_template"] = str(REPO / "tools" / "gpu" / "sglang" / "smollm2_chat_template.jinja")
    server_env = cfg["server"]["env"]
    assert server_env["PYTHONPATH"] == "/tmp/sgl/site"  # the device layout this test moves
    server_env.update(
        PYTHONPATH=str(server_site(root)),
        FAKE_SGLANG_SHAPE="live-0.5.17-dsa",
        PATH=f"{bin_dir}:/usr/bin:/bin",
    )
    server_env.update(env)
    cfg["server"]["port"] = 0
    cfg["server"]["launch_timeout_s"] = 60
    benches = {b["name"]: b for b in cfg["benchmarks"]}
    benches["kv_probe"]["source"] = {"local": str(root / "probe")}
    benches["kv_probe"]["sampling"] = str(REPO / "samplers" / "demo" / "kv_probe.yaml")
    benches["gsm8k"]["source"] = {"local": str(REPO / "evalpipe" / "selftest" / "data" / "gsm8k")}
    benches["gsm8k"]["sampling"] = str(REPO / "samplers" / "demo" / "gsm8k.yaml")
    cfg["benchmarks"] = [benches["kv_probe"], benches["gsm8k"]]
    cfg["speed"]["workloads"][0]["prompts_per_round"] = 4
    assert cfg["numerics"]["tokenizer"] == "/tmp/sgl/glm-dsa-tiny"  # the device model directory, moved above
    cfg["numerics"].update(tokenizer="gguf:smollm2", lengths=[1024], prompts_per_cell=1)
    cfg["output_root"] = str(root / "results")
    path = root / "sglang-gpu-dsa.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def dsa_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    root = tmp_path_factory.mktemp("sglang_gpu_dsa")
    path = dsa_config(root)
    evalpipe = Path(sys.executable).parent / "evalpipe"
    done = subprocess.run(
        [str(evalpipe), "run", str(path), "--out", str(root / "run")],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=root,
    )
    return root / "run", done


def test_the_dsa_config_runs_three_verified_launches_on_the_kernels_it_names(dsa_run) -> None:
    run, done = dsa_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = {}
    for arm in ("fp8_flashmla_kv", "tl_bf16", "tl_bf16_again"):
        v = json.loads((run / arm / "server" / "verification.json").read_text(encoding="utf-8"))
        assert v["verified"], [c for c in v["checks"] if not c.get("ok", True)]
        checked = {c["key"]: c["resolved"] for c in v["checks"]}
        assert checked["page_size"] == 64 and checked["attention_backend"] == "dsa"
        assert v["cache_state"] == {"prefix_cache": "off", "fresh_start": True}
        seen[arm] = (
            v["kv_cache"]["storage_dtype"],
            v.get("dsa_prefill_backend"),
            v.get("dsa_decode_backend"),
        )
    assert seen["fp8_flashmla_kv"] == ("float8_e4m3fn", "flashmla_kv", "flashmla_kv")
    assert seen["tl_bf16"] == seen["tl_bf16_again"] == ("bfloat16", "tilelang", "tilelang")
    compare = json.loads((run / "compare.json").read_text(encoding="utf-8"))
    assert compare["run_aa"].endswith("tl_bf16_again")
    numerics = compare["numerics"]  # teacher-forced, 1k tokens: mid-page and around the 64-token page edge
    assert numerics["ask"] == "teacher_forced" and numerics["prompts"] == 4 and not numerics["missing"]
    assert sorted({p["placement"] for p in numerics["pairs"]}) == ["interior", "page+0", "page+1", "page-1"]
    assert numerics["groups"][0]["identical_aa"] == 4 and numerics["groups"][0]["identical_ab"] == 0
    # asked through the probe's own recording proxy, one /generate each, at the lengths the probe built
    probe = json.loads((run / "tl_bf16" / "numerics.json").read_text(encoding="utf-8"))
    attempts = [
        json.loads(line) for line in (run / "tl_bf16" / "numerics" / "requests.jsonl").open(encoding="utf-8")
    ]
    assert [a["path"] for a in attempts] == ["/generate"] * 4
    assert [a["attempt_id"] for a in probe["answers"]] == [a["attempt_id"] for a in attempts]
    assert all(
        a["server_prompt_tokens"] == a["prompt_tokens"] and len(a["forced"]) == 64 for a in probe["answers"]
    )
    info = json.loads((run / "tl_bf16" / "server" / "server_info.json").read_text(encoding="utf-8"))
    assert info["kv_cache_dtype"] == "bfloat16" and isinstance(info["startup_time"], dict)  # the live shape
    model = json.loads((run / "tl_bf16" / "server" / "model_info.json").read_text(encoding="utf-8"))
    assert model["model_type"] == "glm_moe_dsa" and model["architectures"] == ["GlmMoeDsaForCausalLM"]


def test_the_reports_name_the_layout_that_ran_and_the_prefill_kernels_share(dsa_run) -> None:
    """The FP8 arm ran FlashMLA-KV's scaled row — named "scaled FP8 (656 B)", never "raw" — and SGLang's
    per-tensor "scaling factors of 1.0" line is an info over it; every arm's prefills all reached the kernel
    its server named (threshold 0 in the config's server env, stated in the log)."""
    run, done = dsa_run
    assert done.returncode == 0
    fp8 = (run / "fp8_flashmla_kv" / "report.md").read_text(encoding="utf-8")
    assert "KV layout: fp8_e4m3 scaled FP8 (656 B), FlashMLA KV prefill/decode" in fp8 and " raw" not in fp8
    for arm, kernel in (
        ("fp8_flashmla_kv", "FlashMLA KV"),
        ("tl_bf16", "TileLang"),
        ("tl_bf16_again", "TileLang"),
    ):
        summary = json.loads((run / arm / "summary.json").read_text(encoding="utf-8"))
        codes = {f["code"]: f for f in summary["findings"]}
        share = codes["dsa_prefill_kernel_share"]
        n = share["message"].split(" of ")[1].split(" ")[0]
        assert share["severity"] == "info" and share["message"].startswith(
            f"{kernel} prefill on {n} of {n} prefills"
        )
        assert "fp8_kv_unscaled" not in codes
        assert (arm == "fp8_flashmla_kv") == ("fp8_kv_block_scaled" in codes)
        assert f"{kernel} prefill on {n} of {n} prefills" in (run / arm / "report.md").read_text(
            encoding="utf-8"
        )


def test_provenance_and_the_report_name_the_servers_kernel_packages(dsa_run) -> None:
    """The server's environment (its own PYTHONPATH) holds the live server's distributions: provenance.json
    records them by their distribution names — sglang-kernel, tilelang, sgl-deep-gemm — read there, not in
    evalpipe's process, and the report's header lists them."""
    run, done = dsa_run
    assert done.returncode == 0
    live = live_distributions()
    prov = json.loads((run / "tl_bf16" / "provenance.json").read_text(encoding="utf-8"))
    server = {p["name"]: p["version"] for p in prov["packages"] if p["environment"] == "server"}
    for name in ("sglang", "sglang-kernel", "tilelang", "sgl-deep-gemm", "flashinfer-python", "transformers"):
        assert server[name] == live[name], name
    assert (
        server["sgl-kernel"] is None and server["sgl-flash-mla"] is None
    )  # 0.5.17's names: neither installed
    assert {p["name"] for p in prov["packages"] if p["environment"] == "evalpipe"} >= {
        "evalpipe",
        "evalscope",
    }
    report = (run / "tl_bf16" / "report.md").read_text(encoding="utf-8")
    assert (
        f"Server packages: sglang 0.5.17, sglang-kernel {live['sglang-kernel']}, tilelang {live['tilelang']}, "
        f"sgl-deep-gemm {live['sgl-deep-gemm']}, flashinfer-python {live['flashinfer-python']}"
    ) in report
