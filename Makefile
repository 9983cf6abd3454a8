# One set-up command and one test command; .ci/run runs exactly these.
# On a GPU machine, install the CUDA build instead: make setup TORCH_SPEC=torch
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# llama-cpp-python builds llama.cpp from source, once, for the CPU that `make setup` runs on
# (LLAMA=native): one CPU backend compiled with -march=native, so AVX2 on the AMD EPYC machines
# and AVX-512 + AMX on the Intel Xeon ones, and no multimodal library (libmtmd; paracl never
# loads it). GCC 12 drops the AMX kernels' tile configuration as dead stores, so an AMX build
# dies at its first decode: make/ggml-amx-tilecfg.h, force-included, fixes that.
# A venv that moves to another machine needs LLAMA=portable: ggml's runtime CPU dispatch, one
# module per x86 level (14 compiles, ~2.5x the build time), of which ggml loads the best one
# the CPU runs. `make llama-cpp-native` / `make llama-cpp-portable` rebuild an existing venv's;
# LLAMA_CMAKE_ARGS adds flags (e.g. -DGGML_CUDA=ON).
LLAMA ?= native
LLAMA_SPEC ?= llama-cpp-python==0.3.36
LLAMA_CMAKE_ARGS ?=
LLAMA_COMMON_ARGS = -DLLAVA_BUILD=OFF -DCMAKE_CXX_FLAGS=-include$(CURDIR)/make/ggml-amx-tilecfg.h
LLAMA_NATIVE_ARGS = -DGGML_NATIVE=ON
LLAMA_PORTABLE_ARGS = -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF
LLAMA_BUILD = $(abspath $(VENV))/llama-build
# llama_cpp's library folder in the venv (a shell expression, read when a recipe runs)
LLAMA_LIB = $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_path("platlib"))')/llama_cpp/lib
# One pip call builds llama-cpp-python afresh (no wheel cache: a cached wheel may be for
# another CPU or lack the portable build's modules) into a build folder kept until the
# portable build's modules are copied beside llama_cpp's libraries (pip does not install
# them; GGML_BACKEND_DIR points ggml there). Each build first removes the other's modules.
LLAMA_PIP = $(BIN)/pip install --quiet --no-cache-dir --force-reinstall --no-deps "$(LLAMA_SPEC)"
# pytest-xdist workers of `make test`, one test file at a time (tests/conftest.py orders them),
# each on one torch thread: the tests' models are tiny, and threads beyond the cores only spin.
# The Ray tests (marked `ray`) run after, in one process of their own: Ray's gRPC threads do
# not survive a later fork there. A crashed worker ends the run (xdist's loadfile hangs on a
# restart), and a test still running after TEST_TIMEOUT s fails with every thread's stack.
TEST_WORKERS ?= 2
TEST_TIMEOUT ?= 1200
PYTEST = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q --timeout=$(TEST_TIMEOUT) --timeout-method=thread
BIN := $(VENV)/bin

.PHONY: setup llama-cpp-native llama-cpp-portable test test-slow lint format docs

# llama-cpp-python first, so that paracl's install finds it there and builds no other.
setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	$(MAKE) llama-cpp-$(LLAMA)
	$(BIN)/pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -m paracl.core.models --check

llama-cpp-native:
	rm -f "$(LLAMA_LIB)"/libggml-cpu-*.so \
	&& CMAKE_ARGS="$(LLAMA_NATIVE_ARGS) $(LLAMA_COMMON_ARGS) $(LLAMA_CMAKE_ARGS)" $(LLAMA_PIP)

llama-cpp-portable:
	lib="$(LLAMA_LIB)" && rm -rf "$(LLAMA_BUILD)" && rm -f "$$lib"/libggml-cpu-*.so \
	&& CMAKE_ARGS="$(LLAMA_PORTABLE_ARGS) $(LLAMA_COMMON_ARGS) $(LLAMA_CMAKE_ARGS) -DGGML_BACKEND_DIR=$$lib" \
		SKBUILD_BUILD_DIR="$(LLAMA_BUILD)" $(LLAMA_PIP) \
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
