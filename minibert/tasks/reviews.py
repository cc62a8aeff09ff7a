"""rotten-tomatoes: the sentiment of a review snippet (fresh or rotten), split by movie."""

from __future__ import annotations

from minibert import corpora, finetuning
from minibert.tasks.baselines import bag_of_words, majority
from minibert.tasks.registry import Baseline, Selection, Task, register, subset


def _rotten_tomatoes(tok, max_length: int, train_examples: int | None, seed: int):
    """Review snippets, split by movie (corpora.rotten_tomatoes)."""
    train, dev, test = (corpora.rotten_tomatoes(s) for s in ("train", "dev", "test"))
    train = subset(train, train_examples, seed, "snippets")
    return tuple(
        finetuning.ClassificationDataset.from_reviews(r, tok, max_length)
        for r in (train, dev, test)
    )


ROTTEN_TOMATOES = register(
    Task(
        name="rotten-tomatoes",
        labels=corpora.LABELS,
        shape="text",
        unit="snippet",
        load=_rotten_tomatoes,
        metrics=finetuning.classification_metrics,
        # dev holds 58% fresh snippets: accuracy would favour answering "fresh" everywhere
        selection=Selection("balanced_accuracy", finetuning.balanced_accuracy, trivial=0.5),
        description="sentiment of review snippets (fresh/rotten, split by movie)",
        baselines=(Baseline("majority class", majority), Baseline("bag of words", bag_of_words)),
    )
)
