"""Stage train_intermediate: one STILTs arm's intermediate training (a 3-way NLI classifier).

    python stages/train_intermediate.py ARM START START_METRICS ENCODER METRICS

dvc.yaml runs it once per arm of train_intermediate.arms, from the encoder of run
train_intermediate.start (models/encoders/<start>), into models/encoders/<arm> without
the classifier; evaluate_finetune then fine-tunes it. See paracl.stages.train_intermediate.
"""

from paracl.core.stage import run
from paracl.stages.train_intermediate import Params, main

if __name__ == "__main__":
    run(main, Params)
