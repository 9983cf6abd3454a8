"""Contrastive training of sentence encoders (the work of a run: paracl.stages.train_contrastive;
the encoder: paracl.parts.encoder; the losses, and the objective a step optimises:
paracl.parts.losses, which imports nothing from here).

- methods.py: a params entry -> what to train; `train_method` is what the stage runs
- data.py: any input artifact -> (anchor, positive, negative) examples, checked
- trainer.py: the loop (seeds, mixed precision, GradCache, early stopping)
- grad_cache.py: exact large-batch training in mini-batches (no shrunken negatives)
- tokens.py: each training text tokenized once, a step pads its cached rows
- dev.py: the STS-dev Spearman that early stopping and model selection use
- checkpoint.py: resumable training state, and SIGTERM
- parallel.py: what each torchrun process does differently
- card.py: the README.md model card of each saved encoder
"""
