# evalpipe — the two set-up commands from README: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-dev

.PHONY: demo test bench lint schemas clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/evalpipe demo

test: $(STAMP)
	$(VENV)/bin/ruff check evalpipe tests benchmarks
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) benchmarks/bench_sampling.py
	$(PY) benchmarks/bench_proxy.py

lint: $(STAMP)
	$(VENV)/bin/ruff check evalpipe tests benchmarks
	$(VENV)/bin/ruff format --check evalpipe tests benchmarks

schemas: $(STAMP)
	$(PY) -c "from evalpipe.schema.published import write_all; write_all('audits')"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
