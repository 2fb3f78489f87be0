# beam_prep developer entry points. Everything runs inside a local virtualenv (.venv).
#   make quickstart   install, analyze the bundled sample with the DirectRunner, generate the
#                     Keras module, train + export the example model
#   make test         install (with the test extra), lint (ruff + layer contracts on the built
#                     wheel) and run the default test suite
#   make test-slow    the slow tests only (multi-worker training, quality, large data)
#   make test-fuzz    the hypothesis tests with a random seed and 25x their examples (nightly)
#   make asan         the C extension built with AddressSanitizer; decoder/fuzz tests through it
#   make runner-jars  Beam's Flink and Spark job servers (Maven) and a Spark (pyspark) under
#                     build/runners/ (needs Java 17 and Maven; docs/runners.md)
#   make test-runners analyze / transform / make-elwc on Flink and Spark vs the DirectRunner

PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
OUT ?= quickstart_out

.PHONY: install install-test wheel-site quickstart test test-slow test-fuzz lint clean \
	runner-jars test-runners

# setuptools' editable install prints a banner ("Editable installation. Please be careful with
# folders ... with the same name as your package") as a Python warning of its build backend;
# this filter (passed to the backend through the environment) drops exactly that one. The
# install keeps setuptools' default mode, whose import finder maps beam_prep.pipelines and
# beam_prep.templates to pipelines/ and templates/ (compat mode would not).
QUIET_EDITABLE := ignore:Editable installation

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

install: $(BIN)/python
	PYTHONWARNINGS="$(QUIET_EDITABLE)" $(BIN)/python -m pip install --quiet -e .

install-test: $(BIN)/python
	PYTHONWARNINGS="$(QUIET_EDITABLE)" $(BIN)/python -m pip install --quiet -e ".[test,jax]"

quickstart: install
	rm -rf $(OUT)
	$(BIN)/beam-prep analyze --spec examples/spec.yaml --input 'examples/data/sample.csv' \
		--output $(OUT)/artifacts
	$(BIN)/beam-prep generate --artifacts $(OUT)/artifacts --output $(OUT)/preprocessing.py
	$(BIN)/python examples/train_and_export.py --artifacts $(OUT)/artifacts \
		--preprocessing $(OUT)/preprocessing.py --output $(OUT)/model
	@echo "Artifacts: $(OUT)/artifacts   Generated module: $(OUT)/preprocessing.py   Model: $(OUT)/model"

# The wheel, installed with --target outside the source tree: the layer contracts and the
# installed-package tests (tests/cli/test_installed.py) run against what users get from pip.
WHEEL_SITE := build/wheel-site

wheel-site: install-test
	rm -rf build/dist $(WHEEL_SITE)
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir build/dist .
	$(BIN)/python -m pip install --quiet --no-deps --target $(WHEEL_SITE) build/dist/beam_prep-*.whl

test: lint
	BEAM_PREP_REQUIRE_NATIVE=1 BEAM_PREP_WHEEL_SITE=$(abspath $(WHEEL_SITE)) \
		$(BIN)/python -m pytest -q -n 2 --dist loadfile

test-slow: install-test
	$(BIN)/python -m pytest -q -m slow

# The hypothesis tests with a random seed (printed on failure) and FUZZ_SCALE times their
# examples; nightly-style. `make test` runs them derandomized (profile `ci`, tests/conftest.py).
FUZZ_SCALE ?= 25
test-fuzz: install-test
	HYPOTHESIS_PROFILE=fuzz BEAM_PREP_FUZZ_SCALE=$(FUZZ_SCALE) \
		$(BIN)/python -m pytest -q -n 2 -m "hypothesis and not slow"

lint: wheel-site
	$(BIN)/ruff check .
	cd build && PYTHONPATH=$(abspath $(WHEEL_SITE)) $(abspath $(BIN))/lint-imports ../.importlinter

