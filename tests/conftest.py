"""Shared test set-up: a non-interactive matplotlib backend, offline reference libraries, and the
helpers several test modules use (a tiny config, synthetic documents, a tiny saved encoder and span
reader, the CLI run in this process, the student edition's nbgrader step run once per input). Test
modules import helpers from here, never from one another."""

import contextlib
import hashlib
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


SYNTHETIC_VOCAB = 60  # ids 0-4 special ([PAD] [UNK] [CLS] [SEP] [MASK]), 5.. ordinary


def synthetic_documents(n_docs: int = 40, seed: int = 0) -> list[list[list[int]]]:
    """Token-id documents for pretraining tests: 20 sentences of 3-8 ids each, every document
    drawn from its own 8 ids below SYNTHETIC_VOCAB, so NSP has topics to tell apart."""
    import torch

    g = torch.Generator().manual_seed(seed)
    docs = []
    for d in range(n_docs):
        base = 5 + (d * 7) % (
            SYNTHETIC_VOCAB - 13
        )  # ids stay below SYNTHETIC_VOCAB  # each document has its own small vocabulary
        docs.append(
            [
                (
                    base
                    + torch.randint(
                        0, 8, (int(torch.randint(3, 9, (1,), generator=g)),), generator=g
                    )
                ).tolist()
                for _ in range(20)
            ]
        )
    return docs


# a few sentences for the retrieval tests (encoders, index, training, distillation, wiki-search)
TEXTS = [
    "the cat sat on the mat",
    "a dog sat on a log and the dog slept on the log all day",
    "cats and dogs",
    "the tower is in paris",
    "paris",
]


def tiny_encoder_folder(folder, seed=0):
    """A saved tiny BERT (2 layers, 32 hidden) with a vocabulary of TEXTS' words."""
    import minibert
    from minibert.model import BertModel
    from minibert.tokenization import BertTokenizer

    words = sorted({w for t in TEXTS for w in t.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    minibert.set_seed(seed)
    BertModel(make_tiny_config(vocab_size=len(vocab))).save_pretrained(folder)
    BertTokenizer(vocab).save_pretrained(folder)
    return folder


def tiny_reader_folder(folder, texts, cls=None, **config):
    """A saved tiny span reader (random weights, its head saved; or another task model, cls)
    whose vocabulary is the words of texts."""
    import minibert
    from minibert.model import BertForQuestionAnswering
    from minibert.tokenization import BertTokenizer

    words = sorted({w for t in texts for w in t.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    minibert.set_seed(0)
    model = (cls or BertForQuestionAnswering)(make_tiny_config(vocab_size=len(vocab), **config))
    model.save_pretrained(folder)
    BertTokenizer(vocab).save_pretrained(folder)
    return folder


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


_NBGRADER_RELEASES: dict[str, dict[str, bytes]] = {}  # marked notebooks' hash -> nbgrader's files


@contextlib.contextmanager
def nbgrader_once():
    """Inside: the student edition's nbgrader step (generate_assignment in a process of its own,
    most of a build's time) runs once per distinct set of marked notebooks in this test session; a
    later build of the same notebooks gets the files that run wrote (nbgrader writes the same
    bytes for the same input). Everything else a build does (checks, marking, clearing, writing;
    the site's pages, the decks) runs every time. For the fixtures that build the course's student
    edition: the site, the slides, the student-edition command."""
    from minibert.teaching import student_edition

    real = student_edition._nbgrader

    def once(root):
        source = root / "source" / student_edition.ASSIGNMENT
        key = hashlib.sha256()
        for path in sorted(source.glob("*.ipynb")):
            key.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        release = root / "release" / student_edition.ASSIGNMENT
        files = _NBGRADER_RELEASES.get(key.hexdigest())
        if files is None:
            real(root)
            files = {path.name: path.read_bytes() for path in release.glob("*.ipynb")}
            _NBGRADER_RELEASES[key.hexdigest()] = files
            return
        release.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (release / name).write_bytes(data)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(student_edition, "_nbgrader", once)
        yield
