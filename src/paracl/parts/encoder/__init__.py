"""Sentence encoders: one side builds and saves them, the other loads and embeds.

- `build`: the SentenceTransformer to train (pooling, prompt, max length) and how it is
  saved, so that evaluate scores what training saved;
- `forward`: one forward pass with autograd, as `encode` embeds (training, mining);
- `embed`: load an encoder dir; embed each unique sentence once (cache).
"""
