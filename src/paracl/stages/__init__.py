"""One module per DVC stage, named as the stage: its work, what stages/<stage>.py calls.

Stage modules import core and parts, never each other. A variant stage uses its family's
module (roundtrip_baseline: `roundtrip`; corrupt_unadapted: `corrupt`).

- `fetch`, `prepare_corpus`, `prepare_domain`, `roundtrip`, `train_sts_scorer`, `tag`,
  `train_paraphraser`, `generate_paraphrases`, `nli_triplets`, `paraphrase_pairs`,
  `ppdb_substitute`, `rank_fluency`, `adapt_filler`, `corrupt`, `ebsim_retrieve`,
  `train_contrastive`, `evaluate`, `evaluate_finetune`, `summary`.
"""
