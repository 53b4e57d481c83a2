#!/usr/bin/env bash
# The SGLang sign-off on the device machine, once tools/gpu/sglang/stage.sh has staged it:
#
#   bash tools/gpu/sglang/run.sh [start]   # validate, preflight, start `evalpipe run $CONFIG` (default
#                                          # configs/sglang-gpu.yaml; the DSA run: configs/sglang-gpu-dsa.yaml)
#                                          # in its own process session, wait up to WAIT_S (default 500 s)
#   bash tools/gpu/sglang/run.sh wait      # a later call: wait again (the run goes on between calls while
#                                          # the machine is warm), then collect
#
# When the run has ended, $OUT gets run.tar.gz (the run directory: every artifact, each server's log and
# verification, speed rounds; EvalScope's own caches left out), run.log (evalpipe's console) and info.txt
# (GPU, driver, versions, the stage logs).  The evalpipe run itself is resumable: after a machine loss, stage
# again and `evalpipe run … --resume` continues where it stopped.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
root="${SGL_ROOT:-/tmp/sgl}"
py="${PYTHON:-python3}"
wait_s="${WAIT_S:-500}"
config="${CONFIG:-configs/sglang-gpu.yaml}"
GPU_STEP=sglang-run
# shellcheck source=tools/gpu/common.sh
. "$repo/tools/gpu/common.sh"
# shellcheck source=tools/gpu/sglang/env.sh
. "$repo/tools/gpu/sglang/env.sh"
bin="$(dirname "$("$py" -c 'import sys; print(sys.executable)')")"
run_dir="$root/run"

info() {
  {
    echo "== $(date -u +%FT%TZ) evalpipe $(git -C "$repo" rev-parse HEAD 2>/dev/null || echo '(no git)')"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
    nvcc --version 2>&1 | tail -n 1
    "$py" -c "import sys, torch; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
    PYTHONPATH="$root/site" "$py" -c "import sglang, sgl_kernel, transformers, flashinfer; print('sglang', sglang.__version__, 'sgl_kernel', sgl_kernel.__version__, 'transformers (server)', transformers.__version__, 'flashinfer', flashinfer.__version__)" 2>&1 | tail -n 1
    "$py" -c "import evalscope, transformers, openai; print('evalscope', evalscope.__version__, 'transformers (evalpipe)', transformers.__version__, 'openai', openai.__version__)" 2>&1 | tail -n 1
    # each run stages one model and may have no JIT warm-up log: a missing file is no error (set -e)
    echo "== model"; cat "$root/smollm2-bf16/model_source.json" "$root/glm-dsa-tiny/weights_source.json" 2>/dev/null || true; echo
    echo "== the servers' DSA packages"; cat "$root/versions-dsa.txt" 2>/dev/null || true
    echo "== JIT warm-up"; tail -n 2 "$root"/jit-*.log 2>/dev/null || true
  } > "$root/info.txt" 2>&1
  keep "$root/info.txt"
}

start() {
  [[ -f "$root/three.done" || -f "$root/dsa-two.done" ]] \
    || die "not staged: run tools/gpu/sglang/stage.sh one, two, three (or dsa-one, dsa-two) first"
  info
  "$bin/evalpipe" config validate "$config"
  rm -f "$root/run.rc"
  log "starting evalpipe run $config --out $run_dir (its own session; log $root/run.log)"
  setsid bash -c "cd '$repo' && '$bin/evalpipe' run '$config' --out '$run_dir' > '$root/run.log' 2>&1; echo \$? > '$root/run.rc'" \
    < /dev/null > /dev/null 2>&1 &
  wait_run
}

wait_run() {
  local deadline=$((SECONDS + wait_s)) last=0
  while [[ ! -f "$root/run.rc" ]] && ((SECONDS < deadline)); do
    sleep 5
    if ((SECONDS - last >= 60)); then
      last=$SECONDS
      log "running: $(grep -E '^(variant|stage wall|run |serving speed)|finished|started' "$root/run.log" 2>/dev/null | tail -n 1 | cut -c1-160)"
    fi
  done
  keep "$root/run.log"
  if [[ ! -f "$root/run.rc" ]]; then
    log "still running after $wait_s s: call again at once with: bash tools/gpu/sglang/run.sh wait"
    collect
    return 0
  fi
  log "evalpipe run ended with exit $(cat "$root/run.rc")"
  collect
  tail -n 60 "$root/run.log"
}

collect() {
  [[ -d "$run_dir" ]] || return 0
  # everything; if that is over what one file may bring back (16 MiB), without EvalScope's own caches
  # (outcomes.jsonl, requests.jsonl and responses.jsonl.gz still hold every prompt, answer and score)
  tar -C "$root" -czf "$root/run.tar.gz" run
  if (($(stat -c %s "$root/run.tar.gz") > 15 * 1048576)); then
    tar -C "$root" --exclude='*/evalscope/*/predictions' --exclude='*/evalscope/*/reviews' \
      --exclude='*/datasets/*' -czf "$root/run.tar.gz" run
  fi
  keep "$root/run.tar.gz"
  log "collected $(du -h "$root/run.tar.gz" | cut -f1) into \$OUT/run.tar.gz"
}

case "${1:-start}" in
  start) start ;;
  wait) wait_run ;;
  collect) collect ;;
  *) echo "usage: bash tools/gpu/sglang/run.sh [start|wait|collect]" >&2; exit 2 ;;
esac
