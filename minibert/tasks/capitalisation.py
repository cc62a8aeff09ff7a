"""capitalisation and review-capitalisation: which words of lower-cased text were capitalised.

The same token task in two domains (Wikipedia sentences, review snippets): a label per word on
its first piece, kept by the F1 of capitalised words (most words are lower-case: accuracy would
favour answering "lower" everywhere). The labels come from the text itself (its capitals), so
they are real and free: ``capitalisation_examples`` builds them.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibert import corpora, finetuning
from minibert.config import IGNORE_INDEX
from minibert.tasks.baselines import (
    majority,
    per_word_majority,
    sentence_starts,
    sentence_starts_or_per_word_majority,
)
from minibert.tasks.registry import Baseline, Loader, Selection, Task, register, subset
from minibert.tokenization import build_inputs
from minibert.wordpiece import BasicTokenizer

__all__ = ["capitalisation_examples"]


def capitalisation_examples(
    sentences: Sequence[str], tokenizer, max_length: int = 64
) -> list[dict[str, list[int]]]:
    """Lower-cased sentences with, on each word's first piece, 1 if the word was capitalised.

    Words are split on whitespace and punctuation by the tokenizer's basic tokenizer on the
    original text; a word counts as capitalised when its first character is upper case. The
    other pieces of a word, [CLS], [SEP] and punctuation that has no case get -100 (ignored).
    """
    if max_length < 3:
        raise ValueError(f"max_length {max_length} leaves no room for a word after [CLS] and [SEP]")
    cased = BasicTokenizer(lowercase=False, strip_accents=False)  # words with their case
    examples = []
    for sentence in sentences:
        pieces, labels = [], []
        for word in cased.tokenize(sentence):
            word_pieces = tokenizer.tokenize(word)  # lower-cased by an uncased tokenizer
            if not word_pieces:
                continue
            has_case = word[0].lower() != word[0].upper()
            labels += [int(word[0].isupper()) if has_case else IGNORE_INDEX]
            labels += [IGNORE_INDEX] * (len(word_pieces) - 1)
            pieces += word_pieces
        pieces, labels = pieces[: max_length - 2], labels[: max_length - 2]
        if all(label == IGNORE_INDEX for label in labels):
            continue
        input_ids, token_type_ids, _ = build_inputs(
            tokenizer.convert_tokens_to_ids(pieces),
            None,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
        )
        examples.append(
            {
                "input_ids": input_ids,
                "token_type_ids": token_type_ids,
                "labels": [IGNORE_INDEX, *labels, IGNORE_INDEX],
            }
        )
    return examples


def _capitalisation(tok, max_length: int, train_examples: int | None, seed: int):
    """Sentences of the Wikipedia training articles (every tenth is dev) and of the held-out ones."""
    sentences = [s for a in corpora.wikipedia_articles("train") for s in a.sentences]
    train = [s for i, s in enumerate(sentences) if i % 10]
    test = [s for a in corpora.wikipedia_articles("heldout") for s in a.sentences]
    return _words_capitalised(
        tok, max_length, subset(train, train_examples, seed, "sentences"), sentences[::10], test
    )


def _review_capitalisation(tok, max_length: int, train_examples: int | None, seed: int):
    """Review snippets of the training, dev and test movies (corpora.rotten_tomatoes' split)."""
    train, dev, test = (
        [r.text for r in corpora.rotten_tomatoes(s)] for s in ("train", "dev", "test")
    )
    return _words_capitalised(
        tok, max_length, subset(train, train_examples, seed, "snippets"), dev, test
    )


def _words_capitalised(tok, max_length: int, *parts: Sequence[str]) -> tuple:
    """A dataset per part: each text lower-cased, its words labelled capitalised or not."""
    return tuple(
        finetuning.TokenLabellingDataset(capitalisation_examples(p, tok, max_length)) for p in parts
    )


BASELINES = (
    Baseline("always lower-case", majority),  # the majority label
    Baseline("per-word majority", per_word_majority),
    Baseline("sentence starts", sentence_starts),  # no labels needed: a writing convention
    Baseline("sentence starts or per-word", sentence_starts_or_per_word_majority),
)


def _capitalisation_task(name: str, load: Loader, description: str, max_length: int = 128) -> Task:
    """A task of restoring capitalisation, with its four rules as baselines."""
    return Task(
        name=name,
        max_length=max_length,
        labels=("lower", "capitalised"),
        shape="words",
        unit="word",
        load=load,
        metrics=finetuning.token_metrics,
        selection=Selection("f1", finetuning.positive_f1),
        description=description,
        baselines=BASELINES,
    )


CAPITALISATION = register(
    _capitalisation_task(
        "capitalisation",
        _capitalisation,
        "which words of lower-cased Wikipedia text were capitalised (a token task)",
        max_length=64,  # a sentence cut at 64 pieces, as lesson 8 and appendix 12 run it
    )
)
REVIEW_CAPITALISATION = register(
    _capitalisation_task(
        "review-capitalisation",
        _review_capitalisation,
        "which words of lower-cased review snippets were capitalised (the token task in the "
        "reviews' domain, split by movie)",
    )
)
