"""Hard negatives by T5 noun-chunk corruption (JCSE, §3.2 and §4.4).

Each anchor sentence has its noun chunks (spaCy / GiNZA) replaced by unique T5
sentinels; T5 fills the blanks by beam search and every returned sequence, reassembled
into a sentence, is a contradictory hard negative for the anchor. Optionally T5 is
first adapted to the corpus by span-corruption denoising.

Modules: `chunks` (noun chunks), `masking` (sentinels in, fills out), `generate`
(batched beam search), `noise` (T5's random span mask), `adapt` (the denoising
trainer and the adapt_t5 stage's work), `standin` (the small random T5 used offline),
`pipeline` (anchors → rows), `sharded` (the corrupt stage's work, shard by shard).
"""
