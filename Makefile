# beam_prep developer entry points. Everything runs inside a local virtualenv (.venv).
#   make quickstart   install, analyze the bundled sample with the DirectRunner, generate the
#                     Keras module, train + export the example model
#   make test         install (with the test extra), lint (ruff + layer contracts on the built
#                     wheel) and run the default test suite
#   make test-slow    the slow tests only (multi-worker training, quality, large data)

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= quickstart_out

.PHONY: install install-test wheel-site quickstart test test-slow lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .

install-test: $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"

quickstart: install
	rm -rf $(OUT)
	$(BIN)/beam-prep analyze --spec examples/spec.yaml --input 'examples/data/sample.csv' \
		--output $(OUT)/artifacts
	$(BIN)/beam-prep generate --artifacts $(OUT)/artifacts --output $(OUT)/preprocessing.py
	$(BIN)/python examples/train_and_export.py --artifacts $(OUT)/artifacts \
		--preprocessing $(OUT)/preprocessing.py --output $(OUT)/model
	@echo "Artifacts: $(OUT)/artifacts   Generated module: $(OUT)/preprocessing.py   Model: $(OUT)/model"

# The wheel, installed with --target outside the source tree: the layer contracts and the
# installed-package tests (tests/test_installed.py) run against what users get from pip.
WHEEL_SITE := build/wheel-site

wheel-site: install-test
	rm -rf build/dist $(WHEEL_SITE)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir build/dist .
	$(BIN)/python -m pip install --quiet --no-deps --target $(WHEEL_SITE) build/dist/beam_prep-*.whl

test: lint
	BEAM_PREP_WHEEL_SITE=$(abspath $(WHEEL_SITE)) $(BIN)/python -m pytest -q -n 2 --dist loadfile

test-slow: install-test
	$(BIN)/python -m pytest -q -m slow

lint: wheel-site
	$(BIN)/ruff check beam_prep pipelines tests benchmarks examples
	cd build && PYTHONPATH=$(abspath $(WHEEL_SITE)) $(abspath $(BIN))/lint-imports --config ../.importlinter

clean:
	rm -rf $(OUT) build dist *.egg-info
