"""Stage rank_fluency: keep each sentence's lowest-perplexity candidate as its paraphrase.

    python stages/rank_fluency.py <candidates> <rules> <pairs out> <metrics.json>

Perplexity comes from a causal LM (`rank_fluency.model[lang]`, resolved offline by
paracl.core.models; the metrics say which weights ran). `max_sentences` caps how many
sentences are scored (the first ones with candidates) so that a CPU run stays short.
The pairs are a resumable shard directory (paracl.stages.rank_fluency.rank_candidates).
The rule table's metadata holds ppdb_substitute's metrics, repeated in this stage's.
"""

from paracl.core.stage import run
from paracl.stages.rank_fluency import Params, main

if __name__ == "__main__":
    run(main, Params)
