"""Stage train_sts_scorer: STS-B (en) / JSTS (ja) → the SIM scorer (best of n seeds on dev).

    python stages/train_sts_scorer.py STSB_DIR JSTS_DIR SCORER METRICS

The work is paracl.stages.train_sts_scorer (`kind`: a bi-encoder, the offline default, or
the paper's cross-encoder).
"""

from pathlib import Path

from paracl.core.key_figures import write_metrics
from paracl.core.languages import profile
from paracl.core.params import ParamsError, RunSettings
from paracl.core.stage import args, run
from paracl.stages.train_sts_scorer import train_scorer

# dvc.yaml's metrics (paracl.core.key_figures): the best seed's dev score
KEY_FIGURES = ("dev.spearman",)


def main(params: dict) -> None:
    paths = args("stsb", "jsts", "scorer", "metrics")
    # dvc.yaml passes every language's set (a dep each): this language's is the folder that
    # holds its STS dev set (STS-B for English, JGLUE for Japanese)
    dev = Path(profile(params["lang"]).sts_dev)
    data = next((d for d in (paths.stsb, paths.jsts) if dev.is_relative_to(d)), None)
    if data is None:
        raise ParamsError(f"lang {params['lang']!r}: its STS dev set {dev} is in neither of "
                          f"the stage's inputs ({paths.stsb}, {paths.jsts}; dvc.yaml)")  # fmt: skip
    metrics = train_scorer(params["train_sts_scorer"], RunSettings.of(params), data, paths.scorer)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
