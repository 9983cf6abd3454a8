"""Stage paraphrase_pairs: a pair or triplet dataset's chosen columns, paraphrased.

    python stages/paraphrase_pairs.py JOB PARAPHRASER OUT METRICS

JOB names an entry of `paraphrase_pairs.jobs` (its input, columns, and `by`: the greedy
round trip or a tag cell of the paraphraser in PARAPHRASER); see
paracl.stages.paraphrase_pairs. The round trip's translators are roundtrip's
(paracl.parts.translate).
"""

from paracl.core.stage import run
from paracl.stages.paraphrase_pairs import Params, main

if __name__ == "__main__":
    run(main, Params)
