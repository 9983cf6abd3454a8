# One set-up command and one test command; .ci/run runs exactly these.
# On a GPU machine, install the CUDA build instead: make setup TORCH_SPEC=torch
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# llama-cpp-python builds llama.cpp from source. `setup` builds it with ggml's runtime CPU
# dispatch (LLAMA=dispatch): one libggml-cpu-<level>.so per x86 level (haswell = AVX2 ...
# icelake = AVX-512, sapphirerapids = AMX), of which ggml loads the best one this CPU runs:
# AVX2 on the AMD EPYC machines, AMX on the Intel Xeon ones, from one build (the round trip
# runs ~1.7x faster on the Xeon than on an AVX2 build; results/llama-kernels). llama-cpp-python
# 0.3.36 installs none of these modules, so the recipe copies them beside its libraries, where
# GGML_BACKEND_DIR points ggml. GCC 12 drops the AMX kernels' tile configuration as dead
# stores, so an AMX build dies at its first decode (SIGILL or a protection fault):
# make/ggml-amx-tilecfg.h, force-included, fixes that. `make setup LLAMA=avx2` builds one
# AVX2 backend instead of 14 (LLAMA_CMAKE_ARGS tunes it for a CPU or adds CUDA).
# `make llama-cpp-dispatch` / `make llama-cpp-avx2` rebuild an existing venv's.
LLAMA ?= dispatch
LLAMA_SPEC ?= llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
LLAMA_DISPATCH_ARGS ?= -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF \
	-DCMAKE_CXX_FLAGS=-include$(CURDIR)/make/ggml-amx-tilecfg.h
LLAMA_BUILD = $(abspath $(VENV))/llama-build
# llama_cpp's library folder in the venv (a shell expression, read when a recipe runs)
LLAMA_LIB = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/llama_cpp/lib
# pytest-xdist workers of `make test`, one test file at a time (tests/conftest.py orders them),
# each on one torch thread: the tests' models are tiny, and threads beyond the cores only spin.
# The Ray tests (marked `ray`) run after, in one process of their own: Ray's gRPC threads do
# not survive a later fork there. A crashed worker ends the run (xdist's loadfile hangs on a
# restart), and a test still running after TEST_TIMEOUT s fails with every thread's stack.
TEST_WORKERS ?= 2
TEST_TIMEOUT ?= 1200
PYTEST = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q --timeout=$(TEST_TIMEOUT) --timeout-method=thread
BIN := $(VENV)/bin

.PHONY: setup llama-cpp-dispatch llama-cpp-avx2 test test-slow lint format docs

# llama-cpp-python first, so that paracl's install finds it there and builds no other.
setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(MAKE) llama-cpp-$(LLAMA)
	$(BIN)/pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -m paracl.core.models --check

# Both remove the other build's CPU modules, which pip does not know of.
llama-cpp-avx2:
	rm -f "$(LLAMA_LIB)"/libggml-cpu-*.so \
	&& CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --force-reinstall --no-deps "$(LLAMA_SPEC)"

# Built afresh on every call (no wheel cache: a cached wheel may have other flags or lack the
# modules), into a build folder kept until the modules are copied out.
llama-cpp-dispatch:
	lib="$(LLAMA_LIB)" && rm -rf "$(LLAMA_BUILD)" && rm -f "$$lib"/libggml-cpu-*.so \
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
