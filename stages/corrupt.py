"""Stage corrupt: target corpus + a filler → hard negatives (a resumable shard dir).

    python stages/corrupt.py <corpus> <filler dir | unadapted> <negatives out> <metrics.json>
        <reference corpus>

Noun chunks (spaCy / GiNZA) of each sampled anchor become blanks. A T5 fills them by
beam search (JCSE §3.2); a causal LM (the offline default, named by the directory's
paracl_filler.json) samples fills with the masked sentence as its prompt and keeps the
hypotheses whose whole sentence it finds most likely (paracl.parts.filler.causal). The
filler is what adapt_filler wrote, or `unadapted`: adapt_filler.model as it is (the
adaptation ablation, `corrupt_unadapted`). Each worker (a Ray actor on `executor: ray`,
the driver process locally) loads the chunker and the filler once and corrupts whole
shards of `corrupt.shard_size` anchors (paracl.stages.corrupt.corrupt_corpus). The
metrics name the model, say `paper_model` and `adapted`, carry the quality measures
(`quality`), and the share of fills in the target domain's vocabulary, the words of the
corpus that are rare in the reference corpus (`domain_vocabulary`; null when the target
is the reference).
"""

from paracl.core.stage import run
from paracl.stages.corrupt import Params, main

if __name__ == "__main__":
    run(main, Params)
