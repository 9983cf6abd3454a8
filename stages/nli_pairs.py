"""Stage nli_pairs: SICK's 3-way labelled pairs, minus those leaking into a scored STS set.

    python stages/nli_pairs.py RAW OUT METRICS

RAW is data/raw (SICK and the STS sets); the params are `nli_pairs`; see
paracl.stages.nli_pairs.
"""

from paracl.core.stage import run
from paracl.stages.nli_pairs import Params, main

if __name__ == "__main__":
    run(main, Params)
