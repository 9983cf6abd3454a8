"""The train_paraphraser stage: tagged pairs → a paraphraser with the tags as tokens.

BART as in the paper, or a decoder-only causal LM offline: the model family and its
fine-tuning are shared parts (paracl.parts.paraphraser, which generate_paraphrases loads).
The model directory also holds paraphraser.INFO_FILE (what it was trained from and on how
many pairs), so generate_paraphrases knows when there was nothing to train on.
"""

from __future__ import annotations

from paracl.core import schemas
from paracl.core.device import seed_everything, select_device
from paracl.core.io import atomic_dir, atomic_path, read_parquet
from paracl.core.key_figures import write_metrics
from paracl.core.params import Lang, RunSettings, RunWide, Section, param
from paracl.core.stage import args

# -- the stage's contract: what it reads of params.yaml (paracl.core.params) --


class TrainParaphraser(Section):
    base_model: dict[Lang, str] = param(help="hub id per language (seq2seq or causal LM)")
    lr: float = param(min=0.0, max=1.0)
    batch_size: int = param(min=1)
    max_epochs: int = param(min=1)
    patience: int = param(min=1)
    max_length: int = param(min=8)
    min_train_pairs: int = param(min=1, help="fewer train pairs: saved untrained")
    max_train_pairs: int | None = param(min=1, help="seeded train sample; null = all")
    train_layers: int | None = param(min=1, help="top layers trained; null = all")
    freeze_embeddings: bool = param(help="decoder-only: vocabulary embeddings fixed")
    train_new_tokens: bool = param(help="with frozen embeddings: tag rows still train")
    threads: int | None = param(min=1, max=256, help="torch CPU threads")


class Params(RunWide):
    """What stage train_paraphraser reads of params.yaml: the run-wide keys and these."""

    train_paraphraser: TrainParaphraser


def train(cfg: dict, run: RunSettings, tagged: str, out: str, loss_csv: str) -> dict:
    """Fine-tune `train_paraphraser.base_model` (`cfg`: the train_paraphraser section) on
    the pairs at `tagged`; save it to `out` and its loss curve to `loss_csv` (atomically);
    return the metrics."""
    from paracl.parts import paraphraser  # torch: loaded when the stage trains

    seed_everything(run.seed)
    device = select_device(run.device)
    pairs = read_parquet(tagged, schemas.ROUNDTRIP_TAGGED)
    trained = paraphraser.fine_tune(
        pairs, cfg, run.seed, device, source=tagged, lang=run.lang, precision=run.precision
    )
    with atomic_dir(out) as tmp:
        trained.save(tmp)
    with atomic_path(loss_csv) as tmp:
        trained.loss_curve().to_csv(tmp, index=False)
    return trained.metrics()


# dvc.yaml's metrics (paracl.core.key_figures): the best epoch's dev loss
KEY_FIGURES = ("best_dev_loss",)


def main(params: dict) -> None:
    paths = args("tagged", "model", "metrics", "loss_csv")
    cfg, settings = params["train_paraphraser"], RunSettings.of(params)
    metrics = train(cfg, settings, paths.tagged, paths.model, paths.loss_csv)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)
