"""Stage train_paraphraser: tagged pairs → a paraphraser with the tags as tokens (BART as
in the paper, or a decoder-only causal LM offline: paracl.parts.paraphraser).

    python stages/train_paraphraser.py TAGGED MODEL METRICS LOSS_CSV

The work is paracl.stages.train_paraphraser.
"""

from paracl.core.stage import run
from paracl.stages.train_paraphraser import Params, main

if __name__ == "__main__":
    run(main, Params)
