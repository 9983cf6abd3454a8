"""Stage evaluate: score one encoder on one embedding job (no training).

    python stages/evaluate.py <run> <task> <encoder dir> <training metrics> <out.json>

dvc.yaml runs it as a matrix over train_contrastive.runs × evaluate.tasks: unsupervised
STS, cosine-threshold PI, JCSE's JACSTS and QAbot. Fine-tuning tasks are the stage
evaluate_finetune's, so that no fine-tuning setting reruns these scores. The encoder is
the sentence-transformers folder train_contrastive wrote; its training metrics name the
base model that ran (carried into the result).
"""

from paracl.core.stage import run
from paracl.stages.evaluate import Params, main

if __name__ == "__main__":
    run(main, Params)
