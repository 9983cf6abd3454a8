"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → the SIM scorer (best of n seeds on dev).

    python stages/train_sts_scorer.py STSB_DIR JSTS_DIR SCORER METRICS

The work is paracl.stages.train_sts_scorer (`kind`: a bi-encoder, the offline default, or
the paper's cross-encoder).
"""

from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.train_sts_scorer import train_scorer

# dvc.yaml's metrics (paracl.core.key_figures): the best seed's dev score
KEY_FIGURES = ("dev.spearman",)


def main(params: dict) -> None:
    paths = args("stsb", "jsts", "scorer", "metrics")
    # the language's set (tests/pipeline/test_bad_inputs.py reads this table)
    data = {"en": paths.stsb, "ja": paths.jsts}[params["lang"]]
    metrics = train_scorer(params["train_sts_scorer"], RunSettings.of(params), data, paths.scorer)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
