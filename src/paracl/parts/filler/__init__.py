"""Hard negatives by noun-chunk corruption (JCSE, §3.2 and §4.4).

Each anchor sentence has its noun chunks (spaCy / GiNZA) blanked out; a filler model
fills the blanks and every filled sentence is a contradictory hard negative for the
anchor. The filler is T5 (the paper's: sentinels, beam search) or a causal LM that sees
both sides of each blank (the offline default, since no T5 weights ship offline); either
is first adapted to the target corpus.

Modules: `adapt` (T5's
span-corruption denoising trainer), `adapt_loop` (the step loop both share), `adapt_causal` (a causal LM's continued next-token
training), `noise` (T5's random span mask), `chunks` (noun chunks), `masking` (sentinels
in, fills out), `generate` (T5's batched beam search), `sequential` (one chunk at a
time, as JCSE's authors' code), `script_chunks` (which blanks and span budget each of
their two scripts uses), `causal` (the causal-LM filler),
`fills` (what counts as a usable fill, and the quality measures), `domain_vocab` (how much
of the new text is the target domain's vocabulary), `pipeline` (anchors → rows).
The stages' work: paracl.stages.adapt_filler and paracl.stages.corrupt.
"""

PAPER_T5 = ("t5-base", "google-t5/t5-base", "sonoisa/t5-base-japanese-v1.1")  # JCSE §4.4
# what the directory holds (written by adapt_filler, read by corrupt)
INFO_FILE = "paracl_filler.json"
