"""What every stage script shares: logging, params, and clean failure messages.

A stage script is `def main(params) -> None` plus `run(main)`. Errors that describe
bad input (params, artifacts, data files, models) end the stage with one line naming
the culprit and exit status 1, instead of a traceback into library internals. Outputs
are written atomically by paracl.io, so a failed stage leaves nothing half-written.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable

from paracl.params import ParamsError, load_params


class InputError(ValueError):
    """Bad input data: the message names the file and, where known, the line."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from paracl.fetch import FetchError
    from paracl.io import ArtifactError
    from paracl.models import ModelNotFoundError

    return (ParamsError, InputError, ArtifactError, FetchError, ModelNotFoundError)


def run(main: Callable[[dict], None], params_path: str = "params.yaml") -> None:
    """Run a stage's main(params); turn input errors into a one-line message."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    try:
        params = load_params(params_path)
        main(params)
    except _user_errors() as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(1)
