"""Load params.yaml and check it against one schema before a stage does any work.

Why: a typo (`thetta: 0.4`) or an out-of-range value (`theta: 1.7`) must stop the
stage at once with a message naming the key, not an hour later with a traceback.

The schema is plain data: each key maps to a `Param` (a leaf) or to a dict (a
section). Every key in the schema is required unless its Param has a default; a key in
params.yaml that the schema does not know is an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from paracl.errors import UserError

MISSING = object()


class ParamsError(UserError, ValueError):
    """params.yaml does not match the schema; the message names the key."""


@dataclass(frozen=True)
class Param:
    """One leaf of the schema: its type and the values it may take."""

    type: type | tuple[type, ...]
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None
    item: Param | None = None  # for lists: the Param each item must satisfy
    default: Any = MISSING
    nullable: bool = False
    help: str = ""

    def describe(self) -> str:
        """The allowed values, in words, for error messages."""
        names = self.type if isinstance(self.type, tuple) else (self.type,)
        words = " or ".join(t.__name__ for t in names)
        if self.choices is not None:
            words = "one of " + ", ".join(repr(c) for c in self.choices)
        if self.min is not None and self.max is not None:
            words += f" in [{self.min}, {self.max}]"
        elif self.min is not None:
            words += f" >= {self.min}"
        elif self.max is not None:
            words += f" <= {self.max}"
        if self.nullable:
            words += " (or null)"
        return words


Schema = dict[str, "Param | Schema"]

FLOAT = (int, float)  # YAML writes 1 for 1.0; accept both where a float is meant

PROB = Param(FLOAT, min=0.0, max=1.0)
SEED = Param(int, min=0)
LANG = Param(str, choices=("en", "ja"))

# ---------------------------------------------------------------------------
# The schema of params.yaml: one section per stage plus a few top-level keys.
# Stages add their own section here (keep one section per stage).
# ---------------------------------------------------------------------------
SCHEMA: Schema = {
    "seed": Param(int, min=0, help="seed for every random choice in every stage"),
    "lang": LANG,
    "theta": Param(FLOAT, min=0.0, max=1.0, help="keep paraphrase rules with p(d|s) >= theta"),
    "device": Param(str, choices=("auto", "cpu", "cuda", "mps"), default="auto"),
    "executor": Param(str, choices=("local", "ray"), default="local", help="per-shard engine"),
    "ray_address": Param(str, nullable=True, default=None, help="null: start a local Ray"),
    "workers": Param(int, min=1, default=2, help="CPU stages: processes / Ray tasks in flight"),
    "model_workers": Param(int, min=1, default=1, help="model stages on Ray: actors"),
    "gpus_per_model_worker": Param(FLOAT, min=0.0, default=1.0, help="GPUs per Ray model actor"),
    "fetch": {
        "sources": Param(list, item=Param(str)),
        "mirror": Param(str, nullable=True, default=None),
    },
    "prepare_corpus": {
        "input": {
            "en": {
                "source": Param(str),
                "format": Param(str, choices=("text", "wiki40b", "jaquad")),
            },
            "ja": {
                "source": Param(str),
                "format": Param(str, choices=("text", "wiki40b", "jaquad")),
            },
        },
        "min_words": Param(int, min=1, help="keep sentences with more than this many words"),
        "max_words": Param(int, min=2, help="keep sentences with fewer than this many words"),
        "langdetect_threshold": PROB,
        "max_sentences": Param(int, min=1, nullable=True),
        "workers": Param(int, min=1, max=256),
        "shard_size": Param(int, min=1),
    },
    "ppdb_substitute": {
        # format: see paracl.paraphrase.dictionaries (ppdb2/ehimer = the paper's files)
        "dictionary": {
            lang: {
                "format": Param(str, choices=("ppdb2", "ehimer", "tsv", "ppdb-sample", "sudachi")),
                "path": Param(str),
            }
            for lang in ("en", "ja")
        },
        "max_phrase_words": {"en": Param(int, min=1, max=20), "ja": Param(int, min=1, max=20)},
        "max_substitutions": Param(int, min=1, max=4, help="rules combined per candidate"),
        "max_candidates": Param(int, min=1, help="candidates kept per sentence"),
        "shard_size": Param(int, min=1, default=5000, help="corpus sentences per shard"),
    },
    "rank_fluency": {
        "model": {"en": Param(str), "ja": Param(str)},
        "batch_size": Param(int, min=1),
        "max_batch_tokens": {  # padded tokens per batch: bounds the logits' memory
            "en": Param(int, min=8),
            "ja": Param(int, min=8),
        },
        "max_sentences": Param(int, min=1, nullable=True, help="sentences scored; null = all"),
        "shard_size": Param(int, min=1, default=1000, help="candidates per shard, whole sentences"),
    },
    "adapt_t5": {
        # hub id (paper: t5-base / sonoisa/t5-base-japanese-v1.1) or tiny-random:t5 (stand-in)
        "model": {"en": Param(str), "ja": Param(str)},
        "enabled": Param(bool, help="false: save the base model unchanged"),
        "noise_density": Param(FLOAT, min=0.01, max=0.99),
        "mean_noise_span_length": Param(FLOAT, min=1.0, max=20.0),
        "lr": Param(FLOAT, min=0.0, max=1.0),
        "max_steps": Param(int, min=1),
        "batch_size": Param(int, min=1),
        "max_length": Param(int, min=4, max=1024, help="tokens per sentence"),
        "eval_every": Param(int, min=1),
        "dev_sentences": Param(int, min=1, help="held-out sentences for the dev loss"),
        "max_sentences": Param(int, min=2, nullable=True, help="corpus sentences; null = all"),
        "threads": Param(int, min=1, max=256, nullable=True, help="torch CPU threads"),
        "standin": {
            "vocab_size": Param(int, min=200, max=64000),
            "d_model": Param(int, min=16, max=1024),
            "num_layers": Param(int, min=1, max=24),
        },
    },
    "corrupt": {
        "max_sentences": Param(int, min=1, nullable=True, help="anchors sampled; null = all"),
        "num_beams": Param(int, min=1, max=64),
        "num_return_sequences": Param(int, min=1, max=64, help="negatives per anchor (<= beams)"),
        "batch_size": Param(int, min=1),
        "max_fill_tokens": Param(int, min=1, max=128, help="generation budget per blank"),
        "on_missing": Param(str, choices=("original", "drop")),
        "chunk_batch_size": Param(int, min=1),
        "threads": Param(int, min=1, max=256, nullable=True, help="torch CPU threads"),
        "shard_size": Param(int, min=1, default=250, help="anchors per resumable shard"),
    },
    "evaluate": {
        "methods": Param(list, item=Param(str), help="encoders: models/encoders/<method>/"),
        "tasks": Param(list, item=Param(str), help="jobs: unsup_sts_<lang>, pi_<lang>, tasks"),
        "raw_dir": Param(str),
        "seeds": Param(list, item=Param(int, min=0), help="fine-tuning seeds"),
        "epochs": Param(int, min=1, nullable=True, help="null: each task's paper value"),
        "lr": Param(FLOAT, min=0.0, max=1.0, nullable=True, help="null: paper value"),
        "batch_size": Param(int, min=1, nullable=True, help="null: paper value"),
        "patience": Param(int, min=1, help="early stop after N epochs without dev gain"),
        "max_train": Param(int, min=1, nullable=True, help="seeded train sample; null = all"),
        "max_dev": Param(int, min=1, nullable=True, help="seeded dev sample; null = all"),
        "max_eval_pairs": Param(int, min=1, nullable=True, help="unsup/PI cap; null = all"),
        "max_seq_length": Param(int, min=8, max=4096),
        "encode_batch_size": Param(int, min=1),
        "dev_fraction": Param(FLOAT, min=0.01, max=0.5, help="re-split: dev share"),
        "test_fraction": Param(FLOAT, min=0.01, max=0.5, help="re-split: test share"),
    },
    "summary": {
        "decimals": Param(int, min=0, max=4),
        "avg_over": Param(str, choices=("finetune", "all"), help="tasks in the Avg. column"),
    },
    "roundtrip": {
        "forward_model": Param(str, help="hub id, local dir, or tiny-random:<arch> stand-in"),
        "backward_model": Param(str),
        "src_lang_code": Param(str, nullable=True, help="NLLB/M2M source code, e.g. eng_Latn"),
        "pivot_lang_code": Param(str, nullable=True, help="NLLB/M2M pivot code, e.g. deu_Latn"),
        "mode": Param(str, choices=("sample", "greedy")),
        "top_k": Param(list, item=Param(int, min=1)),
        "temperature": Param(list, item=Param(FLOAT, min=0.01)),
        "num_beams": Param(int, min=1),
        "max_sentences": Param(int, min=1, nullable=True),
        "batch_size": Param(int, min=1),
        "shard_size": Param(int, min=1),
        "max_new_tokens": Param(int, min=1),
        "length_ratio": Param(FLOAT, min=0.1),
    },
    "train_sts_scorer": {
        "kind": Param(
            str, choices=("bi_encoder", "cross_encoder"), help="scorer kind; paper: cross_encoder"
        ),
        "base_model": Param(str),
        "n_seeds": Param(int, min=1, max=100),
        "epochs": Param(FLOAT, min=0.0, help="0: bi_encoder as it is (zero-shot)"),
        "batch_size": Param(int, min=1),
        "lr": Param(FLOAT, min=0.0, max=1.0),
        "max_length": Param(int, min=8),
        "max_train_pairs": Param(int, min=1, nullable=True),
    },
    "tag": {
        "dev_per_share": Param(int, min=0, nullable=True),
        "test_per_share": Param(int, min=0, nullable=True),
        "train_per_share": Param(int, min=0, nullable=True),
        "batch_size": Param(int, min=1),
        "heatmap_min_words": Param(int, min=0),
        "heatmap_max_pairs": Param(int, min=1),
        "shard_size": Param(int, min=1, default=500, help="candidates per shard, whole sentences"),
    },
    "train_paraphraser": {
        "base_model": Param(str),
        "lr": Param(FLOAT, min=0.0, max=1.0),
        "batch_size": Param(int, min=1),
        "max_epochs": Param(int, min=1),
        "patience": Param(int, min=1),
        "max_length": Param(int, min=8),
    },
    "generate_paraphrases": {
        "tags": Param(list, item=Param(str)),
        "num_beams": Param(int, min=1),
        "min_ratio": Param(FLOAT, min=0.0),
        "max_ratio": Param(FLOAT, min=0.0),
        "max_sentences": Param(int, min=1, nullable=True),
        "batch_size": Param(int, min=1),
        "max_length": Param(int, min=8),
        "shard_size": Param(int, min=1, default=50, help="sentences per resumable shard"),
    },
    "train_contrastive": {
        # method name -> the one artifact it trains on (also its DVC dep; see dvc.yaml)
        "methods": Param(dict, help="method -> input artifact path"),
        "base_model": Param(str),
        "pooling": Param(str, choices=("mean", "weighted_mean", "last", "cls", "cls_mlp")),
        "dropout": Param(
            FLOAT,
            min=0.0,
            max=0.9,
            nullable=True,
            default=None,
            help="every dropout rate of the base's config; null = the base's own",
        ),
        "max_seq_length": Param(int, min=4, max=4096),
        "batch_size": Param(int, min=2, help="pairs per batch = the in-batch negatives pool"),
        "mini_batch_size": Param(int, min=1, nullable=True, help="GradCache chunk; null = all"),
        "processes": Param(int, min=1, default=1, help="training processes (torchrun)"),
        "checkpoint_every": Param(
            int, min=1, nullable=True, default=10, help="steps between resumable checkpoints"
        ),
        "lr": Param(FLOAT, min=0.0, max=1.0),
        "temperature": Param(FLOAT, min=1e-4, max=10.0),
        "epochs": Param(int, min=1),
        "patience": Param(int, min=1, help="early stop after this many epochs w/o dev gain"),
        "max_examples": Param(int, min=2, nullable=True),
        "freeze_embeddings": Param(bool),
        "dev_max_pairs": Param(int, min=2, nullable=True, help="seeded STS-dev sample"),
        "jcse": {"alpha": Param(FLOAT, min=0.0)},
        "jcse_two_stage": {"alpha": Param(FLOAT, min=0.0), "init": Param(str)},
        "ams": {
            "margin": Param(FLOAT, min=0.0, max=3.14),
            "scale": Param(FLOAT, min=1e-4),
            "gamma": Param(FLOAT, min=0.0),
            "mega_batch": Param(int, min=1),
            "mine_k": Param(int, min=0),
            "threshold": Param(FLOAT, min=-1.0, max=1.0, nullable=True),
        },
        "ebsim": {
            "eta": Param(FLOAT, min=-1.0, max=1.0),
            "max_mask": PROB,
            "beta": Param(FLOAT, min=0.0),
        },
    },
    # -- stage sections above this line --
}


def _check(value: Any, spec: Param | dict, key: str) -> Any:
    """Check one value against its spec; return it with defaults filled in."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise ParamsError(f"'{key}' must be a section (a mapping), got {value!r}")
        return _check_section(value, spec, key + ".")
    if value is None:
        if spec.nullable:
            return None
        raise ParamsError(f"'{key}' must be {spec.describe()}, got null")
    # bool is a subclass of int: `seed: true` must not pass as an int.
    if isinstance(value, bool) and bool not in _as_tuple(spec.type):
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if not isinstance(value, spec.type):
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.choices is not None and value not in spec.choices:
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.min is not None and value < spec.min or spec.max is not None and value > spec.max:
        raise ParamsError(f"'{key}' must be {spec.describe()}, got {value!r}")
    if spec.item is not None:
        return [_check(v, spec.item, f"{key}[{i}]") for i, v in enumerate(value)]
    return value


