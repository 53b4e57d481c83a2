"""The tiny GLM-5-class model the DSA run serves, written on the device: ``config.json`` (committed beside
this script: ``GlmMoeDsaForCausalLM``, 4 dense layers, GLM-5's attention and indexer dimensions, index_topk
2048), SmolLM2's tokenizer, and **seeded random weights** as one ``model.safetensors`` that SGLang's normal
loader reads (no ``--load-format dummy``, nothing in SGLang patched).

    python tools/gpu/sglang/dsa_model.py OUT_DIR --tokenizer TOKENIZER_DIR   # write the model directory
    python tools/gpu/sglang/dsa_model.py --list                              # the tensors, names and shapes

Why not SGLang's dummy loader: it fills every tensor, norm weights included, with U(-1e-3, 1e-3), so
attention and MLP add ~1e-5 of the residual and every answer is the same in every arm.  Here matrices are
N(0, 1/fan_in) (fan_in = the input dimension, the last axis), norm weights 1, biases 0, each tensor from its
own generator seeded by ``crc32(name) ^ SEED`` (numpy's PCG64): identical in every run, on any machine, and
independent of the order tensors are written in.  Stored as BF16 (round to nearest even).

The names are the Hugging Face checkpoint's (DeepSeek-V3.2 / GLM-5 layout), which SGLang 0.5.17's
``DeepseekV2WeightLoaderMixin.do_load_weights`` maps onto its parameters: ``q_a_proj`` + ``kv_a_proj_with_mqa``
fused into ``fused_qkv_a_proj_with_mqa``, ``indexer.wk`` + ``indexer.weights_proj`` into the BF16
``indexer.wk_weights_proj`` (CUDA), ``gate_proj`` + ``up_proj`` into ``gate_up_proj``, ``kv_b_proj`` split into
``w_kc``/``w_vc`` after loading — 71 checkpoint tensors for SGLang's 59 parameters.  Only dense layers are
written (``first_k_dense_replace`` must cover every layer): an MoE layer's experts are refused, not guessed.

Needs numpy only (the safetensors file is written directly: an 8-byte little-endian header length, the JSON
header padded to 8 bytes, the raw tensors), so the same code runs here and on the device image.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "glm-dsa-tiny" / "config.json"
SEED = 20261207
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")


def tensors(cfg: dict[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """Every checkpoint tensor of a dense GlmMoeDsa / DeepSeek-V3.2 model, in file order."""
    layers = int(cfg["num_hidden_layers"])
    if int(cfg.get("first_k_dense_replace", 0)) < layers:
        raise SystemExit(
            "dsa_model: only dense layers are written (first_k_dense_replace >= num_hidden_layers)"
        )
    if cfg.get("tie_word_embeddings"):
        raise SystemExit("dsa_model: tie_word_embeddings must be false (lm_head is its own tensor)")
    h, vocab, inter = int(cfg["hidden_size"]), int(cfg["vocab_size"]), int(cfg["intermediate_size"])
    heads, q_lora, kv_lora = (
        int(cfg["num_attention_heads"]),
        int(cfg["q_lora_rank"]),
        int(cfg["kv_lora_rank"]),
    )
    nope, rope, v_dim = int(cfg["qk_nope_head_dim"]), int(cfg["qk_rope_head_dim"]), int(cfg["v_head_dim"])
    i_heads, i_dim = int(cfg["index_n_heads"]), int(cfg["index_head_dim"])
    out: list[tuple[str, tuple[int, ...]]] = [("model.embed_tokens.weight", (vocab, h))]
    for i in range(layers):
        p = f"model.layers.{i}"
        out += [
            (f"{p}.input_layernorm.weight", (h,)),
            (f"{p}.self_attn.q_a_proj.weight", (q_lora, h)),
            (f"{p}.self_attn.q_a_layernorm.weight", (q_lora,)),
            (f"{p}.self_attn.q_b_proj.weight", (heads * (nope + rope), q_lora)),
            (f"{p}.self_attn.kv_a_proj_with_mqa.weight", (kv_lora + rope, h)),
            (f"{p}.self_attn.kv_a_layernorm.weight", (kv_lora,)),
            (f"{p}.self_attn.kv_b_proj.weight", (heads * (nope + v_dim), kv_lora)),
            (f"{p}.self_attn.o_proj.weight", (h, heads * v_dim)),
            (f"{p}.self_attn.indexer.wq_b.weight", (i_heads * i_dim, q_lora)),
            (f"{p}.self_attn.indexer.wk.weight", (i_dim, h)),
            (f"{p}.self_attn.indexer.k_norm.weight", (i_dim,)),
            (f"{p}.self_attn.indexer.k_norm.bias", (i_dim,)),
            (f"{p}.self_attn.indexer.weights_proj.weight", (i_heads, h)),
            (f"{p}.post_attention_layernorm.weight", (h,)),
            (f"{p}.mlp.gate_proj.weight", (inter, h)),
            (f"{p}.mlp.up_proj.weight", (inter, h)),
            (f"{p}.mlp.down_proj.weight", (h, inter)),
        ]
    out += [("model.norm.weight", (h,)), ("lm_head.weight", (vocab, h))]
    return out


def values(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """One tensor's values as BF16 bits (uint16): N(0, 1/fan_in) for matrices, 1 for norm weights, 0 for biases."""
    if len(shape) == 1:
        f32 = np.zeros(shape, np.float32) if name.endswith(".bias") else np.ones(shape, np.float32)
    else:
        rng = np.random.default_rng((zlib.crc32(name.encode()) ^ SEED) & 0x7FFFFFFF)
        f32 = rng.standard_normal(shape, dtype=np.float32)
        f32 *= np.float32(shape[-1] ** -0.5)
    bits = f32.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return rounded.astype("<u2")


