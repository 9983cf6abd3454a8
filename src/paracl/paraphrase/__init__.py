"""Paraphrase positives from a paraphrase dictionary (PPDB paper, §3.2 and Figure 1).

- `dictionaries`: readers for PPDB 2.0, EhiMerPPDB, plain TSV and the two offline
  resources of this machine (PPDB 2.0 human-labelled sample, Sudachi synonyms), all
  into one rule table (source, target, prob, extra).
- `substitute`: indexed phrase matching on corpus tokens and candidate generation (the
  ppdb_substitute stage's work).
- `fluency`: batched causal-LM perplexity, to keep the most fluent candidate (the
  rank_fluency stage's work); whole-sentence shards come from
  `paracl.distributed.sharded.group_shards`.
"""
