"""Shared test set-up: a non-interactive matplotlib backend and offline reference libraries."""

import os

import matplotlib

# In-process only: an MPLBACKEND variable would leak into nbval's kernels and hide their figures.
matplotlib.use("Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # references load from local folders only
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
