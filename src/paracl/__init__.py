"""paracl: contrastive-learning data, training and evaluation for sentence encoders."""

__version__ = "0.1.0"
