"""Stage generate_paraphrases: corpus sentences × requested tags → controlled paraphrases.

    python stages/generate_paraphrases.py CORPUS MODEL SCORER OUT BASELINE METRICS \
        HEATMAP_DIR HEATMAP_PNG

Each output is scored as the tagger scores candidates, so the metrics and heatmaps (paper
Figure 3) show whether the tags were obeyed (paracl.parts.tags.adherence), next to the
same paraphraser prompted with no tags (BASELINE, with `baseline: true`). A seeded
sample of `max_sentences` is generated shard by shard (resumable; Ray actors on
`executor: ray`, each loading the paraphraser and the scorer once: see
paracl.stages.generate_paraphrases); output bytes depend on shard_size, not on the engine.
"""

from paracl.core.stage import run
from paracl.stages.generate_paraphrases import Params, main

if __name__ == "__main__":
    run(main, Params)
