"""Controllable paraphrasing from round-trip translation (paper: controllable-paraphrase-roundtrip-ja).

translate      round-trip translation with temperature + top-k sampling, sharded (§3.2, §4.1)
sts_scorer     a cross-encoder fine-tuned on STS-B / JSTS: semantic similarity ×100 (§3.1)
text           symbol stripping and word counts, shared by tagging and the heatmaps (§3.1)
tagging        sentence BLEU, <SIMxx><BLEUxx> bins and grammar, balanced splits (§3.3, §4.1)
scoring        the tag stage at scale: candidates scored shard by shard, one streaming pass
heatmap        the SIM×BLEU distribution plots of Figures 1 and 3
paraphraser    BART with the tags as special tokens: training and controlled generation (§4.2)
generation     controlled paraphrases for a corpus sample, shard by shard
tag_adherence  whether generated paraphrases land in their requested cell (Figure 3)
"""
