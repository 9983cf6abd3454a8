"""Stage tag: round-trip candidates → SIM/BLEU scores → <SIM><BLEU> tags → balanced splits.

    python stages/tag.py CANDIDATES SCORER SCORED TAGGED METRICS HEATMAP_CSV HEATMAP_PNG

Every candidate is scored shard by shard into SCORED (resumable; Ray actors on
`executor: ray`), then one streaming pass keeps the high-quality pairs for the balanced
dev/test/train split and a seeded sample for the SIM×BLEU heatmap (paper Figure 1);
see paracl.stages.tag.
"""

from paracl.core.stage import run
from paracl.stages.tag import Params, main

if __name__ == "__main__":
    run(main, Params)
