"""Stage fetch: raw datasets → data/raw/ (from the mirror or canonical URLs).

python stages/fetch.py <raw dir> <metrics.json>
"""

from paracl.core.stage import run
from paracl.stages.fetch import Params, main

if __name__ == "__main__":
    run(main, Params)
