"""wiki-qnli: does this sentence answer the question? Sentence pairs made from wiki-qa as GLUE made
QNLI from SQuAD.

GLUE (Wang et al., 2018) turned SQuAD into sentence pairs by "forming a pair between each question
and each sentence in the corresponding context, and filtering out pairs with low lexical overlap
between the question and the context sentence", labelled by whether the sentence holds the answer;
the filter removes "the simplifying assumption that lexical overlap is a reliable cue". The paper
states no threshold; GLUE's QNLI came out near balanced. Here, the same from each wiki-qa question
(the same splits, by article): every sentence of its paragraph, labelled 1 (entailment) when it
holds the first accepted answer's start, else 0 (not_entailment); then every pair whose overlap
(the share of the question's content words that the sentence holds) is below ``MIN_OVERLAP`` is
removed, a positive as well as a negative. ``MIN_OVERLAP`` is the smallest multiple of 0.05 at
which the training pairs are at least half positives (some questions lose their positive, as in
GLUE a question can; lesson 7 counts the pairs each split keeps). Baseline: word overlap (the
same share, its threshold chosen on dev by balanced accuracy): what the filter is meant to weaken.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minibert import corpora, finetuning
from minibert.tasks.qa import Question, questions
from minibert.tasks.registry import Baseline, Selection, Task, register, subset

__all__ = ["MIN_OVERLAP", "STOP_WORDS", "content_words", "overlap", "pairs"]

MIN_OVERLAP = 0.25  # a pair whose overlap is below this is removed (GLUE's "low lexical overlap")

STOP_WORDS = frozenset(
    "a an the of in on at to for from by with as and or but is are was were be been being it its "
    "this that these those which who whom whose what when where why how did do does has have had "
    "not no into than then there their they he she his her him them we you i also can could would "
    "should may might will shall about after before over under between during such".split()
)
_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    """The lower-cased words of text that are not stop words."""
    return {w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS}


def overlap(question: str, sentence: str) -> float:
    """The share of the question's content words that the sentence holds (0 when it has none)."""
    asked = content_words(question)
    return len(asked & content_words(sentence)) / len(asked) if asked else 0.0


def _sentences(context: str) -> list[tuple[int, str]]:
    """The context's sentences with their character starts (the context is whitespace-normal)."""
    found, at = [], 0
    for sentence in corpora.split_sentences(context):
        start = context.find(sentence, at)
        if start < 0:
            raise ValueError(f"sentence not found in its context: {sentence[:60]!r}")
        found.append((start, sentence))
        at = start + len(sentence)
    return found


def pairs(
    items: Sequence[Question], min_overlap: float = MIN_OVERLAP
) -> list[tuple[str, str, int]]:
    """(question, sentence, label) pairs: each question with each sentence of its paragraph
    (label 1 for the one that holds the answer's start), the pairs below min_overlap removed."""
    made = []
    for q in items:
        sentences = _sentences(q.context)
        holds = max(i for i, (start, _) in enumerate(sentences) if start <= q.answers[0][1])
        for i, (_, sentence) in enumerate(sentences):
            if overlap(q.question, sentence) >= min_overlap:
                made.append((q.question, sentence, int(i == holds)))
    return made


def _dataset(items: Sequence[Question], tok, max_length: int) -> finetuning.ClassificationDataset:
    """The pairs of these questions as a dataset: [CLS] question [SEP] sentence [SEP]."""
    made = pairs(items)
    return finetuning.ClassificationDataset(
        [q for q, _, _ in made], [y for _, _, y in made], tok, max_length, [s for _, s, _ in made]
    )


def _load(tok, max_length: int, train_examples: int | None, seed: int):
    """The pairs of the wiki-qa training, dev and test questions (train_examples: questions)."""
    train = subset(questions("train"), train_examples, seed, "questions")
    return tuple(_dataset(q, tok, max_length) for q in (train, questions("dev"), questions("test")))


def _word_overlap(train, dev, test, tokenizer) -> list[int]:
    """entailment when the overlap reaches the threshold that is best on dev (balanced accuracy)."""
    scored = [overlap(q, s) for q, s in zip(dev.texts, dev.text_pairs)]

    def balanced(threshold: float) -> float:
        predicted = [int(v >= threshold) for v in scored]
        return finetuning.scores(dev.labels, predicted)["balanced_accuracy"]

    threshold = max(sorted(set(scored)), key=balanced)  # the lowest of the best on a tie
    return [int(overlap(q, s) >= threshold) for q, s in zip(test.texts, test.text_pairs)]


WIKI_QNLI = register(
    Task(
        name="wiki-qnli",
        labels=("not_entailment", "entailment"),
        shape="text",
        unit="pair",
        load=_load,
        metrics=finetuning.classification_metrics,
        selection=Selection("balanced_accuracy", finetuning.balanced_accuracy, trivial=0.5),
        description="does the sentence hold the answer to the question? (pairs from wiki-qa, "
        "made as GLUE made QNLI: every sentence, low-overlap pairs removed)",
        baselines=(Baseline("word overlap", _word_overlap),),
        pairs=True,
        data_version=2,  # 2: every sentence of the paragraph, low-overlap pairs removed
    )
)
