"""Stage train_paraphraser: tagged pairs → a paraphraser with the tags as tokens (BART as
in the paper, or a decoder-only causal LM offline: paracl.parts.paraphraser).

    python stages/train_paraphraser.py TAGGED MODEL METRICS LOSS_CSV

The work is paracl.stages.train_paraphraser.
"""

from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.train_paraphraser import train

# dvc.yaml's metrics (paracl.core.key_figures): the best epoch's dev loss
KEY_FIGURES = ("best_dev_loss",)


def main(params: dict) -> None:
    paths = args("tagged", "model", "metrics", "loss_csv")
    cfg, settings = params["train_paraphraser"], RunSettings.of(params)
    metrics = train(cfg, settings, paths.tagged, paths.model, paths.loss_csv)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
