#!/usr/bin/env bash
# Builds SGLang 0.5.17's site tree for the device machine (Python 3.12, torch 2.11.0+cu130, CUDA 13.0, no
# registry), on a machine that reaches PyPI:
#
#   bash tools/gpu/sglang/pack.sh          # → .gpu/sglang/site.tar.xz (≈ 42 MiB), then payload.py sglang-pack
#   bash tools/gpu/sglang/pack.sh dsa      # also → .gpu/sglang/dsa.tar.xz, the DSA kernels (then payload.py dsa-pack)
#
# 1. every wheel of tools/gpu/sglang/requirements.txt, checked against its sha256 (pip --require-hashes),
#    for cp312 / manylinux x86_64, no dependencies resolved (the list is complete: SGLang's own pins that the
#    image lacks; the image already has torch 2.11, triton 3.6, numpy, aiohttp, uvloop, requests, psutil,
#    pillow, safetensors, sentencepiece, huggingface_hub, jinja2, einops, cuda-bindings …);
# 2. unpacked into one site tree (pip --target: no pip needed there, the server gets it on PYTHONPATH);
# 3. trimmed of what this path never loads — FA3 / sm100 / InfLLM / FlashMLA kernels of sglang-kernel
#    (FA3's flash_ops alone is 326 MiB; the triton attention backend serves both arms), xgrammar's static
#    library (--grammar-backend none), SGLang's Rust HTTP/gRPC/multimodal cores (off unless
#    SGLANG_RUST_SERVER / --grpc-port), the diffusion package, jedi/parso, console scripts, and packages no
#    module on this path imports (cryptography, llguidance, anthropic, pycryptodomex, blobfile, tomlkit,
#    easydict) — then the big extension modules stripped of debug info (xgrammar 53 MB → 3 MB);
# 4. tar | xz -6 into .gpu/sglang/site.tar.xz.
# With `dsa`, the DSA attention path's kernels go into a second tree, .gpu/sglang/dsa.tar.xz, that the device
# unpacks over the first: sglang-kernel's FlashMLA library (flashmla_ops, the flashmla_kv / flashmla_sparse
# backends; kept aside in step 3 instead of deleted) and tools/gpu/sglang/requirements-dsa.txt — TileLang
# 0.1.11 without its ROCm Composable Kernel, TVM C++ sources and CUTLASS tools, z3-solver's libz3.so.4.15 only,
# sgl-deep-gemm 0.1.5.post1.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
py="${PYTHON:-python3}"
work="$repo/.gpu/sglang"
mode="${1:-site}"
[[ "$mode" == site || "$mode" == dsa ]] || { echo "usage: bash tools/gpu/sglang/pack.sh [dsa]" >&2; exit 2; }
mkdir -p "$work/whl"
grep -qx '/.gpu/' "$repo/.git/info/exclude" 2>/dev/null || grep -qx '/.gpu/' "$repo/.gitignore" 2>/dev/null \
  || echo '/.gpu/' >> "$repo/.git/info/exclude"
platforms=(--platform manylinux_2_34_x86_64 --platform manylinux_2_31_x86_64 --platform manylinux_2_28_x86_64
           --platform manylinux_2_27_x86_64 --platform manylinux_2_26_x86_64 --platform manylinux_2_24_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64
           --platform manylinux_2_5_x86_64)
pipx=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none
      "${platforms[@]}")
echo "[pack] downloading $(grep -c '^[a-zA-Z]' "$repo/tools/gpu/sglang/requirements.txt") pinned wheels (sha256-checked) …"
"$py" -m pip download -q "${pipx[@]}" --require-hashes -d "$work/whl" -r "$repo/tools/gpu/sglang/requirements.txt"
rm -rf "$work/site" && mkdir -p "$work/site"
"$py" -m pip install -q --no-compile --no-index "${pipx[@]}" --target "$work/site" "$work"/whl/*.whl
cd "$work/site"
before=$(du -sb . | cut -f1)
rm -rf "$work/flashmla" && mkdir -p "$work/flashmla/sgl_kernel"
mv sgl_kernel/flashmla_ops.abi3.so "$work/flashmla/sgl_kernel/"
rm -f sgl_kernel/flash_ops.abi3.so sgl_kernel/infllm_ops*.so
rm -rf sgl_kernel/sm100 xgrammar/lib xgrammar/include sglang/multimodal_gen bin
rm -f sglang/srt/server/_core*.so sglang/srt/grpc/_core*.so sglang/srt/multimodal/_core*.so
rm -rf jedi parso jedi-*.dist-info parso-*.dist-info
rm -rf cryptography* llguidance* anthropic* Cryptodome pycryptodomex-* blobfile* tomlkit* easydict*
find . -name '*.so*' -size +300k -print0 | while IFS= read -r -d '' f; do
  if file "$f" | grep -q 'with debug_info'; then strip --strip-debug "$f"; fi
done
find . -name __pycache__ -type d -prune -exec rm -rf {} +
after=$(du -sb . | cut -f1)
cd "$work"
tar -C site --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | xz -T0 -6 > site.tar.xz.tmp
mv site.tar.xz.tmp site.tar.xz
printf '[pack] site tree %.0f MiB → trimmed %.0f MiB → site.tar.xz %.1f MiB\n' \
  "$(echo "$before / 1048576" | bc -l)" "$(echo "$after / 1048576" | bc -l)" \
  "$(echo "$(stat -c %s site.tar.xz) / 1048576" | bc -l)"

[[ "$mode" == dsa ]] || exit 0
echo "[pack] the DSA kernels: $(grep -c '^[a-zA-Z]' "$repo/tools/gpu/sglang/requirements-dsa.txt") pinned wheels (sha256-checked) + flashmla_ops …"
mkdir -p "$work/whl-dsa"
"$py" -m pip download -q "${pipx[@]}" --require-hashes -d "$work/whl-dsa" -r "$repo/tools/gpu/sglang/requirements-dsa.txt"
rm -rf "$work/dsa" && mkdir -p "$work/dsa"
"$py" -m pip install -q --no-compile --no-index "${pipx[@]}" --target "$work/dsa" "$work"/whl-dsa/*.whl
cp -r "$work/flashmla/sgl_kernel" "$work/dsa/"
cd "$work/dsa"
before=$(du -sb . | cut -f1)
# an empty include directory keeps tilelang's import quiet; tvm.relax (and its frontend) stays: the JIT imports it
rm -rf tilelang/3rdparty/composable_kernel tilelang/3rdparty/tvm/src tilelang/3rdparty/cutlass/tools bin
mkdir -p tilelang/3rdparty/composable_kernel/include
rm -f z3/lib/libz3.so && rm -rf z3/include
find . -name '*.so*' -size +300k -print0 | while IFS= read -r -d '' f; do
  if file "$f" | grep -q 'with debug_info'; then strip --strip-debug "$f"; fi
done
find . -name __pycache__ -type d -prune -exec rm -rf {} +
after=$(du -sb . | cut -f1)
cd "$work"
tar -C dsa --sort=name --mtime=@0 --owner=0 --group=0 -cf - . | xz -T0 -6 > dsa.tar.xz.tmp
mv dsa.tar.xz.tmp dsa.tar.xz
printf '[pack] DSA tree %.0f MiB → trimmed %.0f MiB → dsa.tar.xz %.1f MiB\n' \
  "$(echo "$before / 1048576" | bc -l)" "$(echo "$after / 1048576" | bc -l)" \
  "$(echo "$(stat -c %s dsa.tar.xz) / 1048576" | bc -l)"
