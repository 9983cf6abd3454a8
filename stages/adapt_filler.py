"""Stage adapt_filler: target corpus → the blank filler adapted to it (JCSE §3.2, §4.4).

    python stages/adapt_filler.py <corpus> <filler out> <metrics.json> <curve.csv> <curve.png>

A T5 is adapted by span-corruption denoising, a causal LM (the default) by continued
next-token training; the metrics say which path ran (`filler`, `objective`) and give the
held-out dev perplexity before and after. With `adapt_filler.enabled: false` a T5 is
saved unchanged and a causal LM only recorded, so the corrupt stage always reads the
same directory; its paracl_filler.json says what it is
(paracl.stages.adapt_filler.adapt_corpus).
"""

from paracl.core.stage import run
from paracl.stages.adapt_filler import Params, main

if __name__ == "__main__":
    run(main, Params)
