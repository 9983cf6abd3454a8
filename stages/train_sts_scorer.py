"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → models/sts_scorer/ (best of n seeds on dev).

`kind` picks a bi-encoder (offline default) or the paper's cross-encoder; the kind is
saved with the model, so tag and generate_paraphrases load either (roundtrip/sts_scorer.py).
"""

import logging
import tempfile
import time
from pathlib import Path

from paracl.device import select_device
from paracl.io import atomic_dir, write_json
from paracl.models import resolve_model
from paracl.params import ParamsError
from paracl.roundtrip import sts_scorer
from paracl.stage import run

log = logging.getLogger("train_sts_scorer")

DATA = {
    "en": {s: f"data/raw/stsbenchmark/original/sts-{s}.csv" for s in ("train", "dev", "test")},
    "ja": {
        "train": "data/raw/jglue/jsts-v1.3/train-v1.3.json",
        "dev": "data/raw/jglue/jsts-v1.3/valid-v1.3.json",
        "test": "data/raw/jglue/jsts-v1.3/test-v1.3.json",
    },
}
OUT = Path("models/sts_scorer")
METRICS = Path("metrics/roundtrip/sts_scorer.json")
PAPER = {"base_model": "microsoft/deberta-v3-large", "kind": "cross_encoder", "n_seeds": 10}


def deviations(cfg: dict, lang: str, model_id: str, n_train: int, n_train_all: int) -> list[str]:
    """How this run differs from the paper's scorer (empty: the paper's setup)."""
    out = [] if lang == "en" else ["trained on JSTS: the paper's scorer is English (STS-B)"]
    if model_id != PAPER["base_model"]:
        out.append(f"base model {model_id}, not {PAPER['base_model']}")
    if cfg["kind"] != PAPER["kind"]:
        out.append(f"{cfg['kind']} (cosine), not a cross-encoder")
    if cfg["n_seeds"] < PAPER["n_seeds"]:
        out.append(f"best of {cfg['n_seeds']} seed(s), not {PAPER['n_seeds']}")
    if n_train < n_train_all:
        out.append(f"{n_train} of {n_train_all} training pairs")
    return out


def main(params: dict) -> None:
    cfg = params["train_sts_scorer"]
    lang = params["lang"]
    kind = cfg["kind"]
    if kind == "cross_encoder" and cfg["epochs"] == 0:
        raise ParamsError("'train_sts_scorer.epochs' must be > 0 for kind cross_encoder")
    splits = {name: sts_scorer.read_pairs(path) for name, path in DATA[lang].items()}
    train = sts_scorer.sample_pairs(splits["train"], cfg["max_train_pairs"], params["seed"])
    resolved = resolve_model(cfg["base_model"])
    device = str(select_device(params["device"]))
    log.info(
        "%s from %s (%s); %d train pairs; device %s",
        kind,
        resolved.model_id,
        resolved.source,
        len(train),
        device,
    )

    # a bi-encoder with epochs 0 is not trained: every seed would give the same model
    n_seeds = 1 if cfg["epochs"] == 0 else cfg["n_seeds"]
    runs, best, best_model = [], None, None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paracl-sts-") as tmp_work:
        for i in range(n_seeds):
            seed = params["seed"] + i
            t0 = time.perf_counter()
            model, dev = sts_scorer.train_one(
                kind, resolved.path, train, splits["dev"], Path(tmp_work), seed, cfg, device
            )
            runs.append({"seed": seed, "dev": dev})
            log.info(
                "seed %d: dev spearman %.2f (%.0f s)",
                seed,
                dev["spearman"],
                time.perf_counter() - t0,
            )
            if best is None or dev["spearman"] > best["dev"]["spearman"]:
                best, best_model = runs[-1], model
    test = splits["test"]
    test_scores = sts_scorer.correlations(sts_scorer.predict(best_model, test.pairs()), test.score)
    with atomic_dir(OUT) as tmp:
        sts_scorer.save_scorer(
            best_model, kind, tmp, {"base_model": resolved.model_id, "seed": best["seed"]}
        )
    deviation = deviations(cfg, lang, resolved.model_id, len(train), len(splits["train"]))
    write_json(
        {
            "lang": lang,
            "kind": kind,
            "scale": sts_scorer.SCALE[kind],
            "base_model": resolved.describe(),
            "paper": PAPER,
            "paper_model": not deviation,
            "deviations": deviation,
            "same_base_as_paper": resolved.model_id == PAPER["base_model"],
            "epochs": cfg["epochs"],
            "n_train": len(train),
            "n_dev": len(splits["dev"]),
            "n_test": len(test),
            "runs": runs,
            "best_seed": best["seed"],
            "dev": best["dev"],
            "test": test_scores,
        },
        METRICS,
    )
    log.info(
        "best seed %d: dev spearman %.2f, test spearman %.2f (%.0f s)",
        best["seed"],
        best["dev"]["spearman"],
        test_scores["spearman"],
        time.perf_counter() - started,
    )


if __name__ == "__main__":
    run(main)
