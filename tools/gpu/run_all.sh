#!/usr/bin/env bash
# The measurements of issue 40 (items 2-4) on the device machine, after tools/gpu/setup.sh stage1 and stage2:
#
#   info      device, driver, CUDA, llama.cpp build, evalpipe commit            → $OUT/summary.txt
#   slots     perf/slot_scaling.py: tokens/s at 1..64 in flight on one llama-server with 64 slots
#                                                                               → $OUT/slots.json
#   overhead  perf/bench_overhead.py against bare EvalScope, interleaved rounds, each on its own llama-server
#             with the workload's slots: tails pipelined (issue 23's goal < 0.85), tails sequential, tails
#             pipelined without LiveCodeBench (both sides doing the same work), short sequential (<= 1.02)
#   bound     perf/tail_bound.py on the tails run's answer lengths with the measured curve (and linear)
#   demo      evalpipe run configs/demo-model-gpu.yaml: KV q4_0 vs f16 vs f16 again, plus q8_0, with the
#             speed stage, through evalpipe's launcher running the CUDA llama-server (/server_info verifies
#             each variant's KV cache types and offload from llama.cpp's log)            → $OUT/demo-run.tar.gz
#
#   bash tools/gpu/run_all.sh [--dry-run] [--only STEP,STEP…]
#
# All five steps likely outlast one call's 10 minutes (an estimate: slots < 1 min, overhead 5-7 min for its
# 4 × 12 runs of evalpipe or bare EvalScope, demo 2-4 min), so the README's plan splits them: call 2
# `--only info,slots,demo` after setup.sh stage2, call 3 `--only overhead,bound` at once after it.
#
# --dry-run prints every command, checks that each file it names exists and that every flag passed to a
# perf script is one its --help lists, and runs nothing.  What the steps write stays in $GPU_ROOT/work
# (kept while the machine is warm, so that a later call's steps read an earlier call's: $OUT is emptied
# before every call) and is copied to $OUT (the device tool brings back at most 8 files, 2 folders deep) as
# it is written: summary.txt (every command and its output, across calls, so a call cut at its limit still
# brings back what finished), slots.json, overhead-runs.tar.gz, demo-run.tar.gz, logs.tar.gz.  Environment: GPU_ROOT (/tmp/gpu), OUT ($GPU_ROOT/out), PYTHON (python3), LEVELS
# (1,2,4,8,16,32,64), SLOT_TOKENS (128), SLOT_ROUNDS (3), OVERHEAD_ROUNDS (5), NGL (999: every layer on the
# GPU), THREADS (llama-server's CPU threads; its default when unset).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
root="${GPU_ROOT:-/tmp/gpu}"
out="${OUT:-$root/out}"
py="${PYTHON:-python3}"
levels="${LEVELS:-1,2,4,8,16,32,64}"
slot_tokens="${SLOT_TOKENS:-128}"
slot_rounds="${SLOT_ROUNDS:-3}"
overhead_rounds="${OVERHEAD_ROUNDS:-5}"
ngl="${NGL:-999}"
server="$root/bin/llama-server"
gguf="$root/SmolLM2-135M-Instruct.Q4_1.gguf"
work="$root/work"
summary="$work/summary.txt"
curve="$work/slots.json"
dry=0
steps="info,slots,overhead,bound,demo"
one=""

while (($#)); do
  case "$1" in
    --dry-run) dry=1 ;;
    --only) steps="$2"; shift ;;
    --step) one="$2"; shift ;;  # internal: one step in its own process, so that a failing step stops only itself
    *) echo "usage: bash tools/gpu/run_all.sh [--dry-run] [--only info,slots,overhead,bound,demo]" >&2; exit 2 ;;
  esac
  shift
done
((dry)) && summary="$work/summary-dry-run.txt"  # a dry run's lines stay out of the measurements' summary
cd "$repo"
export PYTHONUNBUFFERED=1
mkdir -p "$out" "$work/logs"
problems=0

