"""wiki-swag: which of four sentences comes next? Multiple choice, the BERT paper's fifth task.

SWAG (Zellers et al., 2018; the BERT paper, section 4.4) gives a sentence and four candidate
continuations. BERT reads each as ``[CLS] context [SEP] choice [SEP]``, one linear unit scores the
choice's pooled [CLS] vector, and a softmax over the four scores picks one
(``model.BertForMultipleChoice``). Here the items are made from the course's Wikipedia extract:

- the context is a sentence of an article and the right choice the sentence after it in the same
  paragraph: one such pair per paragraph, drawn among those whose two sentences both have
  MIN_WORDS to MAX_WORDS words (seeded by the article's title and the paragraph's number);
- the three distractors are sentences of the same article, so that all four share its topic: of
  the article's sentences of MIN_WORDS to MAX_WORDS words that are not the context, its ending or
  within NOT_NEAR sentences of the context (nothing adjacent), and that differ in text from the
  four, those that share at least as many of the context's content words (stop words aside) as
  the right ending does come first, each group ordered by how close its word count is to the
  ending's; three are drawn at random (the same seed) among the first NEAREST. So a reader can
  reject them neither on the article's topic, nor on the words shared with the context (a
  sentence further on in an article shares fewer of them than the next one, so that without this
  step the shared-words rule would find the ending far more often than chance), nor on length;
- the four are shuffled (the same seed), so the right one is at each position equally often.

Splits by article, as pretraining: test = the held-out articles (``corpora.heldout_article``), dev =
every tenth training article by title (sorted, from the first), train = the other training
articles. Baselines, at the same items: the choice that shares the most words with the context
(stop words aside; a tie goes to the first), the topic rule (the choice whose TF-IDF vector is
closest to the context's, IDF over the training items' sentences): how far topic alone gets with
distractors from the same article; and the course checkpoint's own next sentence prediction head,
no fine-tuning: the choice it gives the highest IsNext probability (lesson 5 meets lesson 7).
"""

from __future__ import annotations

import functools
import math
import random
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from minibert import assets, corpora
from minibert.model import BertForMultipleChoice, BertForPreTraining
from minibert.tasks.qnli import content_words
from minibert.tasks.registry import Baseline, Selection, Task, register, subset
from minibert.tasks.shapes import Argument, Command, Shape, register_shape
from minibert.tokenization import BertTokenizer, pad
from minibert.training import evaluate
from minibert.utils import check_text, evaluating

__all__ = [
    "MAX_WORDS",
    "MIN_WORDS",
    "NEAREST",
    "NOT_NEAR",
    "ChoiceDataset",
    "SwagItem",
    "choose",
    "collate_choices",
    "swag_items",
    "wiki_swag_splits",
]

MIN_WORDS, MAX_WORDS = 6, 35  # a context's, an ending's and a distractor's words
NOT_NEAR = 2  # a distractor is more than this many sentences from the context
NEAREST = 8  # the distractors are drawn among this many sentences closest in length
DEV_EVERY = 10  # every tenth training article by title is dev


@dataclass(frozen=True)
class SwagItem:
    """One item: the article, its context sentence, the choices and the right one's index."""

    article: str
    context: str
    choices: tuple[str, ...]
    label: int


