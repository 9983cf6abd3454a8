"""The installed llama.cpp: it decodes on this CPU, with the kernels this CPU has.

`make setup` builds llama.cpp for the CPU it runs on (-march=native); `make setup
LLAMA=portable` with ggml's runtime CPU dispatch (Makefile). Either must run the widest
kernels this CPU has. A build whose kernels this CPU cannot run dies of a signal at the first decode, so the decode
runs in a child process: a crash fails the test with its signal instead of ending the
test run. The child reads the packaged SmolLM2-135M GGUF (Q4_1, which has AMX kernels)
through paracl.parts.llama_batch, with a few-shot prefix long enough for the many-row
matmul path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = """
import json
from llama_cpp import Llama, llama_print_system_info
from paracl.core.models import packaged_gguf
from paracl.parts.llama_batch import BatchedCompletions, Draw, load_cpu_backend
from paracl.parts.translate import few_shot_prefix, translation_prompt

module = load_cpu_backend()
path = packaged_gguf("HuggingFaceTB/SmolLM2-135M-Instruct")
llm = Llama(model_path=str(path), n_ctx=256, n_threads=2, seed=0, verbose=False)
engine = BatchedCompletions(llm, few_shot_prefix("en", "de"), n_seq=4, threads=2)
texts = ["The bridge was opened in 1932.", "He was elected mayor twice."]
out = engine.complete(
    [translation_prompt(t, "en", "de") for t in texts], [[Draw(None, 1.0, 0, 6)]] * 2
)
print(json.dumps({"module": module, "system": llama_print_system_info().decode(), "out": out}))
"""


@pytest.fixture(scope="module")
def child() -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, (
        f"decoding with the installed llama.cpp failed (exit {run.returncode}; a negative "
        f"exit is the signal that killed it):\n{run.stderr[-2000:]}"
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_the_installed_llama_cpp_decodes_once(child):
    assert [len(row) for row in child["out"]] == [1, 1]
    assert all(row[0] for row in child["out"]), child["out"]


def _cpu_flags() -> set[str]:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


# llama.cpp's name of a kernel family (llama_print_system_info) and the /proc/cpuinfo flag
# that says the CPU runs it
KERNELS = {
    "AVX2": "avx2", "FMA": "fma", "F16C": "f16c", "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi", "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}  # fmt: skip


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="reads /proc/cpuinfo (Linux)")
def test_the_cpu_backend_uses_the_widest_kernels_this_cpu_has(child):
    """AMX where the CPU has it, AVX-512 (with its VNNI and BF16 extensions) where it has
    that, else AVX2: what a native build compiles and a portable build's dispatch picks."""
    flags = _cpu_flags()
    wanted = [kernel for kernel, flag in KERNELS.items() if flag in flags]
    print(f"llama.cpp CPU backend: {child['module'] or 'linked in'}\n{child['system']}")
    missing = [k for k in wanted if f"{k} = 1" not in child["system"]]
    assert not missing, (
        f"llama.cpp runs without {missing}, which this CPU has: rebuild it for this CPU "
        f"with `make llama-cpp-native`. {child['system']}"
    )