def write(out_dir: Path, cfg: dict[str, Any]) -> dict[str, Any]:
    """``model.safetensors`` in ``out_dir``; returns what ``weights_source.json`` records."""
    specs = tensors(cfg)
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "seed": str(SEED), "init": "normal_fan_in"}}
    offset = 0
    for name, shape in specs:
        size = 2 * int(np.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header, separators=(",", ":")).encode()
    blob += b" " * (-len(blob) % 8)
    path = out_dir / "model.safetensors"
    tmp = path.with_suffix(".tmp")
    digest = hashlib.sha256()
    with open(tmp, "wb") as fh:
        for chunk in (struct.pack("<Q", len(blob)), blob):
            fh.write(chunk)
            digest.update(chunk)
        for name, shape in specs:
            data = values(name, shape).tobytes()
            fh.write(data)
            digest.update(data)
    tmp.replace(path)
    return {
        "file": path.name,
        "sha256": digest.hexdigest(),
        "bytes": path.stat().st_size,
        "tensors": len(specs),
        "parameters": sum(int(np.prod(s)) for _, s in specs),
        "seed": SEED,
        "init": "matrices N(0, 1/fan_in), fan_in = last axis; norm weights 1; biases 0; BF16 round-to-nearest-even",
        "generator": "numpy PCG64 seeded crc32(name) ^ seed per tensor (tools/gpu/sglang/dsa_model.py)",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="?", type=Path, help="the model directory to write")
    ap.add_argument(
        "--tokenizer", type=Path, help="a tokenizer directory (tokenizer.json, tokenizer_config.json)"
    )
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--list", action="store_true", help="print every tensor's name and shape, write nothing")
    ns = ap.parse_args(argv)
    cfg = json.loads(ns.config.read_text(encoding="utf-8"))
    if ns.list:
        for name, shape in tensors(cfg):
            print(name, list(shape))
        return 0
    if ns.out is None or ns.tokenizer is None:
        ap.error("OUT_DIR and --tokenizer are needed to write the model")
    missing = [f for f in TOKENIZER_FILES[:2] if not (ns.tokenizer / f).is_file()]
    if missing:
        print(f"dsa_model: {ns.tokenizer} lacks {', '.join(missing)}", file=sys.stderr)
        return 2
    ns.out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ns.config, ns.out / "config.json")
    for name in TOKENIZER_FILES:
        if (ns.tokenizer / name).is_file():
            shutil.copyfile(ns.tokenizer / name, ns.out / name)
    facts = write(ns.out, cfg)
    facts["config_sha256"] = hashlib.sha256((ns.out / "config.json").read_bytes()).hexdigest()
    facts["tokenizer"] = (
        (ns.tokenizer / "SOURCE").read_text(encoding="utf-8").strip()
        if (ns.tokenizer / "SOURCE").is_file()
        else str(ns.tokenizer)
    )
    (ns.out / "weights_source.json").write_text(json.dumps(facts, indent=1) + "\n", encoding="utf-8")
    print(
        f"dsa_model: {ns.out}: {facts['tensors']} tensors, {facts['parameters']:,} parameters, sha256 {facts['sha256']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
