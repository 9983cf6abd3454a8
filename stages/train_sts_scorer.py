"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → the SIM scorer (best of n seeds on dev).

    python stages/train_sts_scorer.py STSB_DIR JSTS_DIR SCORER METRICS

`kind` picks a bi-encoder (offline default) or the paper's cross-encoder; the kind is
saved with the model, so tag and generate_paraphrases load either (roundtrip/sts_scorer.py).
"""

import logging
import time

from paracl.core.device import select_device
from paracl.core.io import atomic_dir
from paracl.core.key_figures import write_metrics
from paracl.core.models import resolve_model
from paracl.core.params import ParamsError
from paracl.core.stage import args, run
from paracl.parts import sts_scorer

log = logging.getLogger("train_sts_scorer")
# dvc.yaml's metrics (paracl.core.key_figures): the best seed's dev score
KEY_FIGURES = ("dev.spearman",)


def main(params: dict) -> None:
    paths = args("stsb", "jsts", "scorer", "metrics")
    cfg, lang, seed = params["train_sts_scorer"], params["lang"], params["seed"]
    if cfg["kind"] == "cross_encoder" and cfg["epochs"] == 0:
        raise ParamsError("'train_sts_scorer.epochs' must be > 0 for kind cross_encoder")
    splits = sts_scorer.read_splits({"en": paths.stsb, "ja": paths.jsts}[lang], lang)
    train = sts_scorer.sample_pairs(splits["train"], cfg["max_train_pairs"], seed)
    base = resolve_model(cfg["base_model"])
    device = str(select_device(params["device"]))
    started = time.perf_counter()
    best = sts_scorer.train_best_of_seeds(
        cfg["kind"], base, train, splits["dev"], cfg, seed, device, params["precision"]
    )
    test = sts_scorer.correlations(
        sts_scorer.predict(best.model, splits["test"].pairs()), splits["test"].score
    )
    with atomic_dir(paths.scorer) as tmp:
        info = {"base_model": base.model_id, "seed": best.seed}
        sts_scorer.save_scorer(best.model, cfg["kind"], tmp, info)
    record = sts_scorer.run_metrics(cfg, lang, base, splits, train, best, test)
    write_metrics(record, paths.metrics, KEY_FIGURES)
    log.info(
        "best seed %d: dev spearman %.2f, test spearman %.2f (%.0f s)",
        best.seed,
        best.dev["spearman"],
        test["spearman"],
        time.perf_counter() - started,
    )


if __name__ == "__main__":
    run(main)
