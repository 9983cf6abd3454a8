"""Stage prepare_domain: a target-domain corpus → its sentences, and the main corpus with them.

    python stages/prepare_domain.py <name> <main corpus> <domain out> <mix out> <metrics.json>

The input is `prepare_domain.corpora[name]`; the work (and what the mix is for) is
paracl.stages.prepare_domain.
"""

from paracl.core.stage import run
from paracl.stages.prepare_domain import Params, main

if __name__ == "__main__":
    run(main, Params)
