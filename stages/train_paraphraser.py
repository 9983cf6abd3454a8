"""Stage train_paraphraser: tagged pairs → models/paraphraser/ (BART + tag tokens).

The model directory also holds `paracl_paraphraser.json` (what it was trained from and
on how many pairs), so generate_paraphrases knows when there was nothing to train on.
"""

import json
import logging
from pathlib import Path

import pandas as pd

from paracl import schemas
from paracl.device import seed_everything, select_device
from paracl.io import atomic_dir, atomic_path, read_parquet, write_json
from paracl.roundtrip import paraphraser
from paracl.roundtrip.standin import seq2seq_model
from paracl.stage import run

log = logging.getLogger("train_paraphraser")

TAGGED = Path("data/roundtrip/tagged.parquet")
OUT = Path("models/paraphraser")
INFO = "paracl_paraphraser.json"
METRICS = Path("metrics/roundtrip/paraphraser.json")
LOSS_CSV = Path("metrics/roundtrip/paraphraser_loss.csv")


def main(params: dict) -> None:
    cfg = params["train_paraphraser"]
    seed_everything(params["seed"])
    device = select_device(params["device"])
    pairs = read_parquet(TAGGED, schemas.ROUNDTRIP_TAGGED)
    splits = {
        s: pairs[pairs["split"] == s].reset_index(drop=True) for s in ("train", "dev", "test")
    }
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    with seq2seq_model(cfg["base_model"], seed=params["seed"]) as (path, desc):
        tokenizer = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForSeq2SeqLM.from_pretrained(str(path)).to(device)
    added = paraphraser.add_tag_tokens(tokenizer, model)
    history: list[dict] = []
    test_loss = None
    if len(splits["train"]) == 0:
        log.warning(
            "no training pairs in %s (%d rows in all): the paraphraser is saved untrained and "
            "generate_paraphrases will produce nothing",
            TAGGED,
            len(pairs),
        )
    else:
        if len(splits["dev"]) == 0:
            log.warning("no dev pairs: early stopping watches the training loss instead")
        history = paraphraser.train(
            model,
            tokenizer,
            splits["train"],
            splits["dev"],
            lr=cfg["lr"],
            batch_size=cfg["batch_size"],
            max_epochs=cfg["max_epochs"],
            patience=cfg["patience"],
            max_length=cfg["max_length"],
            seed=params["seed"],
            device=device,
        )
        if len(splits["test"]):
            test_loss = paraphraser.evaluate_loss(
                model, tokenizer, splits["test"], cfg["batch_size"], cfg["max_length"], device
            )
    info = {
        "base_model": desc,
        "stand_in": desc["stand_in"],
        "trained": bool(history),
        "n_train": len(splits["train"]),
        "n_dev": len(splits["dev"]),
        "n_test": len(splits["test"]),
        "tags_added": added,
    }
    with atomic_dir(OUT) as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / INFO).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
    best = min(history, key=lambda h: h["dev_loss"]) if history else None
    write_json(
        {
            **info,
            "epochs_run": len(history),
            "best_epoch": best["epoch"] if best else None,
            "best_dev_loss": best["dev_loss"] if best else None,
            "test_loss": test_loss,
            "history": history,
        },
        METRICS,
    )
    with atomic_path(LOSS_CSV) as tmp:
        pd.DataFrame(history, columns=["epoch", "train_loss", "dev_loss"]).to_csv(tmp, index=False)


if __name__ == "__main__":
    run(main)
