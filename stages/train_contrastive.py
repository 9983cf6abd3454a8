"""DVC stage train_contrastive@<run>: train one sentence encoder.

    python stages/train_contrastive.py <run> <encoder dir> <metrics.json> <curves dir>

The run is an entry of train_contrastive.runs (a method and one of its seeds, written by
`paracl expand`); the method is train_contrastive.methods.<method>: its input, its loss,
the loss's own params and the shared keys it sets for itself (paracl.parts.training.methods).
Writes the encoder (a SentenceTransformer folder with its model card), the training
metrics and the training curves (dvclive TSVs + a PNG). `train_contrastive.processes: N`
relaunches it under torchrun on N processes; a killed run resumes from its checkpoint
(paracl.stages.train_contrastive).
"""

from paracl.core.stage import run
from paracl.stages.train_contrastive import Params, main

if __name__ == "__main__":
    run(main, Params)
