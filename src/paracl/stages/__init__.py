"""One module per DVC stage, named as the stage: its contract and its work.

`paracl.stages.<stage>` holds the stage's section of params.yaml (its schema, and a
`Params` naming every top-level key it reads), its `main`, which stages/<stage>.py runs,
and the building of its parts' configs from the checked section. A stage imports core
and parts, and another stage's module only to read that stage's section (corrupt reads
adapt_filler's); code two stages share lives in paracl.parts (evaluate_finetune and
train_intermediate fine-tune with `parts.finetune`, nli_triplets and nli_pairs read SICK
with `parts.nli`). A variant stage uses its family's module (roundtrip_baseline:
`roundtrip`; corrupt_unadapted: `corrupt`). Code that one stage alone uses is a
sub-package of its stage (train_contrastive's `training`, fetch's `sources`,
ppdb_substitute's `ppdb_rules`). paracl.schema finds every stage here.
"""