_WORD = re.compile(r"\w+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _fits(sentence: str) -> bool:
    return MIN_WORDS <= len(sentence.split()) <= MAX_WORDS


def _item(article: corpora.Article, paragraph: int, at: list[int]) -> SwagItem | None:
    """The item of one paragraph (at: the article-wide index of each of its sentences), or None
    when it has no pair of fitting sentences or its article too few distractors."""
    sentences = article.sentences
    pairs = [i for i in at[:-1] if _fits(sentences[i]) and _fits(sentences[i + 1])]
    if not pairs:
        return None
    rng = random.Random(zlib.crc32(f"{article.title}\n{paragraph}".encode()))
    i = rng.choice(pairs)
    context, ending = sentences[i], sentences[i + 1]
    pool, seen = [], {context, ending}
    for j, s in enumerate(sentences):
        if abs(j - i) > NOT_NEAR and j != i + 1 and _fits(s) and s not in seen:
            pool.append(j)
            seen.add(s)
    if len(pool) < 3:
        return None
    asked, words = content_words(context), len(ending.split())
    shared = len(asked & content_words(ending))  # as on-topic as the ending: first; then by length
    pool.sort(
        key=lambda j: (
            len(asked & content_words(sentences[j])) < shared,
            abs(len(sentences[j].split()) - words),
            j,
        )
    )
    choices = [ending, *(sentences[j] for j in rng.sample(pool[:NEAREST], 3))]
    rng.shuffle(choices)
    return SwagItem(article.title, context, tuple(choices), choices.index(ending))


def swag_items(articles: Iterable[corpora.Article]) -> list[SwagItem]:
    """The items of these articles: at most one per paragraph, in article and paragraph order."""
    made = []
    for article in articles:
        start = 0
        for paragraph, sentences in enumerate(article.paragraph_sentences):
            item = _item(article, paragraph, list(range(start, start + len(sentences))))
            start += len(sentences)
            if item is not None:
                made.append(item)
    return made


@functools.lru_cache(maxsize=1)
def _splits_cached(file: str, mtime_ns: int) -> tuple[tuple[SwagItem, ...], ...]:
    training = sorted(corpora.wikipedia_articles("train"), key=lambda a: a.title)
    dev = {a.title for a in training[::DEV_EVERY]}
    return (
        tuple(swag_items(a for a in training if a.title not in dev)),
        tuple(swag_items(a for a in training if a.title in dev)),
        tuple(swag_items(corpora.wikipedia_articles("heldout"))),
    )


def wiki_swag_splits() -> tuple[tuple[SwagItem, ...], ...]:
    """(train, dev, test) items, split by article (cached)."""
    file = assets.path("wikipedia")
    return _splits_cached(str(file), file.stat().st_mtime_ns)


# --- the multiple-choice shape -------------------------------------------------------------------


class ChoiceDataset(torch.utils.data.Dataset):
    """Items encoded once: each choice as [CLS] context [SEP] choice [SEP]; ``texts[i]`` is the
    SwagItem of example i (what a baseline reads)."""

    def __init__(self, items: Sequence[SwagItem], tokenizer, max_length: int = 128):
        if not items:
            raise ValueError("no items: give at least one")
        if max_length < 4:
            raise ValueError(f"max_length {max_length} leaves no room for a context and a choice")
        self.texts, self.items = list(items), []
        for item in self.texts:
            encoded = [
                tokenizer(item.context, c, max_length=max_length, truncation=True)
                for c in item.choices
            ]
            self.items.append(
                {
                    "input_ids": [e.input_ids for e in encoded],  # (choices, its pieces)
                    "token_type_ids": [e.token_type_ids for e in encoded],
                    "labels": item.label,
                }
            )

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]


