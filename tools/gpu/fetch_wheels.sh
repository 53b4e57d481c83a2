#!/usr/bin/env bash
# Downloads exactly the pins of tools/gpu/wheels.txt into .whl/ (ignored by git) for the device machine's
# Python (cp312, manylinux x86_64), with the device README's recipe: --no-deps (each needed requirement is
# its own line in wheels.txt), --only-binary, the manylinux tags the image accepts.  A pin marked "sdist"
# has no wheel on PyPI: a pure-Python wheel is built from its sdist here (pip wheel --no-deps).  Refuses two
# versions of one package (the device install would stop on them) and prints the total.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${PYTHON:-$repo/.venv/bin/python}"
dest="$repo/.whl"
mkdir -p "$dest"
platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
           --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
n=0
while read -r pin kind _; do
  [[ -z "$pin" || "$pin" == \#* || "$pin" == \!* ]] && continue
  spec="${pin/\[*\]/}"  # evalscope[ifeval,perf]==1.14.1 → evalscope==1.14.1 (extras matter to payload.py check)
  if [[ "$kind" == sdist ]]; then
    "$py" -m pip wheel --quiet --no-deps --no-binary :all: -w "$dest" "$spec"
  else
    "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      "${platforms[@]}" -d "$dest" "$spec"
  fi
  n=$((n + 1))
done < "$repo/tools/gpu/wheels.txt"
dups="$(ls "$dest" | sed -E 's/-[0-9][^-]*-.*\.whl$//' | tr 'A-Z-' 'a-z_' | sort | uniq -d)"
[[ -z "$dups" ]] || { echo "fetch_wheels: more than one version of: $dups (remove the stale ones from .whl/)" >&2; exit 1; }
echo "fetch_wheels: $n pins, $(ls "$dest"/*.whl | wc -l) wheels in .whl/, $(du -cb "$dest"/*.whl | tail -1 | cut -f1) bytes"
