"""Stage ppdb_substitute: corpus sentences + paraphrase dictionary → candidates.

    python stages/ppdb_substitute.py <corpus> <rules out> <candidates out> <metrics.json>

Keeps the rules of `ppdb_substitute.dictionary[lang]` with p(d|s) >= `theta` and writes
every sentence's substitution candidates (PPDB paper §3.2, Figure 1) as a resumable
shard directory (paracl.stages.ppdb_substitute.substitute_corpus). The rule table carries
this stage's metrics in its metadata, for rank_fluency's metrics.
"""

from paracl.core.stage import run
from paracl.stages.ppdb_substitute import Params, main

if __name__ == "__main__":
    run(main, Params)