def collate_choices(batch: Sequence[dict], pad_token_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad every choice of every item to the longest: input_ids, token_type_ids, attention_mask
    (batch, choices, seq); labels (batch,), the right choice of each item."""
    if not batch:
        raise ValueError("cannot collate an empty batch")
    if len({len(item["input_ids"]) for item in batch}) != 1:
        raise ValueError("every item of a batch must have the same number of choices")
    seq = max(len(ids) for item in batch for ids in item["input_ids"])

    def column(key: str, padding: int) -> torch.Tensor:
        rows = [[pad(c, seq, padding) for c in item[key]] for item in batch]
        return torch.tensor(rows, dtype=torch.long)

    mask = [[pad([1] * len(c), seq, 0) for c in item["input_ids"]] for item in batch]
    out = {
        "input_ids": column("input_ids", pad_token_id),
        "token_type_ids": column("token_type_ids", 0),
        "attention_mask": torch.tensor(mask, dtype=torch.long),
    }
    if "labels" in batch[0]:
        out["labels"] = torch.tensor([item["labels"] for item in batch], dtype=torch.long)
    return out


def _predict_choices(net: Any, data: Sequence, collate) -> list[int]:
    """The index of the highest-scored choice of each item, in data's order."""
    found: list[int] = []

    def collect(batch: dict, out: Any) -> dict:
        found.extend(out.logits.argmax(-1).tolist())  # (batch,)
        return {}

    evaluate(net, data, 32, collate, metrics_fn=collect)
    return found


def _gold_choices(data: Sequence) -> list[int]:
    """Each item's right choice."""
    return [data[i]["labels"] for i in range(len(data))]


def choice_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Training's measure: how often the highest-scored choice is the right one."""
    right = out.logits.argmax(-1) == batch["labels"]  # (batch,)
    return {"accuracy": (int(right.sum()), int(right.numel()))}


def _score(task: Task, gold: Sequence[int], predictions: Sequence[int]) -> dict[str, Any]:
    """Accuracy (the share of items whose right choice is picked), with the number of items."""
    if len(gold) != len(predictions) or not gold:
        raise ValueError(f"{len(gold)} items but {len(predictions)} predictions")
    right = sum(g == p for g, p in zip(gold, predictions))
    return {"accuracy": right / len(gold), "examples": len(gold), "unit": task.unit}


def _choice_line(t: dict[str, Any]) -> str:
    return f"accuracy {t['accuracy']:.4f} (the right choice picked)"


@torch.no_grad()
def choose(
    model: Any, tokenizer: Any, context: str, choices: Sequence[str], max_length: int = 128
) -> list[tuple[str, float]]:
    """Each choice with its probability of following context (a softmax over the choices'
    scores), in the order given: ``choose(model, tok, "it rained .", ["we got wet .", ...])``."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise TypeError(
            f"model must be a multiple-choice model, got {type(model).__name__}: load a folder "
            "fine-tuned on wiki-swag with BertForMultipleChoice.from_pretrained(FOLDER)"
        )
    if not callable(tokenizer) or not hasattr(tokenizer, "pad_token_id"):
        raise TypeError(
            f"tokenizer must be a tokenizer, got {type(tokenizer).__name__}: load the folder's "
            "with BertTokenizer.from_pretrained(FOLDER)"
        )
    if not isinstance(choices, list | tuple) or len(choices) < 2:
        raise ValueError(f"give at least two choices (a list of str), got {choices!r:.100}")
    check_text(context, "the context")
    for i, choice in enumerate(choices):
        check_text(choice, f"choice {i + 1}")
    limit = getattr(model.config, "max_position_embeddings", max_length)
    encoded = [
        tokenizer(context, c, max_length=min(max_length, limit), truncation=True) for c in choices
    ]
    item = {
        "input_ids": [e.input_ids for e in encoded],
        "token_type_ids": [e.token_type_ids for e in encoded],
    }
    batch = collate_choices([item], tokenizer.pad_token_id)
    device = next(model.parameters()).device
    with evaluating(model):
        logits = model(**{k: v.to(device) for k, v in batch.items()}).logits  # (1, choices)
    probabilities = logits[0].float().softmax(-1)
    if not torch.isfinite(probabilities).all():
        raise ValueError(
            "the model's outputs are not numbers (NaN or inf): its weights are damaged"
        )
    return [(c, float(p)) for c, p in zip(choices, probabilities)]


def _choose(args: Any, model: Any, tok: Any, task: Task | None) -> list[str]:
    """Each choice with its probability, the most probable first (tab-separated)."""
    found = choose(model, tok, args.context, args.choice)
    return [f"{p:.3f}\t{c}" for c, p in sorted(found, key=lambda pair: -pair[1])]


CHOOSE = Command(
    "choose",
    "pick which of several sentences follows a context, with a fine-tuned multiple-choice model",
    "a folder written by `minibert finetune` for a multiple-choice task (wiki-swag)",
    "picks one of several choices",
    (
        Argument("context", "the context, in quotes"),
        Argument(
            "--choice",
            "a candidate, in quotes; give --choice once per candidate, at least two",
            action="append",
            required=True,
            metavar="TEXT",
        ),
    ),
    _choose,
)
CHOICE = register_shape(
    Shape(
        "choice",
        BertForMultipleChoice,
        _predict_choices,
        _gold_choices,
        collate=collate_choices,
        head_size=lambda task: 1,  # one score per choice, whatever the number of choices
        result_line=_choice_line,
        command=CHOOSE,
    )
)


# --- the task and its baselines ------------------------------------------------------------------


def _shared_words(train, dev, test: ChoiceDataset, tokenizer) -> list[int]:
    """The choice sharing the most words with the context (stop words aside; ties: the first)."""

    def shared(context: str, choice: str) -> int:
        return len(content_words(context) & set(_words(choice)))

    return [
        max(range(len(i.choices)), key=lambda k: shared(i.context, i.choices[k]))
        for i in test.texts
    ]


def _topic(train: ChoiceDataset, dev, test: ChoiceDataset, tokenizer) -> list[int]:
    """The topic rule: the choice whose TF-IDF vector is closest to the context's (cosine; IDF
    over the training items' sentences, each once)."""
    sentences = {s for i in train.texts for s in (i.context, *i.choices)}
    df = Counter(w for s in sentences for w in set(_words(s)))
    idf = {w: math.log((1 + len(sentences)) / (1 + c)) + 1 for w, c in df.items()}
    unseen = math.log(1 + len(sentences)) + 1

    def vector(text: str) -> dict[str, float]:
        return {w: c * idf.get(w, unseen) for w, c in Counter(_words(text)).items()}

    def cosine(a: dict[str, float], b: dict[str, float]) -> float:
        dot = sum(v * b.get(w, 0.0) for w, v in a.items())
        norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
        return dot / norm if norm else 0.0

    return [
        max(range(len(i.choices)), key=lambda k: cosine(vector(i.context), vector(i.choices[k])))
        for i in test.texts
    ]


@torch.no_grad()
def nsp_choices(folder, items: Sequence[SwagItem]) -> list[int]:
    """The choice that a pretraining folder's NSP head gives the highest IsNext probability, for
    each item (the folder's own tokenizer; no fine-tuning)."""
    model = BertForPreTraining.from_pretrained(folder)
    tok = BertTokenizer.from_pretrained(folder)
    limit = model.config.max_position_embeddings
    picked = []
    with evaluating(model):
        for item in items:
            pairs = [(item.context, c) for c in item.choices]
            batch = tok.encode_batch(pairs, max_length=limit, truncation=True)
            is_next = model(**batch).nsp_logits.softmax(-1)[:, 0]  # (choices,): label 0 IsNext
            picked.append(int(is_next.argmax()))
    return picked


def _course_nsp(train, dev, test: ChoiceDataset, tokenizer) -> list[int]:
    """The 0.39M-word course checkpoint's NSP head, no fine-tuning: the most probable IsNext choice."""
    return nsp_choices(assets.course_checkpoint("course"), test.texts)


def _load(tok, max_length: int, train_examples: int | None, seed: int):
    """ChoiceDatasets of the training (a random subset), dev and held-out articles' items."""
    train, dev, test = wiki_swag_splits()
    train = subset(train, train_examples, seed, "items")
    return tuple(ChoiceDataset(part, tok, max_length) for part in (train, dev, test))


WIKI_SWAG = register(
    Task(
        name="wiki-swag",
        labels=("choice 1", "choice 2", "choice 3", "choice 4"),
        shape="choice",
        unit="item",
        load=_load,
        metrics=choice_metrics,
        selection=Selection("accuracy", lambda record: record["eval_accuracy"], trivial=0.25),
        description="which of four sentences of the same Wikipedia article follows a sentence "
        "(the BERT paper's SWAG, multiple choice; split by article)",
        baselines=(
            Baseline("shared words", _shared_words),
            Baseline("topic (TF-IDF cosine)", _topic),
            Baseline("course NSP head", _course_nsp),
        ),
        score=_score,
    )
)
