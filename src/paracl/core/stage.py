"""What every stage script shares: logging, params, and clean failure messages.

A stage script is `run(main, Params)`: its module's `main(params)` and the `Params` it
reads of params.yaml (checked alone: paracl.core.params.load_params); the paths it reads and
writes come from dvc.yaml's `cmd:` (`args("corpus", "out")`), not from constants that
would repeat dvc.yaml. Errors that describe
bad input (params, artifacts, data files, models: every `paracl.core.errors.UserError`) end
the stage with one line naming the culprit and exit status 1, instead of a traceback
into library internals. Anything else is a bug and keeps its traceback. Outputs are
written atomically by paracl.core.io, so a failed stage leaves nothing half-written.
"""

from __future__ import annotations

import gc
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from paracl.core.errors import InputError, UserError
from paracl.core.params import ParamsError, Section, load_params

__all__ = ["InputError", "UserError", "args", "one_line", "run"]


def args(*names: str) -> SimpleNamespace:
    """The stage's command-line arguments by name: `args("candidates", "out")` for
    `python stages/tag.py data/a.parquet data/b.parquet` (dvc.yaml's cmd). A wrong count
    is a one-line usage error."""
    values = sys.argv[1:]
    if len(values) != len(names):
        script = Path(sys.argv[0]).as_posix() if sys.argv else "stage"
        usage = " ".join(n.upper() for n in names)
        raise ParamsError(f"usage: python {script} {usage} (got {len(values)} arguments)")
    return SimpleNamespace(**dict(zip(names, values, strict=True)))


def one_line(err: BaseException) -> str:
    """The error's message on one line: the last stderr line is what a user (and a
    wrapper such as `dvc repro`) reads, so it must hold the whole message."""
    return " ".join(str(err).split()) or type(err).__name__


def run(
    main: Callable[[dict], None], schema: type[Section], params_path: str = "params.yaml"
) -> None:
    """Run a stage's main(params) on the keys `schema` declares (its module's Params),
    checked; turn input errors into a one-line message."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    try:
        params = load_params(schema, params_path)
        main(params)
        return
    except UserError as err:
        message = one_line(err)
    # Out of the except block the failed frames are released: progress bars they held
    # close now (and print), so the error stays the last line.
    gc.collect()
    sys.stderr.flush()
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)
