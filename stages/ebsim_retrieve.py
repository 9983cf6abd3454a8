"""Stage ebsim_retrieve@<name>: EBSIM's retrieval (§3.2), once per titled corpus.

    python stages/ebsim_retrieve.py <name> <corpus> <ranking out> <metrics.json>

The corpus is `ebsim_retrieve.corpora[name]` (data/corpus/sentences.parquet of a wiki40b or
jaquad corpus: titled documents). A fixed retriever (`ebsim_retrieve.retriever`, null:
train_contrastive.base_model; mean pooling, never trained) embeds each title and its
sentences and ranks them; relevant_1's words like a title word (>= eta) are masked. No
seed changes any of it, so every ebsim run and seed reads this one ranking (its `input`)
and only draws its negatives (paracl.parts.losses.ebsim_triplet.triples). Before this
stage each run embedded the corpus again. The code: paracl.stages.ebsim_retrieve.
"""

from paracl.core.stage import run
from paracl.stages.ebsim_retrieve import Params, main

if __name__ == "__main__":
    run(main, Params)
