"""Stage adapt_t5: corpus → a T5 adapted by span-corruption denoising (JCSE §3.2, §4.4).

    python stages/adapt_t5.py <corpus> <t5 out> <metrics.json> <curve.csv> <curve.png>

With `adapt_t5.enabled: false` the base model is saved unchanged, so the corrupt stage
always reads the same directory; its paracl_t5.json says what it is
(paracl.negatives.adapt.adapt_corpus). A causal LM (the default) is not adapted: the
directory gets only paracl_t5.json naming it, in well under a second.
"""

from paracl.io import write_json
from paracl.negatives.adapt import adapt_corpus, write_curve
from paracl.stage import args, run


def main(params: dict) -> None:
    paths = args("corpus", "model", "metrics", "curve_csv", "curve_png")
    metrics, curve = adapt_corpus(paths.corpus, paths.model, params)
    write_curve(curve, paths.curve_csv, paths.curve_png)
    write_json(metrics, paths.metrics)


if __name__ == "__main__":
    run(main)
