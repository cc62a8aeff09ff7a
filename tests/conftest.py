"""Shared test set-up: a non-interactive matplotlib backend and offline reference libraries."""

import os
import subprocess
import sys

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


def cli(*args: str) -> subprocess.CompletedProcess:
    """`python -m minibert.cli ARGS` run in this process (no interpreter or torch to start): its
    exit status, stdout and stderr, with an uncaught exception's traceback on stderr and status 1,
    as the interpreter would print it. For commands that stop at their arguments or a bad file;
    whole runs and interrupts go through a real process."""
    import contextlib
    import io
    import traceback

    from minibert import cli as entry

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = entry.main(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
            if stop.code is not None and not isinstance(stop.code, int):
                print(stop.code, file=sys.stderr)
        except Exception:  # noqa: BLE001 - reported as the interpreter reports it
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(
        ["minibert", *args], code or 0, out.getvalue(), err.getvalue()
    )
