"""The trivial baselines the lessons measure a model against, each scored as the model is.

- masked language modelling (lesson 4): ``mlm_baselines`` (most frequent token, copy the visible
  token, the ``NgramTable`` of neighbours), scored at the same [MASK] and chosen positions;
- next sentence prediction (lesson 5): ``TopicBaseline``, the TF-IDF cosine of the two segments;
- reviews (lesson 8): ``opinion_scores`` and ``strongest_word``, which words decide a snippet.

They exist for the lessons and the benchmarks; the measures they are scored with are the
library's (``minibert.pretraining.metrics_for``, ``minibert.finetuning.scores``). The baselines of
the fine-tuning tasks belong to the tasks (``minibert.tasks.baselines``: majority, bag of words,
per-word majority, sentence starts), each scored at the positions its task scores.
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Sequence

from minibert.config import IGNORE_INDEX, IS_NEXT, NOT_NEXT
from minibert.pretraining import PretrainingExample

__all__ = [
    "WORD",
    "NgramTable",
    "TopicBaseline",
    "mlm_baselines",
    "opinion_scores",
    "strongest_word",
]


# --- masked language modelling: what a model must beat at the same positions ---------------------


class NgramTable:
    """The most frequent training token between a left and a right neighbour (an MLM baseline).

    Fitted on tokenized training documents; it sees the masked input as the model does (a
    neighbour may itself be [MASK]); [CLS]/[SEP] count as the document's edges; an unseen
    (left, right) pair backs off to the left and right bigrams, then to the most frequent token.
    """

    START, END = -1, -2

    def __init__(self, documents: Sequence[Sequence[Sequence[int]]]):
        self.both, self.left, self.right = (
            collections.defaultdict(collections.Counter) for _ in range(3)
        )
        self.unigram = collections.Counter()
        for doc in documents:
            s = [self.START, *(t for sentence in doc for t in sentence), self.END]
            for i in range(1, len(s) - 1):
                self.both[s[i - 1], s[i + 1]][s[i]] += 1
                self.left[s[i - 1]][s[i]] += 1
                self.right[s[i + 1]][s[i]] += 1
                self.unigram[s[i]] += 1
        if not self.unigram:
            raise ValueError("the n-gram table needs at least one token to count")
        self.top = self.unigram.most_common(1)[0][0]

    def predict(self, before: int, after: int, unknown: int | None = None) -> int:
        """The guess for a token between `before` and `after` (START/END at the edges).

        A neighbour equal to `unknown` (the [MASK] id) is not used.
        """
        if unknown not in (before, after) and self.both.get((before, after)):
            return self.both[before, after].most_common(1)[0][0]
        scores: dict[int, float] = {}
        for table, key in ((self.left, before), (self.right, after)):
            if key != unknown and table.get(key):
                seen = sum(table[key].values())
                for token, count in table[key].items():
                    scores[token] = scores.get(token, 0.0) + count / seen
        return max(scores, key=scores.get) if scores else self.top


def mlm_baselines(
    data: Sequence[dict], train_documents: Sequence, tokenizer
) -> dict[str, dict[str, float]]:
    """Trivial MLM predictors scored like a model: top-1 (and top-5) at [MASK] and at every chosen position.

    most_frequent: the training articles' most frequent token(s) everywhere; copy_or_frequent:
    the visible token where it is not [MASK], else the most frequent (what a model that only
    copies scores); ngram: ``NgramTable`` where [MASK], else copy.
    """
    counts = collections.Counter(t for doc in train_documents for s in doc for t in s)
    top5 = [t for t, _ in counts.most_common(5)]
    table = NgramTable(train_documents)
    mask, edges = tokenizer.mask_token_id, (tokenizer.cls_token_id, tokenizer.sep_token_id)
    hits = collections.Counter()
    n_mask = n_chosen = 0
    for item in data:
        ids, labels = item["input_ids"], item["mlm_labels"]
        for i, label in enumerate(labels):
            if label == IGNORE_INDEX:
                continue
            n_chosen += 1
            is_mask = ids[i] == mask
            if is_mask:
                before = NgramTable.START if ids[i - 1] in edges else ids[i - 1]
                after = NgramTable.END if ids[i + 1] == tokenizer.sep_token_id else ids[i + 1]
                guess = table.predict(before, after, unknown=mask)
                n_mask += 1
                hits["most_frequent mask"] += label == top5[0]
                hits["most_frequent mask_top5"] += label in top5
                hits["ngram mask"] += guess == label
            visible = top5[0] if is_mask else ids[i]
            hits["most_frequent chosen"] += label == top5[0]
            hits["copy_or_frequent chosen"] += label == visible
            hits["ngram chosen"] += label == (guess if is_mask else ids[i])
    if not n_mask:
        raise ValueError("no [MASK] positions in the data: nothing to score the baselines on")
    return {
        "most_frequent": {
            "mask_accuracy": hits["most_frequent mask"] / n_mask,
            "mask_top5": hits["most_frequent mask_top5"] / n_mask,
            "chosen_accuracy": hits["most_frequent chosen"] / n_chosen,
            "token": tokenizer.convert_ids_to_tokens(top5[0]),
        },
        "copy_or_frequent": {
            "mask_accuracy": hits["most_frequent mask"] / n_mask,
            "chosen_accuracy": hits["copy_or_frequent chosen"] / n_chosen,
        },
        "ngram": {
            "mask_accuracy": hits["ngram mask"] / n_mask,
            "chosen_accuracy": hits["ngram chosen"] / n_chosen,
        },
    }


# --- next sentence prediction: topic alone -------------------------------------------------------


class TopicBaseline:
    """NSP from topic alone: the cosine of the TF-IDF vectors of segments A and B, over a threshold.

    IDF is counted over the training documents' sentences; the threshold is the one that
    classifies the given training pairs best. Word order plays no part: swapping A and B, as
    sentence-order prediction does, leaves the cosine unchanged.
    """

    def __init__(self, documents: Sequence[Sequence[Sequence[int]]]):
        df = collections.Counter(t for doc in documents for s in doc for t in set(s))
        n = sum(len(doc) for doc in documents)
        self.idf = {t: math.log((1 + n) / (1 + c)) + 1 for t, c in df.items()}
        self.unseen = math.log(1 + n) + 1
        self.threshold = 0.0

    def vector(self, tokens: Sequence[int]) -> dict[int, float]:
        tf = collections.Counter(tokens)
        return {t: c * self.idf.get(t, self.unseen) for t, c in tf.items()}

    def cosine(self, tokens_a: Sequence[int], tokens_b: Sequence[int]) -> float:
        """Cosine similarity of the two segments' TF-IDF vectors (0 if either is empty)."""
        a, b = self.vector(tokens_a), self.vector(tokens_b)
        dot = sum(w * b.get(t, 0.0) for t, w in a.items())
        norm = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
        return dot / norm if norm else 0.0

    def fit(self, pairs: Sequence[PretrainingExample]) -> TopicBaseline:
        """Choose the cosine threshold above which a pair is called IsNext, on training pairs."""
        scored = sorted((self.cosine(p.tokens_a, p.tokens_b), p.next_sentence_label) for p in pairs)
        if not scored:
            raise ValueError("fit needs at least one pair")
        # threshold below the k-th smallest score: the first k pairs are called NotNext
        right = best = sum(label == IS_NEXT for _, label in scored)
        self.threshold = scored[0][0] - 1e-9
        for k, (score, label) in enumerate(scored, 1):
            right += 1 if label == NOT_NEXT else -1
            nxt = scored[k][0] if k < len(scored) else score + 1.0
            if right > best and nxt > score:
                best, self.threshold = right, (score + nxt) / 2
        return self

    def predict(self, pair: PretrainingExample) -> int:
        """IS_NEXT (0) when the segments are similar enough, else NOT_NEXT (1)."""
        return IS_NEXT if self.cosine(pair.tokens_a, pair.tokens_b) > self.threshold else NOT_NEXT

    def accuracy(self, pairs: Sequence[PretrainingExample]) -> float:
        """Share of pairs whose label predict() gets right."""
        return sum(self.predict(p) == p.next_sentence_label for p in pairs) / len(pairs)


