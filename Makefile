# One set-up command and one test command; .ci/run runs exactly these.
# On a GPU machine, install the CUDA build instead: make setup TORCH_SPEC=torch
PYTHON ?= python3
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
# llama-cpp-python builds llama.cpp from source, by default tuned to the building CPU. On an
# Intel Xeon with AVX-512 and AMX that build dies of a protection fault in libggml-cpu at the
# first decode (seen 2026-11-28, most likely what sank stop 51's CI), so build for AVX2,
# which every machine of this project has (the AMD EPYC ones have nothing more). Override it
# to tune for a CPU or to add CUDA.
# Runtime CPU dispatch (one build that picks AVX2, AVX-512 or AMX kernels per machine) is
# ggml's `-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF` (llama-cpp-python
# forces BUILD_SHARED_LIBS on, which BACKEND_DL needs). Not usable as is with llama-cpp-python
# 0.3.36: its CMakeLists installs only targets it names (ggml-cpu, not the ggml-cpu-haswell ...
# ggml-cpu-sapphirerapids modules ggml builds), and ggml loads backend modules from
# GGML_BACKEND_DIR (a build-time path), the python executable's folder or the working
# directory, not from llama_cpp/lib; so such a build also needs -DGGML_BACKEND_DIR=<that lib
# folder> or a ggml_backend_load_all_from_path() call before the first model. Not yet built.
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF
# pytest-xdist workers of `make test`, one test file at a time (tests/conftest.py orders them),
# each on one torch thread: the tests' models are tiny, and threads beyond the cores only spin.
# The Ray tests (marked `ray`) run after, in one process of their own: Ray's gRPC threads do
# not survive a later fork there. A crashed worker ends the run (xdist's loadfile hangs on a
# restart), and a test still running after TEST_TIMEOUT s fails with every thread's stack.
TEST_WORKERS ?= 2
TEST_TIMEOUT ?= 1200
PYTEST = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q --timeout=$(TEST_TIMEOUT) --timeout-method=thread
BIN := $(VENV)/bin

.PHONY: setup test test-slow lint format docs

setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH_SPEC)"
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet -e ".[dev,ray]"
	$(BIN)/python -m paracl.core.models --check

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
