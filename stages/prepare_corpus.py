"""Stage prepare_corpus: data/raw/<wiki> → the sentence corpus + metrics.

    python stages/prepare_corpus.py <corpus out> <metrics.json>

The source is `prepare_corpus.input[lang]` (a path under data/raw, or a user's own file
under data/own/corpus); the work is
paracl.stages.prepare_corpus.
"""

from paracl.core.stage import run
from paracl.stages.prepare_corpus import Params, main

if __name__ == "__main__":
    run(main, Params)
