"""wiki-mentions: which words of a Wikipedia sentence name a thing, as BIO spans from its links.

The labels are real annotations: Wikipedia's editors marked the things a reader may want to look
up with links (wikilinks: the dump parsed by mwparserfromhell, each anchor's span kept). A word
gets B-MENTION where an anchor starts, I-MENTION inside it, O elsewhere; words are the cased basic
tokenizer's, the label sits on a word's first piece (-100 on its other pieces, [CLS] and [SEP]).

Links mark only the first mention of a thing, so two label sets were built and compared:

- links: the editors' links alone;
- propagated (WikiNER's link inference, Nothman et al. 2013): the links, plus each later exact,
  case-sensitive, whole-word mention of an anchor already linked earlier in the same article
  (longest first, left to right, never across a link).

Chosen by agreement with hand labels: 72 sentences drawn at random from the training articles,
labelled by reading them without their links (task_data/wiki_mentions/hand_labels.json, whose
comment states the criterion: names of people, places, organisations, works, events and terms of
art). ``hand_label_agreement`` scores each set's spans against them (precision, recall, F1):
propagation finds more of the hand mentions at some cost in precision and has the higher F1, so the
propagated set is the task's labels (the appendix lesson prints the table).

Kept sentences: those with at least one (propagated) mention. Most hand-labelled sentences
without one still hold hand mentions: a sentence without a span is more often an unmarked one
than one that names nothing, and its all-O labels would teach the model to miss mentions.

Splits by article, as pretraining: test = the held-out articles (corpora.heldout_article), dev =
every tenth training article by title (sorted, from the first), train = the other training
articles; train_examples draws that many training sentences at random (registry.subset).

Scores are CoNLL's (seqeval's default mode): a span is right when its first and last word both
match; an I- after an O starts a span. Baselines, at the same spans, read the cased words (which
an uncased model never sees):

- anchor lexicon: every mention text of train, found again by the longest match, left to right,
  case-sensitively;
- capitalised runs: maximal runs of words whose first character is upper case. Any other word
  (lower case, a number, punctuation: a hyphen or an apostrophe too) ends a run, except a
  connector between two capitalised words ("Bank of England"); the connectors are chosen on dev
  among none, "of", and "of the and de for". A sentence's first word counts only if train never
  has it lower-cased after the first word ("The", "In" do not; "Aristotle" does).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from minibert import assets, finetuning, wikilinks
from minibert.config import IGNORE_INDEX
from minibert.tasks.registry import Baseline, Selection, Task, register, subset
from minibert.tokenization import build_inputs
from minibert.wordpiece import BasicTokenizer

__all__ = [
    "LABELS",
    "MentionDataset",
    "MentionSentence",
    "anchor_lexicon",
    "bio",
    "capitalised_runs",
    "conll_line",
    "hand_label_agreement",
    "mention_sentences",
    "span_counts",
    "span_f1",
    "span_metrics",
    "span_scores",
    "spans",
    "word_offsets",
    "wiki_mention_splits",
]

LABELS = ("O", "B-MENTION", "I-MENTION")
OUTSIDE, BEGIN, INSIDE = 0, 1, 2
HAND_LABELS = (
    Path(__file__).resolve().parents[1] / "task_data" / "wiki_mentions" / "hand_labels.json"
)
DEV_EVERY = 10  # every tenth training article (by title) is dev
_CASED = BasicTokenizer(lowercase=False, strip_accents=False)  # words with their case

Span = tuple[int, int]  # words [start, end)


# ---- sentences: words and mention spans --------------------------------------------------------


@dataclass(frozen=True)
class MentionSentence:
    """A sentence's cased words, its links and its mentions as word spans [start, end)."""

    article: str
    text: str
    words: tuple[str, ...]
    links: tuple[Span, ...]  # the editors' links (each anchor's words)
    mentions: tuple[Span, ...]  # the links and later exact mentions of an earlier anchor


def word_offsets(text: str, words: Sequence[str]) -> list[Span]:
    """The characters [start, end) of each word of text, the words found in order."""
    offsets, position = [], 0
    for word in words:
        start = text.index(word, position)
        position = start + len(word)
        offsets.append((start, position))
    return offsets


def _link_spans(sentence: wikilinks.LinkedText, offsets: Sequence[Span]) -> list[Span]:
    """Each link as the words its anchor touches; a link sharing a word with an earlier one goes."""
    found: list[Span] = []
    for link in sentence.links:
        touched = [i for i, (s, e) in enumerate(offsets) if s < link.end and e > link.start]
        if touched and (not found or touched[0] >= found[-1][1]):
            found.append((touched[0], touched[-1] + 1))
    return found


