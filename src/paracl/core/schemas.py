"""The Parquet schema of every artifact the pipeline writes, in one place.

A stage writes with `paracl.core.io.write_parquet(df, path, schemas.X)` and the next stage
reads with `read_parquet(path, schemas.X)`, which names the file and the column when
an artifact does not match. Add a schema here when you add a stage.
"""

import pyarrow as pa

# prepare_corpus → data/corpus/sentences.parquet
CORPUS = pa.schema(
    [
        ("id", pa.string()),  # stable sentence id: <doc_id>-<n>
        ("doc_id", pa.string()),
        ("title", pa.string()),  # article title ("" where the source has none)
        ("text", pa.string()),  # the sentence as it appears in the source
        ("tokens", pa.list_(pa.string())),  # Moses (en) or MeCab (ja) tokens
        ("n_words", pa.int32()),
        ("lang", pa.string()),
    ]
)

# ppdb_substitute → data/ppdb/rules.parquet: the dictionary rules kept (p >= theta)
PPDB_RULES = pa.schema(
    [
        ("source", pa.string()),  # phrase s as in the dictionary
        ("target", pa.string()),  # phrase d
        ("prob", pa.float64()),  # p(d|s) (a stand-in for the offline dictionaries)
        ("extra", pa.string()),  # JSON: format-specific fields (LHS, entailment, …)
        ("line", pa.int64()),  # line number in the dictionary file
    ]
)

# ppdb_substitute → data/ppdb/candidates.parquet: one row per paraphrase candidate
PPDB_CANDIDATES = pa.schema(
    [
        ("id", pa.string()),  # corpus sentence id
        ("text", pa.string()),  # the corpus sentence
        ("candidate", pa.string()),  # the sentence with rule(s) applied, detokenised
        ("rule_sources", pa.list_(pa.string())),  # s of each rule applied, left to right
        ("rule_targets", pa.list_(pa.string())),  # d of each rule applied
        ("rule_probs", pa.list_(pa.float64())),  # p(d|s) of each rule applied
        ("n_candidates", pa.int32()),  # candidates of this sentence
    ]
)

# rank_fluency → data/ppdb/pairs.parquet: the lowest-perplexity candidate per sentence
PPDB_PAIRS = pa.schema(
    [
        ("id", pa.string()),
        ("text", pa.string()),
        ("paraphrase", pa.string()),
        ("rule_sources", pa.list_(pa.string())),
        ("rule_targets", pa.list_(pa.string())),
        ("rule_probs", pa.list_(pa.float64())),
        ("perplexity", pa.float64()),  # of the paraphrase under the fluency LM
        ("n_candidates", pa.int32()),
    ]
)

# corrupt → data/negatives/negatives.parquet: one row per (anchor, generated negative)
NEGATIVES = pa.schema(
    [
        ("id", pa.string()),  # the anchor's corpus id (several rows per anchor)
        ("text", pa.string()),  # the anchor sentence
        ("negative", pa.string()),  # the anchor with its noun chunks replaced by T5 fills
        ("masked", pa.string()),  # the T5 input: chunks replaced by <extra_id_N>
        ("chunks", pa.list_(pa.string())),  # the original chunks, in sentinel order
        ("fills", pa.list_(pa.string())),  # T5's fill per sentinel ("" = missing, kept original)
        ("rank", pa.int32()),  # rank among the beam's return sequences (0 = best)
        ("score", pa.float32()),  # beam score: length-normalised log-probability
        ("n_missing", pa.int32()),  # sentinels T5 gave no fill for
        ("n_extra", pa.int32()),  # fills for sentinels the input did not have
    ]
)

# roundtrip → data/roundtrip/candidates.parquet (shard dir): 4 candidates per sentence
ROUNDTRIP_CANDIDATES = pa.schema(
    [
        ("id", pa.string()),  # the corpus sentence id (several rows per sentence)
        ("candidate", pa.int32()),  # forward setting index × n settings + backward index
        ("text", pa.string()),  # the source sentence
        ("pivot", pa.string()),  # its translation into the pivot language
        ("paraphrase", pa.string()),  # the pivot translated back
        ("forward", pa.string()),  # decoding setting: greedy | k<top_k>_T<temperature>
        ("backward", pa.string()),
    ]
)

# ebsim_retrieve → data/ebsim/<corpus>.parquet: EBSIM's retrieval (§3.2), one row per document
EBSIM_RANKING = pa.schema(
    [
        ("doc_id", pa.string()),
        ("title", pa.string()),
        ("ranked", pa.list_(pa.string())),  # its sentences, most similar to the title first
        # relevant_1's words, a masked one null (Eq. 3); the whole list null where no
        # word reaches eta (the document gives no structure-level triple)
        ("masked", pa.list_(pa.string())),
    ]
)

# tag → data/roundtrip/tagged.parquet: high-quality pairs sampled evenly over 48 tag cells
ROUNDTRIP_TAGGED = pa.schema(
    [
        ("id", pa.string()),
        ("candidate", pa.int32()),
        ("text", pa.string()),
        ("paraphrase", pa.string()),
        ("sim", pa.float64()),  # cross-encoder STS ×100 on the symbol-stripped pair
        ("bleu", pa.float64()),  # sentence BLEU ×100, stripped and lower-cased
        ("sim_tag", pa.string()),  # <SIM70> … <SIM95>
        ("bleu_tag", pa.string()),  # <BLEU0_5>, <BLEU10> … <BLEU40>
        ("split", pa.string()),  # train | dev | test
    ]
)

# generate_paraphrases → data/paraphraser/generated.parquet: controlled paraphrases
GENERATED_PARAPHRASES = pa.schema(
    [
        ("id", pa.string()),  # the corpus sentence id (one row per sentence and tag pair)
        ("text", pa.string()),
        ("paraphrase", pa.string()),
        ("tags", pa.string()),  # the requested tags, e.g. <SIM95><BLEU20>
        ("sim", pa.float64()),  # measured like the tagger: STS ×100 …
        ("bleu", pa.float64()),  # … and sentence BLEU ×100
        ("n_input_tokens", pa.int32()),
        ("n_output_tokens", pa.int32()),
    ]
)

# tag → data/roundtrip/scored.parquet (shard dir): every round-trip candidate, scored
ROUNDTRIP_SCORED = pa.schema(
    list(ROUNDTRIP_CANDIDATES)
    + [
        ("sim", pa.float64()),  # null where dropped
        ("bleu", pa.float64()),
        ("sim_tag", pa.string()),  # null: not high quality (or dropped)
        ("bleu_tag", pa.string()),
        ("dropped", pa.string()),  # null (scored) | empty | duplicate (same id+paraphrase)
        ("heatmap", pa.bool_()),  # scored and long enough for the heatmaps
    ]
)

# -- artifact schemas above this line --
