"""The commands that only read or write params start without the model libraries (issue 70):
`paracl --help` and `paracl where` load none of them, every stage's params module (but
train_contrastive's) imports without them, and the whole-file check that `paracl preset` and
`paracl expand` run (paracl.schema.load_params) loads torch alone, for train_contrastive's
losses subclass torch.nn.Module. A stage loads the rest where it runs: transformers,
sentence_transformers, sklearn and scipy cost 3-5 CPU-s a process on 2 EPYC cores, and the
test suite starts many such processes (DVC stages, CLI calls)."""

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# One process: the CLI's params-only commands, then every stage module but
# train_contrastive, then paracl.schema checking the repo's params.yaml; after each, the
# model libraries in sys.modules.
LAZY_IMPORTS = """
import contextlib, importlib, io, json, pkgutil, sys

HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "scipy")
loaded = lambda: sorted(h for h in HEAVY if h in sys.modules)
seen = {}
from paracl.cli import main

with contextlib.redirect_stdout(io.StringIO()):
    for argv in (["--help"], ["where"]):
        try:
            main(argv)
        except SystemExit:
            pass
seen["cli"] = loaded()
import paracl.stages

for m in pkgutil.iter_modules(paracl.stages.__path__):
    if m.name != "train_contrastive":
        importlib.import_module(f"paracl.stages.{m.name}")
seen["stages"] = loaded()
import paracl.schema

paracl.schema.load_params("params.yaml")
seen["schema"] = loaded()
print(json.dumps(seen))
"""


def test_params_commands_and_stage_modules_load_no_model_library():
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", LAZY_IMPORTS], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["cli"] == [], f"paracl --help / where load {seen['cli']}"
    assert seen["stages"] == [], f"the stages' params modules load {seen['stages']}"
    assert seen["schema"] == ["torch"], f"paracl.schema.load_params loads {seen['schema']}"
