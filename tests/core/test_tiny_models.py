"""The tiny-model builders give loadable, deterministic models of each architecture, and
production code never imports them (paracl.testing)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import torch
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

from paracl.parts.filler.masking import sentinel
from paracl.testing import standins

REPO = Path(__file__).resolve().parents[2]


def test_t5_tokenizer_has_unique_sentinels(tiny_t5):
    tok = AutoTokenizer.from_pretrained(tiny_t5)
    ids = [tok.convert_tokens_to_ids(f"<extra_id_{i}>") for i in range(5)]
    assert len(set(ids)) == 5 and tok.unk_token_id not in ids
    encoded = tok("a <extra_id_0> sat on <extra_id_1> .").input_ids
    assert ids[0] in encoded and ids[1] in encoded


def test_standin_sentinels_are_the_ones_masking_writes():
    # standins names them itself so that the round-trip stages need not import negatives
    assert standins._sentinels(standins.T5_SENTINELS) == [
        sentinel(i) for i in range(standins.T5_SENTINELS)
    ]


def test_seq2seq_generates_and_builder_is_deterministic(tmp_path, tiny_bart):
    again = standins.build_tiny_model("bart", tmp_path / "b")
    a = AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    b = AutoModelForSeq2SeqLM.from_pretrained(again)
    for (name, p), (_, q) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(p, q), name
    tok = AutoTokenizer.from_pretrained(tiny_bart)
    out = a.generate(**tok(["the cat sat ."], return_tensors="pt"), max_new_tokens=4)
    assert out.shape[0] == 1


def test_bert_tokenizer_encodes_pairs_with_cls_and_sep(tiny_bert):
    tok = AutoTokenizer.from_pretrained(tiny_bert)
    enc = tok("a man .", "猫 。")
    assert enc.input_ids[0] == tok.cls_token_id
    assert enc.input_ids.count(tok.sep_token_id) == 2


def test_production_code_does_not_import_the_testing_package():
    package = REPO / "src" / "paracl"
    library = [f for f in package.rglob("*.py") if f.relative_to(package).parts[0] != "testing"]
    files = library + sorted((REPO / "stages").glob("*.py"))
    offenders = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            if any(n == "paracl.testing" or n.startswith("paracl.testing.") for n in names):
                offenders.append(str(f.relative_to(REPO)))
    assert not offenders, f"production code imports paracl.testing: {sorted(set(offenders))}"


# Imports every module of paracl but paracl.testing, and every stage script, with
# paracl.testing refused; then checks the refusal itself works.
BLOCKED_IMPORTS = """
import importlib, importlib.abc, importlib.util, pkgutil, sys
from pathlib import Path

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "paracl.testing" or name.startswith("paracl.testing."):
            raise ImportError(f"production code imports {name}")

sys.meta_path.insert(0, Refuse())
import paracl

for m in pkgutil.walk_packages(paracl.__path__, "paracl."):
    if not m.name.startswith("paracl.testing") and not m.name.endswith("__main__"):
        importlib.import_module(m.name)
for f in sorted(Path("stages").glob("*.py")):
    spec = importlib.util.spec_from_file_location(f"stage_{f.stem}", f)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
try:
    import paracl.testing.standins
except ImportError:
    print("refused")
"""


def test_production_modules_import_with_the_testing_package_refused():
    """At run time, too (~6 s): no module of the library or stage script imports
    paracl.testing when it is imported (the static check above sees lazy imports)."""
    env = os.environ | {"PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORTS], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "refused", proc.stdout + proc.stderr
