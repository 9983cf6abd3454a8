"""Contrastive training of sentence encoders, one method per DVC stage.

- methods.py: a params entry -> what to train; `train_method` is what the stage runs
- run.py: one method's whole run (one process or torchrun, checkpoints, curves)
- data.py: any input artifact -> (anchor, positive, negative) examples, checked
- encoder.py: build the SentenceTransformer to train and save the one evaluate scores
- losses/: the papers' losses, one per file, and the `LOSSES` registry
- ebsim_retrieve.py: EBSIM's retrieval (titles against their sentences), run once per
  titled corpus by stage ebsim_retrieve, before any ebsim run
- objectives.py: what a step optimises on a batch (the trainer's contract)
- trainer.py: the loop (seeds, mixed precision, GradCache, early stopping)
- grad_cache.py: exact large-batch training in mini-batches (no shrunken negatives)
- dev.py: the STS-dev Spearman that early stopping and model selection use
- checkpoint.py: resumable training state, and SIGTERM
- parallel.py: what each torchrun process does differently
- card.py: the README.md model card of each saved encoder
"""
