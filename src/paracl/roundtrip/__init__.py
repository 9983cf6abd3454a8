"""Controllable paraphrasing from round-trip translation (paper: controllable-paraphrase-roundtrip-ja).

translate           round-trip translation with temperature + top-k sampling: a seq2seq
                    MT model or a causal LM prompted to translate (§3.2, §4.1)
sts_scorer          the semantic-similarity scorer, a bi-encoder or the paper's
                    cross-encoder fine-tuned on STS-B / JSTS: SIM = its score ×100 (§3.1)
text                symbol stripping and word counts, shared by tagging and the heatmaps
tagging             sentence BLEU, <SIMxx><BLEUxx> bins and grammar, balanced splits (§3.3)
scoring             the tag stage at scale: candidates scored shard by shard, one pass
heatmap             the SIM×BLEU distribution plots of Figures 1 and 3
paraphraser         the tag-controlled paraphraser: training and generation (§4.2), over
paraphraser_seq2seq   the paper's BART, or
paraphraser_causal    a decoder-only LM (the offline default),
paraphraser_freeze    a frozen vocabulary's new tokens (what trains: paracl.freeze),
paraphraser_window    the 0.75–1.5× output-length window
generation          controlled paraphrases for a corpus sample, shard by shard
tag_adherence       whether generated paraphrases land in their requested cell (Figure 3)
"""