def _as_tuple(t: type | tuple[type, ...]) -> tuple[type, ...]:
    return t if isinstance(t, tuple) else (t,)


def _check_section(values: dict, schema: Schema, prefix: str = "") -> dict:
    unknown = sorted(set(values) - set(schema))
    if unknown:
        known = ", ".join(sorted(schema))
        raise ParamsError(f"unknown key '{prefix}{unknown[0]}' (known here: {known})")
    checked = {}
    for name, spec in schema.items():
        if name in values:
            checked[name] = _check(values[name], spec, prefix + name)
        elif isinstance(spec, Param) and spec.default is not MISSING:
            checked[name] = spec.default
        else:
            raise ParamsError(f"missing key '{prefix}{name}'")
    return checked


def validate(values: dict, schema: Schema = SCHEMA) -> dict:
    """Validate a whole params mapping; raise ParamsError naming the first bad key."""
    if not isinstance(values, dict):
        raise ParamsError("params must be a mapping of sections")
    return _check_section(values, schema)


def _yaml_problem(path: Path, err: yaml.YAMLError) -> str:
    """One line for a YAML error: file:line (1-based), then what is wrong there. PyYAML's
    own message spans several lines and names the file "<unicode string>"."""
    mark = getattr(err, "problem_mark", None)
    if mark is not None:
        where = f"{path}:{mark.line + 1}:{mark.column + 1}"
        what = " ".join(filter(None, (getattr(err, "context", None), err.problem)))
        return f"{where}: not valid YAML: {what}"
    if isinstance(err, yaml.reader.ReaderError):  # a control character: binary data
        char = err.character if isinstance(err.character, int) else ord(err.character)
        return f"{path}: not valid YAML: {err.reason}: #x{char:04x} at offset {err.position}"
    return f"{path}: not valid YAML: {' '.join(str(err).split())}"


def load_params(path: str | Path = "params.yaml") -> dict:
    """Read and validate params.yaml. Errors name the file and the key (or the line)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text (byte {err.start}): not a YAML file") from None
    except OSError as err:  # a directory, no permission, ...
        raise ParamsError(f"{path}: cannot be read: {err.strerror or err}") from None
    if not text.strip():
        raise ParamsError(f"{path}: the file is empty")
    try:
        values = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ParamsError(_yaml_problem(path, err)) from None
    try:
        return validate(values)
    except ParamsError as err:
        raise ParamsError(f"{path}: {err}") from None
