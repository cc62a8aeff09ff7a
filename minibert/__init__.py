"""minibert: BERT from first principles, a small, tested PyTorch package behind a seven-lesson course.

The public API is the list of names below. Each name is imported from its module the first time
it is used (PEP 562), so ``import minibert`` is fast and pulls in nothing heavy: torch loads with
the first model or tensor function, matplotlib only with a plot, gensim only with the Wikipedia
reader, ipywidgets only with the explorer.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"  # pyproject.toml's; CHANGELOG.md says what changed

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # reproducibility and devices
    "set_seed": "utils",
    "default_device": "utils",
    # lesson 1: tokens and segments
    "BertTokenizer": "tokenization",
    "BasicTokenizer": "wordpiece",
    "Encoding": "tokenization",
    "train_wordpiece": "wordpiece_trainer",
    "wordpiece_tokenize": "wordpiece",
    "get_tokens_and_segments": "tokenization",
    # lesson 3: the encoder
    "BertConfig": "config",
    "BertModel": "model",
    "BertForPreTraining": "model",
    "BertForMaskedLM": "model",
    "BertForSequenceClassification": "model",
    "BertForTokenClassification": "model",
    "BertForQuestionAnswering": "model",
    "BertForMultipleChoice": "model",
    # lesson 4: masked language modelling
    "fill_mask": "inference",
    "pretrain": "recipes",
    # lesson 6: fine-tuning
    "finetune": "recipes",
    "classify": "inference",
    # lesson 7: tagging, sentence pairs and span question answering
    "tag": "inference",
    "answer": "inference",
    "choose": "tasks.swag",  # multiple choice (the paper's SWAG): its shape's own function
    # sentence vectors and search
    "encode": "retrieval.encoders",
    "search": "retrieval.index",
    "ask": "open_qa",  # open-domain question answering: a retriever, then a reader
}

# the BERT library's modules (the teaching kit is one more: minibert.teaching)
_SUBMODULES = (
    "assets",
    "attention",
    "checkpoint",
    "cli",
    "commands",
    "config",
    "context_windows",
    "corpora",
    "distributed",
    "english_corpus",
    "finetuning",
    "frozen_features",
    "guidance",
    "inference",
    "label_counts",
    "minimal_pairs",
    "model",
    "open_qa",
    "options",
    "paired_statistics",
    "pretraining",
    "recipes",
    "retrieval",
    "run_state",
    "squad",
    "tasks",
    "teaching",
    "tokenization",
    "training",
    "utils",
    "wikilinks",
    "wordpiece",
    "wordpiece_trainer",
)

# modules that moved into minibert/retrieval/: the old names still reach them, so that
# ``from minibert import retrieval_encoders as encoders`` (lesson 9, the benchmarks) keeps working
_MOVED = {
    "retrieval_distill": "retrieval.distillation",
    "retrieval_encoders": "retrieval.encoders",
    "retrieval_index": "retrieval.index",
    "retrieval_selfsup": "retrieval.corpus",  # ict_pairs, simcse_pairs, training_paragraphs
    "retrieval_training": "retrieval.bi_encoder",
}

# the teaching kit's modules that lessons reach as mb.NAME (``from minibert import viz``); the
# library never imports them, and this table is the package's face, not a library module's import
_TEACHING = {"viz": "teaching.viz"}

__all__ = sorted([*_EXPORTS, *_SUBMODULES, *_TEACHING])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"minibert.{_EXPORTS[name]}"), name)
        globals()[name] = value  # cache: the next lookup is a plain attribute
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"minibert.{name}")
    if name in _TEACHING:
        return importlib.import_module(f"minibert.{_TEACHING[name]}")
    if name in _MOVED:
        return importlib.import_module(f"minibert.{_MOVED[name]}")
    raise AttributeError(f"module 'minibert' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
