"""Shared test set-up: a non-interactive matplotlib backend and offline reference libraries."""

import os

import matplotlib
import pytest

# In-process only: an MPLBACKEND variable would leak into nbval's kernels and hide their figures.
matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # references load from local folders only
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_tiny_config(**overrides):
    """A tiny BertConfig (2 layers, 32 hidden, 2 heads, 64 positions) for fast tests; kwargs override."""
    from minibert.config import BertConfig

    sizes = dict(
        vocab_size=60,
        hidden_size=32,
        num_layers=2,
        num_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    return BertConfig(**{**sizes, **overrides})


@pytest.fixture
def tiny_config():
    """make_tiny_config, as a fixture."""
    return make_tiny_config
