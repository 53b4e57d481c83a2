"""The DSA GPU run's pieces that can be checked without a GPU: the tiny GLM-5-class model's weights
(``tools/gpu/sglang/dsa_model.py``: names, shapes, values, determinism, the safetensors format), the DSA
kernels' pins, the two staging calls' cut, and what ``configs/sglang-gpu-dsa.yaml`` asks SGLang for."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import struct
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "tests" / "fixtures" / "sglang-0.5.17-dsa-live"


def _load(name: str, rel: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / rel)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


dsa_model = _load("gpu_dsa_model", "tools/gpu/sglang/dsa_model.py")
payload = _load("gpu_payload_dsa", "tools/gpu/payload.py")
CFG = json.loads((ROOT / "tools/gpu/sglang/glm-dsa-tiny/config.json").read_text(encoding="utf-8"))


def _sglang_parameters(names: list[str]) -> set[str]:
    """The checkpoint names as SGLang 0.5.17's DeepSeek loader lands them (``deepseek_weight_loader.py``):
    q_a_proj + kv_a_proj_with_mqa → fused_qkv_a_proj_with_mqa; indexer.wk + indexer.weights_proj → the BF16
    indexer.wk_weights_proj (CUDA); gate_proj + up_proj → gate_up_proj; everything else by its own name."""
    out = set()
    for n in names:
        n = re.sub(r"\.(q_a_proj|kv_a_proj_with_mqa)\.", ".fused_qkv_a_proj_with_mqa.", n)
        n = re.sub(r"\.indexer\.(wk|weights_proj)\.", ".indexer.wk_weights_proj.", n)
        n = re.sub(r"\.mlp\.(gate_proj|up_proj)\.", ".mlp.gate_up_proj.", n)
        out.add(n)
    return out


def test_the_checkpoint_lands_on_as_many_parameters_as_the_live_server_initialized() -> None:
    """The live 0.5.17 server's own count of this model's parameters (its seeded initializer walked SGLang's
    state dict: "initialized 59 tensors") equals the checkpoint's tensors after the loader's fusions."""
    names = [n for n, _ in dsa_model.tensors(CFG)]
    live = (LIVE / "server-bf16_tilelang_scaled.log").read_text(encoding="utf-8")
    count = int(re.search(r"initialized (\d+) tensors", live).group(1))
    assert len(names) == len(set(names)) == 71
    assert len(_sglang_parameters(names)) == count == 59


def test_shapes_follow_the_config_dims() -> None:
    shapes = dict(dsa_model.tensors(CFG))
    h, heads = CFG["hidden_size"], CFG["num_attention_heads"]
    assert shapes["model.layers.0.self_attn.kv_a_proj_with_mqa.weight"] == (
        CFG["kv_lora_rank"] + CFG["qk_rope_head_dim"], h)  # fmt: skip
    assert shapes["model.layers.3.self_attn.q_b_proj.weight"] == (
        heads * (CFG["qk_nope_head_dim"] + CFG["qk_rope_head_dim"]), CFG["q_lora_rank"])  # fmt: skip
    assert shapes["model.layers.1.self_attn.indexer.wq_b.weight"] == (
        CFG["index_n_heads"] * CFG["index_head_dim"], CFG["q_lora_rank"])  # fmt: skip
    assert shapes["model.layers.2.self_attn.o_proj.weight"] == (h, heads * CFG["v_head_dim"])
    assert shapes["lm_head.weight"] == shapes["model.embed_tokens.weight"] == (CFG["vocab_size"], h)


def test_moe_layers_and_tied_embeddings_are_refused_not_guessed() -> None:
    with pytest.raises(SystemExit, match="only dense layers"):
        dsa_model.tensors({**CFG, "first_k_dense_replace": 1})
    with pytest.raises(SystemExit, match="tie_word_embeddings"):
        dsa_model.tensors({**CFG, "tie_word_embeddings": True})


def _read_safetensors(path: Path) -> tuple[dict, bytes]:
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def _bf16(bits: bytes) -> np.ndarray:
    return (np.frombuffer(bits, "<u2").astype(np.uint32) << 16).view(np.float32)


@pytest.fixture(scope="module")
def small_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    """The real script on a shrunken config (same layout, small dims), written twice."""
    root = tmp_path_factory.mktemp("dsa_model")
    cfg = {**CFG, "vocab_size": 256, "hidden_size": 64, "intermediate_size": 96, "q_lora_rank": 96,
           "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16,
           "num_attention_heads": 4, "index_n_heads": 4, "index_head_dim": 16, "num_hidden_layers": 2,
           "first_k_dense_replace": 2}  # fmt: skip
    (root / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    tok = root / "tok"
    tok.mkdir()
    (tok / "tokenizer.json").write_text("{}", encoding="utf-8")
    (tok / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    for out in ("a", "b"):
        assert (
            dsa_model.main([str(root / out), "--tokenizer", str(tok), "--config", str(root / "config.json")])
            == 0
        )
    return root / "a", root / "b", cfg


def test_the_weights_are_identical_in_every_run_and_a_valid_safetensors_file(small_model) -> None:
    a, b, cfg = small_model
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    facts = json.loads((a / "weights_source.json").read_text(encoding="utf-8"))
    header, data = _read_safetensors(a / "model.safetensors")
    meta = header.pop("__metadata__")
    assert meta["format"] == "pt" and facts["tensors"] == len(header) == 2 * 17 + 3
    assert {k: tuple(v["shape"]) for k, v in header.items()} == dict(dsa_model.tensors(cfg))
    assert all(v["dtype"] == "BF16" for v in header.values())
    ends = sorted(v["data_offsets"] for v in header.values())
    assert (
        ends[0][0] == 0
        and all(x[1] == y[0] for x, y in itertools.pairwise(ends))
        and ends[-1][1] == len(data)
    )
    (n,) = struct.unpack("<Q", (a / "model.safetensors").read_bytes()[:8])
    assert n % 8 == 0  # the tensors start 8-byte aligned, as safetensors writes them
    assert {"config.json", "tokenizer.json", "tokenizer_config.json"} <= {p.name for p in a.iterdir()}


def test_matrices_are_normal_over_fan_in_norms_one_biases_zero(small_model) -> None:
    a, _, _ = small_model
    header, data = _read_safetensors(a / "model.safetensors")
    header.pop("__metadata__")

    def values(name: str) -> np.ndarray:
        lo, hi = header[name]["data_offsets"]
        return _bf16(data[lo:hi]).reshape(header[name]["shape"])

    emb = values("model.embed_tokens.weight")
    assert abs(emb.std() - 64**-0.5) < 0.1 * 64**-0.5 and abs(emb.mean()) < 0.01
    down = values("model.layers.1.mlp.down_proj.weight")
    assert abs(down.std() - 96**-0.5) < 0.1 * 96**-0.5
    assert (values("model.layers.0.self_attn.kv_a_layernorm.weight") == 1).all()
    assert (values("model.layers.0.self_attn.indexer.k_norm.bias") == 0).all()
    # each tensor has its own generator: two matrices of one shape differ
    assert not np.array_equal(
        values("model.layers.0.mlp.gate_proj.weight"), values("model.layers.0.mlp.up_proj.weight")
    )


def test_the_dsa_kernels_are_pinned_by_version_and_sha256() -> None:
    lines = [
        ln for ln in (ROOT / "tools/gpu/sglang/requirements-dsa.txt").read_text(encoding="utf-8").splitlines()
        if ln.strip() and not ln.startswith("#")
    ]  # fmt: skip
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[^ ]+ --hash=sha256:[0-9a-f]{64}", ln) for ln in lines)
    pins = {ln.split(" ")[0] for ln in lines}
    assert pins == {"tilelang==0.1.11", "z3-solver==4.15.4.0", "sgl-deep-gemm==0.1.5.post1"}
    # what the live server's environment had (its versions.txt)
    live = (LIVE / "versions.txt").read_text(encoding="utf-8")
    for pin in pins:
        name, version = pin.split("==")
        assert f"{name} {version}" in live


def test_the_dsa_kernels_are_cut_so_both_calls_keep_the_same_room() -> None:
    mib = payload.MIB
    fixed = [42 * mib, 19 * mib]
    cuts = payload.balanced_cuts(11 * mib, fixed, 33 * mib)
    assert sum(cuts) == 33 * mib
    spare = [payload.LIMIT - 11 * mib - f - c for f, c in zip(fixed, cuts, strict=True)]
    assert abs(spare[0] - spare[1]) <= 1 and min(spare) > payload.MARGIN
    with pytest.raises(SystemExit, match="does not fit"):
        payload.balanced_cuts(11 * mib, [48 * mib, 45 * mib], 33 * mib)


def test_the_dsa_config_keeps_every_prefill_on_the_named_kernel_and_repeats_the_control_fresh() -> None:
    cfg = yaml.safe_load((ROOT / "configs/sglang-gpu-dsa.yaml").read_text(encoding="utf-8"))
    server = cfg["server"]
    assert server["kind"] == "sglang" and server["settings"]["attention_backend"] == "dsa"
    assert server["env"]["SGLANG_DSA_PREFILL_DENSE_ATTN_KV_LEN_THRESHOLD"] == "0"
    assert server["env"]["PYTHONPATH"] == "/tmp/sgl/site" and "--load-format" not in server["extra_args"]
    args = server["extra_args"]
    assert args[args.index("--page-size") + 1] == "64" and "--disable-radix-cache" in args
    arms = {v["name"]: v for v in cfg["variants"]}
    assert arms["fp8_flashmla_kv"]["overrides"] == {"kv_cache_dtype": "fp8_e4m3"}
    assert arms["tl_bf16"]["overrides"]["settings"] == {
        "dsa_prefill_backend": "tilelang",
        "dsa_decode_backend": "tilelang",
    }
    assert arms["tl_bf16_again"]["repeat_of"] == "tl_bf16" and not cfg.get("parallel_variants")
    probe = json.loads((ROOT / "configs/sglang-gpu-dsa-kv-probe/probe.json").read_text(encoding="utf-8"))
    assert probe["page_size"] == 64 and probe["sparse_top_k"] == CFG["index_topk"] == 2048
    assert min(probe["lengths"]) < 2048 < max(probe["lengths"])
    assert probe["tokenizer"] == cfg["model"]["path"]
