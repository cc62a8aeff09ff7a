"""What the retrievers search and learn from: the haystack (every paragraph of the course's
Wikipedia), the queries (wiki-qa's questions, each with its paragraph), and the training pairs
drawn from the training articles alone (the inverse cloze task, SimCSE).

    passages = wiki_passages()                    # every paragraph of the course's articles
    queries = wiki_queries("test")                # wiki-qa's questions, each with its paragraph
    pairs = ict_pairs(training_paragraphs())      # (a sentence, its paragraph without it)
    pairs = simcse_pairs(training_paragraphs())   # (a sentence, the same sentence)

Each wiki-qa question (``corpora.questions``, split by article: test = the held-out articles)
is a query; its relevant passage is the one paragraph it was written about; the haystack is every
paragraph of every article, training and held-out alike.

ICT (Lee et al., 2019, ORQA): each sentence of a paragraph of two or more sentences is a query;
its passage is the paragraph with that sentence removed, so that the encoder must match a sentence
to its context rather than to its own words (ORQA keeps the sentence in 10% of the passages,
``keep``). SimCSE (Gao et al., 2021, unsupervised): the same sentence on both sides; the two
forward passes draw different dropout masks, and that noise is all that makes the two vectors
differ (with dropout 0 the loss only pushes sentences apart). Only the training articles' text is
read (``corpora.split_of(title) == "train"``): neither the held-out articles, whose questions are
the test queries, nor the dev articles, whose questions choose the kept evaluation.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass

from minibert import corpora
from minibert.corpora import questions

__all__ = [
    "ICT_KEEP",
    "OBJECTIVES",
    "Passage",
    "Query",
    "corpus_version",
    "ict_pairs",
    "pairs_of",
    "simcse_pairs",
    "training_paragraphs",
    "wiki_passages",
    "wiki_queries",
]

ICT_KEEP = 0.1  # ORQA: the query sentence is left in its passage this often
OBJECTIVES = ("ict", "simcse")  # the self-supervised objectives: their pairs


@dataclass(frozen=True)
class Passage:
    """One paragraph of the haystack: its article, its place in the article, its text."""

    title: str
    paragraph: int  # 0 = the article's first paragraph
    text: str


@dataclass(frozen=True)
class Query:
    """One question and the index (in wiki_passages()) of the paragraph it was written about."""

    id: str
    text: str
    passage: int


def wiki_passages() -> list[Passage]:
    """Every paragraph of every article of the course's Wikipedia extract, in the dump's order."""
    return [
        Passage(article.title, i, text)
        for article in corpora.wikipedia_articles("all")
        for i, text in enumerate(article.paragraphs)
    ]


def corpus_version(passages: Sequence[Passage]) -> str:
    """A short hash of the passages' titles and texts: a saved index of other passages is stale."""
    digest = hashlib.sha256()
    for p in passages:
        digest.update(f"{p.title}\0{p.paragraph}\0{p.text}\0".encode())
    return digest.hexdigest()[:16]


def wiki_queries(split: str = "test", passages: Sequence[Passage] | None = None) -> list[Query]:
    """wiki-qa's questions of a split ('train', 'dev', 'test', 'all') as queries, each pointing at
    its paragraph's index in passages (wiki_passages() when not given)."""
    passages = wiki_passages() if passages is None else passages
    where = {}
    for i, p in enumerate(passages):
        where.setdefault((p.title, p.text), i)  # a paragraph repeated in one article: its first
    found = []
    for q in questions(split):
        if (q.title, q.context) not in where:
            raise ValueError(
                f"question {q.id}: its paragraph is not among the {len(passages)} passages "
                f"of {q.title!r}; pass the passages of the course's Wikipedia (wiki_passages())"
            )
        found.append(Query(q.id, q.question, where[q.title, q.context]))
    return found


# --- training pairs from the articles alone ----------------------------------------------


def training_paragraphs() -> list[tuple[str, ...]]:
    """Each paragraph, as its sentences, of the articles whose questions are wiki-search's training
    ones (no dev or held-out article's text)."""
    return [
        sentences
        for article in corpora.wikipedia_articles("train")  # not the held-out articles
        if corpora.split_of(article.title) == "train"  # nor the dev ones
        for sentences in article.paragraph_sentences
    ]


def ict_pairs(
    paragraphs: Sequence[Sequence[str]], keep: float = ICT_KEEP, seed: int = 0
) -> list[tuple[str, str]]:
    """(sentence, passage) for every sentence of every paragraph of two or more sentences: the
    passage is the paragraph's other sentences, or (with probability keep, by seed) all of them."""
    if not 0 <= keep <= 1:
        raise ValueError(f"keep must be a probability in [0, 1], got {keep}")
    rng = random.Random(seed)
    pairs = []
    for sentences in paragraphs:
        if len(sentences) < 2:  # removing its one sentence would leave no passage
            continue
        for i, sentence in enumerate(sentences):
            kept = rng.random() < keep
            context = sentences if kept else [*sentences[:i], *sentences[i + 1 :]]
            pairs.append((sentence, " ".join(context)))
    if not pairs:
        raise ValueError(
            "no paragraph has two sentences: ICT needs a passage left without the query"
        )
    return pairs


def simcse_pairs(paragraphs: Sequence[Sequence[str]]) -> list[tuple[str, str]]:
    """(sentence, the same sentence) for every distinct sentence of the paragraphs, first seen first:
    dropout makes the two views."""
    seen = dict.fromkeys(s for sentences in paragraphs for s in sentences)
    if not seen:
        raise ValueError("no sentences: give at least one paragraph with a sentence")
    return [(s, s) for s in seen]


def pairs_of(objective: str, paragraphs: Sequence[Sequence[str]], seed: int = 0) -> list:
    """The (query, passage) pairs of an objective, 'ict' or 'simcse'."""
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
    return ict_pairs(paragraphs, seed=seed) if objective == "ict" else simcse_pairs(paragraphs)
