"""The errors that mean "what you fed in is wrong", as opposed to "the code is wrong".

Why a module of its own: library code raises these where it knows the culprit (a file
and line, a param, a model directory), and the stage runner (`paracl.core.stage.run`) turns
exactly these, and nothing broader, into one `error: ...` line and exit status 1. The
library must be able to raise them without importing the stage runner.

Every such error (ParamsError, ArtifactError, FetchError, ModelNotFoundError, InputError)
derives from `UserError`; its message names the culprit on one line.
"""

from __future__ import annotations


class UserError(Exception):
    """Bad input (params, data files, artifacts, models); the message names the culprit."""


class ParamsError(UserError, ValueError):
    """params.yaml does not match the schema; the message names the key. Here, not in
    paracl.core.params, so that code which only checks one value (a device, a pooling)
    does not load the whole schema."""


class InputError(UserError, ValueError):
    """Bad input data: the message names the file and, where known, the line."""
