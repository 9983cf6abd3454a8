"""Stage train_paraphraser: tagged pairs → a paraphraser with the tags as tokens (BART as
in the paper, or a decoder-only causal LM offline: paracl.parts.paraphraser).

    python stages/train_paraphraser.py TAGGED MODEL METRICS LOSS_CSV

The model directory also holds paraphraser.INFO_FILE (what it was trained from and on
how many pairs), so generate_paraphrases knows when there was nothing to train on.
"""

from paracl.core import schemas
from paracl.core.device import seed_everything, select_device
from paracl.core.io import atomic_dir, atomic_path, read_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.stage import args, run
from paracl.parts import paraphraser

# dvc.yaml's metrics (paracl.core.key_figures): the best epoch's dev loss
KEY_FIGURES = ("best_dev_loss",)


def main(params: dict) -> None:
    paths = args("tagged", "model", "metrics", "loss_csv")
    seed = params["seed"]
    seed_everything(seed)
    device = select_device(params["device"])
    pairs = read_parquet(paths.tagged, schemas.ROUNDTRIP_TAGGED)
    trained = paraphraser.fine_tune(
        pairs,
        params["train_paraphraser"],
        seed,
        device,
        source=paths.tagged,
        lang=params["lang"],
        precision=params["precision"],
    )
    with atomic_dir(paths.model) as tmp:
        trained.save(tmp)
    write_metrics(trained.metrics(), paths.metrics, KEY_FIGURES)
    with atomic_path(paths.loss_csv) as tmp:
        trained.loss_curve().to_csv(tmp, index=False)


if __name__ == "__main__":
    run(main)
