"""Stage roundtrip: corpus sentences → round-trip translation candidates (a shard directory).

    python stages/roundtrip.py CORPUS CANDIDATES METRICS [MODE]

Each sampled sentence is translated to the pivot language and back with every decoding
setting in each direction (paper §3.2: 2 × 2 = 4 candidates a sentence), shard by shard
(resumable; Ray actors on `executor: ray`, each loading both translators once); see
paracl.stages.roundtrip (the translators: paracl.parts.translate). MODE (sample | greedy)
overrides `roundtrip.mode`: stage roundtrip_baseline@greedy runs `greedy`, the paper's
round-trip baseline (§4.4: the same translators, greedy decoding), on the same seeded
sample.
"""

from paracl.core.stage import run
from paracl.stages.roundtrip import Params, main

if __name__ == "__main__":
    run(main, Params)
