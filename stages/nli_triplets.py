"""Stage nli_triplets: the offline English NLI triplets, minus those leaking into STS.

    python stages/nli_triplets.py RAW OUT METRICS

RAW is data/raw (the fetched SICK and STS sets); the params are `nli_triplets`; see
paracl.stages.nli_triplets.
"""

from paracl.core.stage import run
from paracl.stages.nli_triplets import Params, main

if __name__ == "__main__":
    run(main, Params)
