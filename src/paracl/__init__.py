"""paracl: contrastive-learning data, training and evaluation for sentence encoders."""

from importlib.metadata import PackageNotFoundError, version

try:  # one source: pyproject.toml's version, as installed
    __version__ = version("paracl")
except PackageNotFoundError:  # a source tree on PYTHONPATH, never installed
    __version__ = "unknown (not installed)"
