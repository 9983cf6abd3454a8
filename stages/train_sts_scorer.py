"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → models/sts_scorer/ (best of n seeds on dev)."""

import logging
import tempfile
import time
from pathlib import Path

from paracl.device import select_device
from paracl.io import atomic_dir, write_json
from paracl.models import resolve_model
from paracl.roundtrip import sts_scorer
from paracl.stage import InputError, run

log = logging.getLogger("train_sts_scorer")

DATA = {
    "en": (
        sts_scorer.read_stsb,
        {s: f"data/raw/stsbenchmark/original/sts-{s}.csv" for s in ("train", "dev", "test")},
    ),
    "ja": (
        sts_scorer.read_jsts,
        {
            "train": "data/raw/jglue/jsts-v1.3/train-v1.3.json",
            "dev": "data/raw/jglue/jsts-v1.3/valid-v1.3.json",
            "test": "data/raw/jglue/jsts-v1.3/test-v1.3.json",
        },
    ),
}
OUT = Path("models/sts_scorer")
METRICS = Path("metrics/roundtrip/sts_scorer.json")
PAPER_BASE = "microsoft/deberta-v3-large"


def main(params: dict) -> None:
    cfg = params["train_sts_scorer"]
    lang = params["lang"]
    reader, files = DATA[lang]
    try:
        splits = {name: reader(path) for name, path in files.items()}
    except sts_scorer.StsDataError as err:
        raise InputError(str(err)) from None
    except FileNotFoundError as err:
        raise InputError(f"{err.filename}: not found (run the fetch stage)") from None
    train = splits["train"]
    if cfg["max_train_pairs"] is not None and len(train) > cfg["max_train_pairs"]:
        n = cfg["max_train_pairs"]
        train = sts_scorer.StsPairs(train.first[:n], train.second[:n], train.score[:n])
    resolved = resolve_model(cfg["base_model"])
    device = str(select_device(params["device"]))
    log.info(
        "base %s (%s); %d train pairs; device %s",
        resolved.model_id,
        resolved.source,
        len(train),
        device,
    )

    runs, best, best_model = [], None, None
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paracl-sts-") as tmp_work:
        work = Path(tmp_work)
        for i in range(cfg["n_seeds"]):
            seed = params["seed"] + i
            t0 = time.perf_counter()
            model, dev = sts_scorer.train_one(
                resolved.path,
                train,
                splits["dev"],
                work,
                seed,
                cfg["epochs"],
                cfg["batch_size"],
                cfg["lr"],
                cfg["max_length"],
                device,
            )
            runs.append({"seed": seed, "dev": dev, "seconds": round(time.perf_counter() - t0, 1)})
            log.info("seed %d: dev spearman %.2f", seed, dev["spearman"])
            if best is None or dev["spearman"] > best["dev"]["spearman"]:
                best, best_model = runs[-1], model
    test = splits["test"]
    test_scores = sts_scorer.correlations(
        sts_scorer.predict(best_model, list(zip(test.first, test.second, strict=True))), test.score
    )
    with atomic_dir(OUT) as tmp:
        best_model.save_pretrained(str(tmp))
    write_json(
        {
            "lang": lang,
            "base_model": resolved.describe(),
            "paper_base_model": PAPER_BASE,
            "same_base_as_paper": resolved.model_id == PAPER_BASE,
            "n_train": len(train),
            "n_dev": len(splits["dev"]),
            "n_test": len(test),
            "runs": [{k: v for k, v in r.items() if k != "seconds"} for r in runs],
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
