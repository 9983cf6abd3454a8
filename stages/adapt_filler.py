"""Stage adapt_filler: target corpus → the blank filler adapted to it (JCSE §3.2, §4.4).

    python stages/adapt_filler.py <corpus> <filler out> <metrics.json> <curve.csv> <curve.png>

A T5 is adapted by span-corruption denoising, a causal LM (the default) by continued
next-token training; the metrics say which path ran (`filler`, `objective`) and give the
held-out dev perplexity before and after. With `adapt_filler.enabled: false` a T5 is
saved unchanged and a causal LM only recorded, so the corrupt stage always reads the
same directory; its paracl_filler.json says what it is
(paracl.stages.adapt_filler.adapt_corpus).
"""

from paracl.core.key_figures import write_metrics
from paracl.core.params import RunSettings
from paracl.core.stage import args, run
from paracl.stages.adapt_filler import OBJECTIVES, adapt_corpus, write_curve

# dvc.yaml's metrics (paracl.core.key_figures): the adapted filler's dev perplexity
KEY_FIGURES = ("dev_perplexity",)


def main(params: dict) -> None:
    paths = args("corpus", "model", "metrics", "curve_csv", "curve_png")
    metrics, curve = adapt_corpus(
        paths.corpus, paths.model, params["adapt_filler"], RunSettings.of(params)
    )
    title = f"{metrics['filler']} filler: {OBJECTIVES[metrics['filler']]} (dev loss)"
    write_curve(curve, paths.curve_csv, paths.curve_png, title)
    write_metrics(metrics, paths.metrics, KEY_FIGURES)


if __name__ == "__main__":
    run(main)
