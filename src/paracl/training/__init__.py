"""Contrastive training of sentence encoders, one method per DVC stage (issue 6).

- data.py: any input artifact -> (anchor, positive, negative) examples, checked
- encoder.py: build / save the SentenceTransformer (mean or [CLS]+MLP pooling)
- losses/: the papers' losses that sentence-transformers lacks, one per file
- objectives.py, ebsim.py: what a step optimises per method family
- grad_cache.py: exact large-batch training in mini-batches (no shrunken negatives)
- mining.py: mega-batch hard-negative mining (Algorithm 2)
- trainer.py: the loop (seeds, autocast, early stopping on dev.py's STS Spearman)
- methods.py: method names -> objectives; `train_method` is what the stage runs
"""
