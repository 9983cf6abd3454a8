"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → the SIM scorer (best of n seeds on dev).

    python stages/train_sts_scorer.py STSB_DIR JSTS_DIR SCORER METRICS

The work is paracl.stages.train_sts_scorer (`kind`: a bi-encoder, the offline default, or
the paper's cross-encoder).
"""

from paracl.core.stage import run
from paracl.stages.train_sts_scorer import Params, main

if __name__ == "__main__":
    run(main, Params)
