# Shell functions the GPU scripts share (sourced by tools/gpu/setup.sh and tools/gpu/sglang/*.sh).

log() { echo "[${GPU_STEP:-gpu} $(date +%T)] $*"; }
die() { echo "${GPU_STEP:-gpu}: $*" >&2; exit 1; }
# Copy files under $OUT when the device tool set it (what comes back from the machine).
keep() { if [[ -n "${OUT:-}" ]]; then cp "$@" "$OUT/" 2>/dev/null || true; fi; }

# Each "sha256  size  name" line of a carry folder's MANIFEST must match the file beside it.
verify_manifest() {
  local dir="$1" sum size name n=0
  [[ -f "$dir/MANIFEST" ]] || die "$dir/MANIFEST missing: carry $dir (made by tools/gpu/payload.py)"
  while read -r sum size name; do
    [[ "$sum" =~ ^[0-9a-f]{64}$ ]] || continue
    [[ -f "$dir/$name" ]] || die "$dir/$name missing"
    [[ "$(stat -c %s "$dir/$name")" == "$size" ]] || die "$dir/$name: size differs from MANIFEST"
    echo "$sum  $dir/$name" | sha256sum --check --quiet - || die "$dir/$name: sha256 differs from MANIFEST"
    n=$((n + 1))
  done < "$dir/MANIFEST"
  log "$dir: $n files match MANIFEST"
}