say() { echo "== $*" | tee -a "$summary"; sync_out; }
# A file the run needs: missing is an error now, or in a dry run a line saying which step will fail.
need() {
  [[ -e "$1" ]] && return 0
  if ((dry)); then echo "   MISSING (made by ${2:-tools/gpu/setup.sh}): $1"; problems=$((problems + 1)); return 0; fi
  echo "run_all: $1 missing (${2:-tools/gpu/setup.sh})" >&2; exit 1
}
# Every --flag of a perf-script command must be one its --help lists.
flags_ok() {
  local script="$1" help flag
  shift
  help="$("$py" "$script" --help 2>&1)" || { echo "   $script --help failed: $help"; problems=$((problems + 1)); return 0; }
  for flag in "$@"; do
    [[ "$flag" == --* ]] || continue
    grep -q -- "${flag%%=*}\b" <<< "$help" || { echo "   $script has no option $flag"; problems=$((problems + 1)); }
  done
}
# The summary and the curve, copied to $OUT after every command (what a call cut at its limit brings back).
sync_out() { cp "$summary" "$out/" 2> /dev/null || true; cp "$curve" "$out/" 2> /dev/null || true; }
# Run (or, dry, print and check) one command; its output goes to the summary too.
run() {
  echo "\$ $*" | tee -a "$summary"
  if [[ "$1" == "$py" && "$2" == perf/* ]]; then
    ((dry)) && flags_ok "${@:2}"
    need "$repo/$2" "the repository"
  fi
  ((dry)) && return 0
  local rc=0
  "$@" 2>&1 | tee -a "$summary" || rc=$?
  sync_out
  return "$rc"
}

pids=()
# start_llama NAME SLOTS CTX [FLAGS…]: a llama-server on loopback serving the model as smollm2, prompt reuse
# off (as perf/bench_overhead.py's own servers), verbosity 4 (the level at which its log says how many layers
# it offloaded and which KV cache types it built); sets the variable `url`.
start_llama() {
  local name="$1" slots="$2" ctx="$3" port
  shift 3
  port=$((18100 + ${#pids[@]}))
  local argv=("$server" --model "$gguf" --host 127.0.0.1 --port "$port" --alias smollm2 --n-gpu-layers "$ngl"
              --parallel "$slots" --ctx-size "$ctx" --no-cache-prompt --cache-ram 0 --verbosity 4 "$@")
  [[ -n "${THREADS:-}" ]] && argv+=(--threads "$THREADS")
  url="http://127.0.0.1:$port"
  echo "\$ ${argv[*]} > $work/logs/$name.log" | tee -a "$summary"
  need "$server"
  need "$gguf"
  if ((dry)); then
    # every flag must be one this llama-server's --help lists (checked where the binary exists)
    local help flag
    if [[ -x "$server" ]] && help="$("$server" --help 2>&1)"; then
      for flag in "${argv[@]:1}"; do
        [[ "$flag" == --* ]] || continue
        grep -q -- "$flag\b" <<< "$help" || { echo "   llama-server has no option $flag"; problems=$((problems + 1)); }
      done
    fi
    return 0
  fi
  "${argv[@]}" > "$work/logs/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 240); do
    curl -sf "$url/health" > /dev/null 2>&1 && return 0
    kill -0 "${pids[-1]}" 2> /dev/null || break
    sleep 0.5
  done
  tail -n 20 "$work/logs/$name.log"
  echo "run_all: llama-server $name did not become healthy" >&2
  exit 1
}
stop_llama() {
  ((dry)) && return 0
  local pid="${pids[-1]}"
  kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null || true
  grep -E "offloaded [0-9]+/[0-9]+ layers|CUDA0|llama_kv_cache:.*K \(" "$work/logs/$1.log" | head -n 4 | tee -a "$summary" || true
}
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null || true; done
}
trap cleanup EXIT

step_info() {
  say "info $(date -u +%FT%TZ)"
  # each fact on its own: a missing tool is a line in the summary, not the end of the step
  run nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  run nvcc --version || true
  run "$py" -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)" || true
  need "$server"
  run "$server" --version || true
  local commit
  commit="$(git -C "$repo" rev-parse HEAD 2> /dev/null || echo "${EVALPIPE_COMMIT:-unknown: no .git here, take the commit the call was made from}")"
  say "evalpipe commit $commit"
  ((dry)) || cat "$root/MANIFEST.call1" >> "$summary" 2> /dev/null || true
}

step_slots() {
  say "slots: tokens/s at $levels in flight"
  local max="${levels##*,}"
  start_llama slots "$max" $((max * 1024))
  run "$py" perf/slot_scaling.py --endpoint "$url" --levels "$levels" --tokens "$slot_tokens" \
    --rounds "$slot_rounds" --json "$curve"
  stop_llama slots
}

# The device image has no bubblewrap and its user namespaces refuse the sandbox's mounts (seen 2026-12-05:
# "auto found no working sandbox"): LiveCodeBench's programs then run unsandboxed there, a written decision
# (code_execution.sandbox: none, allow_unsandboxed: true) said in the summary; the machine is disposable,
# reaches nothing and runs SmolLM2's programs only.
sandbox_flags=()
demo_config=configs/demo-model-gpu.yaml
if ! command -v bwrap > /dev/null 2>&1 && ((!dry)); then
  sandbox_flags=(--unsandboxed)
  demo_config=configs/demo-model-gpu.unsandboxed.yaml
  { cat configs/demo-model-gpu.yaml; printf '\ncode_execution:\n  sandbox: none\n  allow_unsandboxed: true\n'; } > "$demo_config"
fi

# bench_overhead on its own server with the workload's slots and context (as its start_server would)
overhead_one() {
  local name="$1" slots="$2" ctx="$3"
  shift 3
  say "overhead $name"
  start_llama "overhead-$name" "$slots" "$ctx"
  run "$py" perf/bench_overhead.py --endpoint "$url" --rounds "$overhead_rounds" --keep "${sandbox_flags[@]}" "$@"
  stop_llama "overhead-$name"
}

step_overhead() {
  overhead_one tails-pipelined 4 16384 --workload tails --schedule pipelined
  overhead_one tails-sequential 4 16384 --workload tails --schedule sequential
  overhead_one tails-pipelined-nolcb 4 16384 --workload tails --schedule pipelined --benchmarks gsm8k,ceval,ifeval
  overhead_one short-sequential 2 8192 --workload short --schedule sequential
  ((dry)) && return 0
  # the kept run directories (bench_overhead prints where), without EvalScope's caches
  grep -o 'run directories kept in .*' "$summary" | awk '{print $NF}' > "$work/overhead-dirs.txt" || true
  tar czf "$out/overhead-runs.tar.gz" --exclude='*/hf' --exclude='*/datasets' -T "$work/overhead-dirs.txt" 2> /dev/null || true
}

step_bound() {
  say "bound: the best any schedule can do on the measured curve, the tails run's answer lengths"
  local run_dir="BENCH_OVERHEAD_TAILS_DIR/ep-0"  # the tails-pipelined run's first evalpipe round
  if ((!dry)); then
    run_dir="$(grep -o 'run directories kept in .*' "$summary" | head -n 1 | awk '{print $NF}')/ep-0" || true
    need "$run_dir/outcomes.jsonl" "step overhead"
    need "$curve" "step slots"
  fi
  run "$py" perf/tail_bound.py "$run_dir" --concurrency 4 --curve-json "$curve"
  run "$py" perf/tail_bound.py "$run_dir" --concurrency 4 --curve linear
}

step_demo() {
  say "demo: configs/demo-model-gpu.yaml (KV q4_0 vs f16 vs f16 again, plus q8_0, speed stage)"
  need "$server"
  need "$gguf"
  local demo="$work/demo" evalpipe rc=0
  evalpipe="$(dirname "$("$py" -c 'import sys; print(sys.executable)')")/evalpipe"  # beside python3 (setup.sh)
  need "$evalpipe" "tools/gpu/setup.sh stage1"
  rm -rf "$demo"
  [[ "$demo_config" == configs/demo-model-gpu.yaml ]] || say "demo: no bubblewrap here: $demo_config (LiveCodeBench unsandboxed)"
  run "$evalpipe" config validate "$demo_config"
  run "$evalpipe" run "$demo_config" --out "$demo" || rc=$?  # 1: a gate failed, still a result
  ((dry)) && return 0
  say "demo: evalpipe run exit $rc; per variant what the launcher read from llama.cpp's log:"
  local info
  for info in "$demo"/*/server/server_info.json; do
    "$py" -c 'import json, sys; i = json.load(open(sys.argv[1])); i = i.get("server_info", i)
print(sys.argv[1], {k: i.get(k) for k in ("kv_cache_dtype", "offloaded_layers", "n_parallel", "flash_attention", "version")})' \
      "$info" | tee -a "$summary"
  done
  tar czf "$out/demo-run.tar.gz" -C "$work" --exclude='*/hf' --exclude='*/datasets' demo
}

if [[ -n "$one" ]]; then
  "step_$one"
  exit 0
fi
IFS=, read -r -a chosen <<< "$steps"
for s in "${chosen[@]}"; do
  case "$s" in
    info | slots | overhead | bound | demo) ;;
    *) echo "run_all: unknown step $s (info, slots, overhead, bound, demo)" >&2; exit 2 ;;
  esac
done
if ((dry)); then
  for s in "${chosen[@]}"; do "step_$s"; done
  echo "dry run: $problems problem(s)"
  exit $((problems > 0))
fi
failed=()
for s in "${chosen[@]}"; do
  rc=0
  bash "${BASH_SOURCE[0]}" --step "$s" || rc=$?
  if ((rc)); then failed+=("$s"); say "step $s FAILED (exit $rc): the next steps run all the same"; fi
done
tar czf "$out/logs.tar.gz" -C "$root" work/logs $(cd "$root" && ls build.log smoke.log install.log 2> /dev/null) 2> /dev/null || true
say "done: $steps${failed[*]:+; failed: ${failed[*]}}"
((${#failed[@]} == 0))