# --- reviews: a bag of words, and the words that carry an opinion --------------------------------


WORD = re.compile(r"[a-z]+")  # a word, for counting: letters only, after lower-casing


def opinion_scores(
    texts: Sequence[str], labels: Sequence[int], min_count: int = 5
) -> dict[str, float]:
    """Each word's log-count ratio, log P(word | label 1) - log P(word | label 0).

    A word counts once per text it is in; add-one smoothing over the vocabulary of all the texts;
    only words in at least min_count texts are scored (positive: fresh, negative: rotten).
    """
    if len(texts) != len(labels):
        raise ValueError(f"{len(texts)} texts but {len(labels)} labels")
    in_texts: tuple[collections.Counter, collections.Counter] = (
        collections.Counter(),
        collections.Counter(),
    )
    for text, label in zip(texts, labels):
        in_texts[label].update(set(WORD.findall(text.lower())))
    vocab = in_texts[0].keys() | in_texts[1].keys()
    totals = [sum(c.values()) + len(vocab) for c in in_texts]  # smoothed: sums to one
    return {
        w: math.log((in_texts[1][w] + 1) / totals[1]) - math.log((in_texts[0][w] + 1) / totals[0])
        for w in sorted(vocab)
        if in_texts[0][w] + in_texts[1][w] >= min_count
    }


def strongest_word(text: str, scores: dict[str, float]) -> str | None:
    """The scored word of text with the largest absolute score (ties: alphabetical), or None."""
    found = sorted(w for w in set(WORD.findall(text.lower())) if w in scores)
    return max(found, key=lambda w: abs(scores[w]), default=None)
