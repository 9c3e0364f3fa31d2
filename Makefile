# Quickstart: `make demo` and `make test` each create .venv, install gpufleet, and run.
# `demo` installs what the product needs (`pip install -e .`); `test` and the other developer targets
# install the development extras on top (`pip install -e '.[dev]'`: pytest, ruff, mypy, Ray, pyarrow, ...).
# Each install leaves a stamp; the dev install also satisfies the product one (demo after test installs
# nothing), and the product one does not satisfy the dev one (test after demo adds the extras).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-product
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test check unit venv clean golden validate-table bench system-deps

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP) $(DEV_STAMP)

venv: $(DEV_STAMP)

demo: $(STAMP)
	$(BIN)/gpufleet scenarios run-set basic_demos --format html -o gpufleet-report.html
	$(BIN)/gpufleet scenarios run-set basic_demos
	$(BIN)/gpufleet plan examples/fleets/assessment-platform.yaml --format html -o gpufleet-plan.html
	$(BIN)/gpufleet plan examples/fleets/assessment-platform.yaml
	@echo "HTML reports written to gpufleet-report.html and gpufleet-plan.html"

check: $(DEV_STAMP)
	$(BIN)/ruff check src tests tools benchmarks
	$(BIN)/ruff format --check src tests tools benchmarks
	$(BIN)/mypy

system-deps:
	@bash tools/system-deps.sh

# the suite on every core, at most 4 workers (pytest-xdist; `$(BIN)/pytest` alone runs it in one process)
unit: $(DEV_STAMP) system-deps
	$(BIN)/pytest -n auto --maxprocesses=4

test: check unit

# Regenerate golden files used by the tests (review the diff before committing).
golden: $(DEV_STAMP)
	GPUFLEET_REGEN_GOLDEN=1 $(BIN)/pytest tests -k golden

# Regenerate the validation table quoted in the README.
validate-table: $(DEV_STAMP)
	$(BIN)/python tools/accuracy_table.py
	$(BIN)/gpufleet validate src/gpufleet/estimate/data/cases.csv --format markdown

bench: $(DEV_STAMP)
	$(BIN)/python benchmarks/bench_catalog.py
	$(BIN)/python benchmarks/bench_estimate.py
	$(BIN)/python benchmarks/bench_recommend.py
	$(BIN)/python benchmarks/bench_cli.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist src/*.egg-info