# AddressSanitizer: a copy of the package under $(ASAN_DIR) whose _tfexample is built with
# -fsanitize=address (the in-place build other runs use is left alone); Python is run with
# libasan preloaded. ASAN_MARKERS=slow adds the long hypothesis runs.
ASAN_DIR ?= build/asan
ASAN_MARKERS ?= not slow
ASAN_TESTS ?= tests/io/inputs/test_example_decoder.py tests/io/inputs/test_decoder_fuzz.py \
	tests/io/inputs/test_tfrecord_integrity.py
# libstdc++ is preloaded too: without it ASan cannot find __cxa_throw when tfx-bsl throws.
ASAN_ENV := ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libstdc++.so)" \
	BEAM_PREP_REQUIRE_NATIVE=1
.PHONY: asan
asan: install-test
	rm -rf $(ASAN_DIR) && mkdir -p $(ASAN_DIR)
	cp -r beam_prep tests pytest.ini $(ASAN_DIR)/
	cp -r pipelines $(ASAN_DIR)/beam_prep/pipelines
	cp -r templates $(ASAN_DIR)/beam_prep/templates
	rm -f $(ASAN_DIR)/beam_prep/io/_tfexample*.so
	gcc -shared -fPIC -g -O1 -fsanitize=address -fno-omit-frame-pointer -Wall \
		-I$$($(BIN)/python -c "import sysconfig; print(sysconfig.get_paths()['include'])") \
		beam_prep/io/_tfexample.c beam_prep/io/_crc32c.c -o $(ASAN_DIR)/beam_prep/io/_tfexample$$($(BIN)/python \
		-c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
	cd $(ASAN_DIR) && $(ASAN_ENV) $(abspath $(BIN))/python -c "import beam_prep.io._tfexample \
		as m; assert m.__file__.startswith('$(abspath $(ASAN_DIR))'), m.__file__; print(m.__file__)"
	cd $(ASAN_DIR) && $(ASAN_ENV) $(abspath $(BIN))/python -m pytest -q -p no:cacheprovider \
		-m "$(ASAN_MARKERS)" $(ASAN_TESTS)

# Flink and Spark through Beam's portable runner (docs/runners.md). The job servers are built
# from Maven Central (runners/*.pom.xml: Beam $(BEAM_JAVA_VERSION), the newest with Flink 1.19 and
# Spark 3 runner artifacts served there); the Spark cluster is pyspark's. `make test` never
# needs any of it.
RUNNERS_DIR := build/runners
BEAM_JAVA_VERSION ?= 2.62.0
PYSPARK_VERSION ?= 3.5.9

runner-jars: install
	mvn -q -B -f runners/flink-job-server.pom.xml -Dbeam.version=$(BEAM_JAVA_VERSION) package
	mvn -q -B -f runners/spark-job-server.pom.xml -Dbeam.version=$(BEAM_JAVA_VERSION) package
	test -d $(RUNNERS_DIR)/pyspark-$(PYSPARK_VERSION)/pyspark || $(BIN)/python -m pip install \
		--quiet --no-deps --target $(RUNNERS_DIR)/pyspark-$(PYSPARK_VERSION) pyspark==$(PYSPARK_VERSION)
	ln -sfn pyspark-$(PYSPARK_VERSION) $(RUNNERS_DIR)/pyspark
	@echo "Flink job server: $(RUNNERS_DIR)/flink-1.19-job-server-$(BEAM_JAVA_VERSION)/"
	@echo "Spark job server: $(RUNNERS_DIR)/spark-3-job-server-$(BEAM_JAVA_VERSION)/  Spark: $(RUNNERS_DIR)/pyspark/"

test-runners: install-test runner-jars
	BEAM_JAVA_VERSION=$(BEAM_JAVA_VERSION) $(BIN)/python -m pytest -q -m runners tests/runners

clean:
	rm -rf $(OUT) build dist *.egg-info