def _longest_matches(words: Sequence[str], lexicon: dict, start: int = 0, end: int = -1) -> list:
    """Spans of words[start:end] (end -1: to the last word): left to right, the longest entry of
    lexicon (first word -> tuples of words) that starts at each word."""
    end = len(words) if end < 0 else end
    found, i = [], start
    while i < end:
        fits = [
            len(e)
            for e in lexicon.get(words[i], ())
            if i + len(e) <= end and tuple(words[i : i + len(e)]) == e
        ]
        found += [(i, i + max(fits))] if fits else []
        i += max(fits, default=1)
    return found


def _propagate(words: Sequence[str], links: Sequence[Span], known: dict[str, set]) -> list[Span]:
    """The links, and between them the longest exact matches of anchors linked earlier in the
    article (known: first word -> anchors), which each link's anchor then joins."""
    found: list[Span] = []
    start = 0
    for link_start, link_end in [*links, (len(words), len(words))]:
        found += _longest_matches(words, known, start, link_start)
        if link_start < link_end:
            found.append((link_start, link_end))
            known.setdefault(words[link_start], set()).add(tuple(words[link_start:link_end]))
        start = link_end
    return found


def _article_sentences(article: wikilinks.LinkedArticle) -> list[MentionSentence]:
    """The article's sentences that have at least one word, with links and mentions."""
    known: dict[str, set] = {}
    out = []
    for sentence in article.sentences:
        words = _CASED.tokenize(sentence.text)
        if not words:
            continue
        links = _link_spans(sentence, word_offsets(sentence.text, words))
        mentions = _propagate(words, links, known)
        out.append(
            MentionSentence(
                article.title, sentence.text, tuple(words), tuple(links), tuple(mentions)
            )
        )
    return out


def mention_sentences(articles: Iterable[wikilinks.LinkedArticle]) -> list[MentionSentence]:
    """Every sentence with a word of the articles, in order."""
    return [s for article in articles for s in _article_sentences(article)]


# ---- BIO labels and spans --------------------------------------------------------------------


def bio(mentions: Iterable[Span], length: int) -> list[int]:
    """Label ids of length words: B on a mention's first word, I on the rest, O elsewhere."""
    labels = [OUTSIDE] * length
    for start, end in mentions:
        labels[start:end] = [BEGIN] + [INSIDE] * (end - start - 1)
    return labels


def spans(labels: Sequence[int]) -> list[Span]:
    """The spans [start, end) of BIO label ids as conlleval and seqeval's default mode read them:
    a B, or an I that follows an O (or starts the sentence), starts a span."""
    found, start = [], None
    for i, label in enumerate(labels):
        if label == BEGIN or (label == INSIDE and start is None):
            if start is not None:
                found.append((start, i))
            start = i
        elif label == OUTSIDE and start is not None:
            found.append((start, i))
            start = None
    if start is not None:
        found.append((start, len(labels)))
    return found


def span_counts(gold: Sequence[Sequence[int]], predicted: Sequence[Sequence[int]]) -> tuple:
    """(spans right, spans predicted, gold spans) over sentences of label ids; a predicted span is
    right when a gold span of the same sentence has its start and end."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    right = guessed = wanted = 0
    for g, p in zip(gold, predicted):
        if len(g) != len(p):
            raise ValueError(f"a sentence of {len(g)} gold labels has {len(p)} predicted")
        g, p = set(spans(g)), set(spans(p))
        right, guessed, wanted = right + len(g & p), guessed + len(p), wanted + len(g)
    return right, guessed, wanted


def span_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Span precision and recall of one batch (a sentence per row) as (right, count) sums."""
    guess, labels = out.logits.argmax(-1), batch["labels"]  # (batch, seq) each
    keep = labels != IGNORE_INDEX
    gold = [y[k].tolist() for y, k in zip(labels, keep)]
    right, guessed, wanted = span_counts(gold, [g[k].tolist() for g, k in zip(guess, keep)])
    return {"span_precision": (right, guessed), "span_recall": (right, wanted)}


def span_f1(record: dict[str, float]) -> float:
    """Span F1 of an evaluation record (0 where nothing was predicted: no precision then)."""
    precision = record.get("eval_span_precision", 0.0)
    return finetuning.f1_score(precision, record.get("eval_span_recall", 0.0))


