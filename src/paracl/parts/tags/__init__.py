"""The round-trip paper's <SIMxx><BLEUxx> tags (§3.3).

- `text`: symbol stripping and word counts, shared by tagging and the heatmaps;
- `tagging`: sentence BLEU, the tag bins and grammar, balanced splits;
- `heatmap`: the SIM×BLEU distribution plots of Figures 1 and 3;
- `adherence`: whether generated paraphrases land in their requested cell (Figure 3).
"""
