"""Controllable paraphrasing from round-trip translation (paper: controllable-paraphrase-roundtrip-ja).

translate     round-trip translation with temperature + top-k sampling (§3.2, §4.1)
sts_scorer    a cross-encoder fine-tuned on STS-B / JSTS: semantic similarity ×100 (§3.1)
tagging       symbol stripping, sentence BLEU, <SIMxx><BLEUxx> bins, balanced splits (§3.3, §4.1)
heatmap       the SIM×BLEU distribution plots of Figures 1 and 3
paraphraser   BART with the tags as special tokens: training and controlled generation (§4.2)
"""