def span_scores(task: Task, gold: Sequence, predictions: Sequence) -> dict[str, Any]:
    """CoNLL span precision, recall and F1, the number of gold mentions, and accuracy per word."""
    right, guessed, wanted = span_counts(gold, predictions)
    precision = right / guessed if guessed else 0.0
    recall = right / wanted if wanted else 0.0
    words = sum(len(g) for g in gold)
    correct = sum(a == b for g, p in zip(gold, predictions) for a, b in zip(g, p))
    return {
        "precision": precision,
        "recall": recall,
        "f1": finetuning.f1_score(precision, recall),
        "accuracy": correct / max(words, 1),
        "examples": wanted,
        "unit": task.unit,
        "positive": task.positive,
    }


# ---- the datasets --------------------------------------------------------------------------------


def _encode(words: Sequence[str], mentions: Sequence[Span], tok, max_length: int):
    """(example, words kept): a label per word on its first piece, [CLS] ... [SEP], truncated."""
    kept = [i for i, word in enumerate(words) if tok.tokenize(word)]  # a word of pieces
    new = {old: new for new, old in enumerate(kept)}
    mentions = [
        (new[inside[0]], new[inside[-1]] + 1)
        for s, e in mentions
        if (inside := [i for i in range(s, e) if i in new])
    ]
    pieces, labels, kept_words = [], [], []
    for i, label in zip(kept, bio(mentions, len(kept))):
        if len(pieces) >= max_length - 2:
            break
        word_pieces = tok.tokenize(words[i])
        pieces += word_pieces
        labels += [label] + [IGNORE_INDEX] * (len(word_pieces) - 1)
        kept_words.append(words[i])
    input_ids, token_type_ids, _ = build_inputs(
        tok.convert_tokens_to_ids(pieces[: max_length - 2]),
        None,
        tok.cls_token_id,
        tok.sep_token_id,
    )
    labels = [IGNORE_INDEX, *labels[: max_length - 2], IGNORE_INDEX]
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "labels": labels}, kept_words


class MentionDataset(finetuning.TokenLabellingDataset):
    """Encoded sentences with their cased words (``words[i]``: one per labelled position, the case
    an uncased tokenizer loses) and articles (``articles[i]``)."""

    def __init__(self, sentences: Sequence[MentionSentence], tokenizer, max_length: int = 128):
        if max_length < 3:
            raise ValueError(
                f"max_length {max_length} leaves no room for a word after [CLS], [SEP]"
            )
        encoded = [_encode(s.words, s.mentions, tokenizer, max_length) for s in sentences]
        kept = [i for i, (_, words) in enumerate(encoded) if words]
        super().__init__([encoded[i][0] for i in kept])
        self.words = [tuple(encoded[i][1]) for i in kept]
        self.articles = [sentences[i].article for i in kept]


@functools.lru_cache(maxsize=1)
def _splits_cached(file: str, mtime_ns: int) -> tuple[tuple[MentionSentence, ...], ...]:
    training = sorted(wikilinks.linked_articles("train"), key=lambda a: a.title)
    dev = {a.title for a in training[::DEV_EVERY]}

    def kept(articles: Iterable) -> tuple[MentionSentence, ...]:
        return tuple(s for s in mention_sentences(articles) if s.mentions)

    return (
        kept(a for a in wikilinks.linked_articles("train") if a.title not in dev),
        kept(a for a in wikilinks.linked_articles("train") if a.title in dev),
        kept(wikilinks.linked_articles("heldout")),
    )


def wiki_mention_splits() -> tuple[tuple[MentionSentence, ...], ...]:
    """(train, dev, test) sentences with at least one mention, split by article (cached)."""
    file = assets.path("wikipedia")
    return _splits_cached(str(file), file.stat().st_mtime_ns)


def _wiki_mentions(tok, max_length: int, train_examples: int | None, seed: int) -> tuple:
    """MentionDatasets of the training (a random subset), dev and held-out articles' sentences."""
    train, dev, test = wiki_mention_splits()
    train = subset(train, train_examples, seed, "sentences")
    return tuple(MentionDataset(part, tok, max_length) for part in (train, dev, test))


# ---- baselines -----------------------------------------------------------------------------------


def _gold(data) -> list[list[int]]:
    """Each item's label ids at its labelled positions."""
    return [[y for y in data[i]["labels"] if y != IGNORE_INDEX] for i in range(len(data))]


