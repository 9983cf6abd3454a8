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
from paracl.core.params import RunSettings
from paracl.parts import paraphraser


def train(cfg: dict, run: RunSettings, tagged: str, out: str, loss_csv: str) -> dict:
    """Fine-tune `train_paraphraser.base_model` (`cfg`: the train_paraphraser section) on
    the pairs at `tagged`; save it to `out` and its loss curve to `loss_csv` (atomically);
    return the metrics."""
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
