# One set-up command and one test command; .ci/run runs exactly these.
# On a GPU machine, install the CUDA build instead: make setup TORCH_SPEC=torch
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# llama-cpp-python builds llama.cpp from source, by default tuned to the building CPU; `setup`
# builds it for AVX2, which every machine of this project has (the AMD EPYC ones have
# nothing more). Override LLAMA_CMAKE_ARGS to tune for a CPU or to add CUDA.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
# `make llama-cpp-dispatch` (opt-in) rebuilds it with ggml's runtime CPU dispatch: one
# libggml-cpu-<level>.so per x86 level (haswell = AVX2 ... icelake = AVX-512, sapphirerapids
# = AMX), of which ggml loads the best one this CPU runs. llama-cpp-python 0.3.36 installs
# none of these modules, so the target copies them beside its libraries, where
# GGML_BACKEND_DIR points ggml. GCC 12 drops the AMX kernels' tile configuration as dead
# stores, so an AMX build dies at its first decode (SIGILL or a protection fault):
# make/ggml-amx-tilecfg.h, force-included, fixes that. Not the default yet: it compiles ~4x
# as long, and the round trip ran only 1.06x faster with it on a loaded AMX Xeon
# (results/llama-kernels; an idle-core measurement is open).
LLAMA_SPEC ?= llama-cpp-python==0.3.36
LLAMA_DISPATCH_ARGS ?= -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF \
	-DCMAKE_CXX_FLAGS=-include$(CURDIR)/make/ggml-amx-tilecfg.h
LLAMA_BUILD = $(abspath $(VENV))/llama-build
# pytest-xdist workers of `make test`, one test file at a time (tests/conftest.py orders them),
# each on one torch thread: the tests' models are tiny, and threads beyond the cores only spin.
# The Ray tests (marked `ray`) run after, in one process of their own: Ray's gRPC threads do
# not survive a later fork there. A crashed worker ends the run (xdist's loadfile hangs on a
# restart), and a test still running after TEST_TIMEOUT s fails with every thread's stack.
TEST_WORKERS ?= 2
TEST_TIMEOUT ?= 1200
PYTEST = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q --timeout=$(TEST_TIMEOUT) --timeout-method=thread
BIN := $(VENV)/bin

.PHONY: setup llama-cpp-dispatch test test-slow lint format docs

setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -m paracl.core.models --check

# Built afresh on every call (no wheel cache: a cached wheel may have other flags or lack the
# modules), into a build folder kept until the modules are copied out.
llama-cpp-dispatch:
	lib="$$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/llama_cpp/lib" \
	&& rm -rf "$(LLAMA_BUILD)" && rm -f "$$lib"/libggml-cpu-*.so \
	&& CMAKE_ARGS="$(LLAMA_DISPATCH_ARGS) -DGGML_BACKEND_DIR=$$lib" SKBUILD_BUILD_DIR="$(LLAMA_BUILD)" \
		$(BIN)/pip install --quiet --no-cache-dir --force-reinstall --no-deps "$(LLAMA_SPEC)" \
	&& find "$(LLAMA_BUILD)" -name 'libggml-cpu-*.so' -exec cp {} "$$lib"/ \; \
	&& rm -rf "$(LLAMA_BUILD)"

test:
	$(PYTEST) -n $(TEST_WORKERS) --dist loadfile --max-worker-restart=0 -m "not slow and not ray" --durations=15
	$(PYTEST) -p no:xdist -m "ray and not slow"

test-slow:
	$(BIN)/python -m pytest -q -m slow

lint:
	$(BIN)/ruff check src stages tests bench
	$(BIN)/ruff format --check src stages tests bench

format:
	$(BIN)/ruff format src stages tests bench
	$(BIN)/ruff check --fix src stages tests bench

# The documentation site from docs/ (mkdocs.yml), at http://127.0.0.1:8000; `paracl report`
# first renders its result tables, plots and configuration reference.
docs:
	$(BIN)/paracl report
	$(BIN)/mkdocs serve