def anchor_lexicon(train, dev, test, tokenizer) -> list[list[int]]:
    """Every mention text of train, found again in test: longest match, greedy left to right,
    case-sensitive on the cased words."""
    lexicon: dict[str, set] = {}
    for words, labels in zip(train.words, _gold(train)):
        for s, e in spans(labels):
            lexicon.setdefault(words[s], set()).add(tuple(words[s:e]))
    return [bio(_longest_matches(words, lexicon), len(words)) for words in test.words]


CONNECTORS = ((), ("of",), ("of", "the", "and", "de", "for"))  # the settings dev chooses from


def _capitalised(words: Sequence[str], common: set[str], connectors: Sequence[str]) -> list[Span]:
    """Maximal runs of capitalised words, joined by connectors between two capitalised words; a
    sentence-initial word counts only if its lower-case form is not a common (train) word."""
    capital = [w[:1].isupper() and (i or w.lower() not in common) for i, w in enumerate(words)]
    found, i = [], 0
    while i < len(words):
        if not capital[i]:
            i += 1
            continue
        end = i + 1
        while True:  # extend over connectors that a capitalised word follows
            j = end
            while j < len(words) and words[j] in connectors:
                j += 1
            if j == len(words) or not capital[j]:
                break
            end = j + 1
        found.append((i, end))
        i = end
    return found


def capitalised_runs(train, dev, test, tokenizer) -> list[list[int]]:
    """Maximal runs of capitalised words as mentions, the connectors ("of", ...) chosen on dev."""
    common = {w for words in train.words for w in words[1:] if w[:1].islower()}

    def answers(data, connectors) -> list[list[int]]:
        return [bio(_capitalised(w, common, connectors), len(w)) for w in data.words]

    def dev_f1(connectors) -> float:
        right, guessed, wanted = span_counts(_gold(dev), answers(dev, connectors))
        return 2 * right / (guessed + wanted) if guessed + wanted else 0.0

    return answers(test, max(CONNECTORS, key=dev_f1))  # ties: the first (fewer connectors)


# ---- the hand labels that chose the label set ---------------------------------------------------


def hand_label_agreement() -> dict[str, dict[str, float]]:
    """Span precision, recall and F1 of each label set ("links", "mentions": propagated) against
    the hand labels, and how many sentences and hand mentions they hold."""
    hand = json.loads(HAND_LABELS.read_text(encoding="utf-8"))["sentences"]
    found = {(s.article, s.text): s for s in mention_sentences(wikilinks.linked_articles("train"))}
    missing = [h["text"] for h in hand if (h["article"], h["text"]) not in found]
    if missing:
        raise ValueError(
            f"{len(missing)} hand-labelled sentences are not in the dump: {missing[0]!r}"
        )
    sentences = [found[(h["article"], h["text"])] for h in hand]
    theirs = [{(m["start"], m["end"]) for m in h["mentions"]} for h in hand]
    agreement: dict[str, dict[str, float]] = {}
    for label_set in ("links", "mentions"):
        ours = [set(getattr(s, label_set)) for s in sentences]
        right = sum(len(o & t) for o, t in zip(ours, theirs))
        precision, recall = right / sum(map(len, ours)), right / sum(map(len, theirs))
        agreement[label_set] = {
            "precision": precision,
            "recall": recall,
            "f1": finetuning.f1_score(precision, recall),
        }
    agreement["counts"] = {"sentences": len(hand), "mentions": sum(map(len, theirs))}
    return agreement


def conll_line(t: dict) -> str:
    """The test line of span scores: CoNLL's span precision, recall and F1, and word accuracy."""
    return (
        f"span precision {t['precision']:.4f}, recall {t['recall']:.4f}, F1 {t['f1']:.4f} "
        f"(CoNLL); per-word accuracy {t['accuracy']:.4f}"
    )


WIKI_MENTIONS = register(
    Task(
        name="wiki-mentions",
        labels=LABELS,
        shape="words",
        unit="mention",
        load=_wiki_mentions,
        metrics=span_metrics,
        selection=Selection("span_f1", span_f1),  # CoNLL span F1 on dev
        description="which words of Wikipedia sentences name a thing (BIO spans from the "
        "editors' links, propagated in each article; split by article)",
        baselines=(
            Baseline("anchor lexicon", anchor_lexicon),
            Baseline("capitalised runs", capitalised_runs),
        ),
        score=span_scores,
        result_line=conll_line,
    )
)
