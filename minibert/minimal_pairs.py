"""Grammatical minimal pairs: does a model prefer "the dog runs." to "the dog run."?

    pairs = generate(n=200, seed=0)                          # 200 pairs per BLiMP phenomenon
    pairs = generate(vocabulary=corpus_words)                # only words a corpus holds
    score = pll_scorer(model, tokenizer)                     # a BERT: pseudo-log-likelihood
    score = sentence_scorer(WordNgramModel(texts).log_probability)   # an n-gram, or any f(str)
    results = accuracy(pairs, score)                         # {phenomenon: Accuracy, "overall": ...}

Each pair is a grammatical sentence and an ungrammatical one that differ in one word, built from
templates over the word tables below, one paradigm per phenomenon of BLiMP (Warstadt et al.,
2020), named as BLiMP names it. A model is right on a pair when it scores the good sentence
strictly higher: a tie counts as wrong, so a model that cannot tell the two apart scores 0, not 50%.
A masked language model scores a sentence by its pseudo-log-likelihood (Salazar et al., 2020):
each WordPiece token masked in turn, log P(token) summed.
"""

from __future__ import annotations

import collections
import itertools
import math
import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from minibert.paired_statistics import paired_bootstrap
from minibert.utils import evaluating

__all__ = [
    "PHENOMENA",
    "Accuracy",
    "MinimalPair",
    "WordNgramModel",
    "accuracy",
    "generate",
    "judge",
    "pll_scorer",
    "pseudo_log_likelihood",
    "sentence_scorer",
    "summarize",
    "table",
    "words",
]

Scorer = Callable[[Sequence[str]], Sequence[float]]  # sentences -> one score each, higher: likelier


# --- the word tables: plain modern words, lower-cased ---------------------------------------------

# people and animals: (singular, plural); the plurals of man, woman, child are irregular
ANIMATE_NOUNS = [
    ("dog", "dogs"), ("cat", "cats"), ("bird", "birds"), ("horse", "horses"),
    ("teacher", "teachers"), ("student", "students"), ("doctor", "doctors"),
    ("farmer", "farmers"), ("player", "players"), ("driver", "drivers"), ("worker", "workers"),
    ("writer", "writers"), ("singer", "singers"), ("soldier", "soldiers"), ("nurse", "nurses"),
    ("friend", "friends"), ("boy", "boys"), ("girl", "girls"), ("king", "kings"),
    ("queen", "queens"), ("brother", "brothers"), ("sister", "sisters"), ("baby", "babies"),
    ("lawyer", "lawyers"), ("artist", "artists"), ("visitor", "visitors"), ("guest", "guests"),
    ("man", "men"), ("woman", "women"), ("child", "children"),
]  # fmt: skip

# things: (singular, plural), all regular
THING_NOUNS = [
    ("book", "books"), ("car", "cars"), ("house", "houses"), ("box", "boxes"),
    ("chair", "chairs"), ("table", "tables"), ("picture", "pictures"), ("bag", "bags"),
    ("bottle", "bottles"), ("cup", "cups"), ("key", "keys"), ("phone", "phones"),
    ("shirt", "shirts"), ("coat", "coats"), ("hat", "hats"), ("ball", "balls"),
    ("letter", "letters"), ("card", "cards"), ("computer", "computers"), ("bike", "bikes"),
    ("dress", "dresses"), ("glass", "glasses"), ("map", "maps"), ("ticket", "tickets"),
]  # fmt: skip

# verbs used without an object: (plural present, third person singular present)
INTRANSITIVE_PRESENT = [
    ("run", "runs"), ("sleep", "sleeps"), ("laugh", "laughs"), ("smile", "smiles"),
    ("wait", "waits"), ("arrive", "arrives"), ("cry", "cries"), ("dance", "dances"),
    ("swim", "swims"), ("walk", "walks"), ("work", "works"), ("listen", "listens"),
    ("fall", "falls"), ("sit", "sits"), ("rest", "rests"), ("jump", "jumps"),
    ("talk", "talks"), ("play", "plays"), ("win", "wins"), ("eat", "eats"),
]  # fmt: skip

# verbs that cannot take a direct object, in the past tense ("the man slept the cake" is bad;
# not "waited" nor "agreed": "waited tables", "agreed the terms")
INTRANSITIVE_PAST = [
    "arrived", "slept", "laughed", "smiled", "fell", "talked", "listened", "died", "appeared", "disappeared", "complained", "sneezed", "yawned", "coughed", "screamed",
    "frowned", "hesitated", "vanished",
]  # fmt: skip

# verbs that may drop their object, in the past tense ("the man left." is good)
OPTIONALLY_TRANSITIVE_PAST = [
    "left", "ate", "helped", "watched", "won", "lost", "sang", "read", "cooked", "drank",
    "studied", "played", "paid", "returned", "moved", "danced",
]  # fmt: skip

# verbs that must have an object, in the past tense ("the man found." is bad), each taking any
# of THING_NOUNS as its object
TRANSITIVE_ONLY_PAST = [
    "found", "brought", "borrowed", "described", "mentioned", "needed", "wanted", "liked",
    "carried", "destroyed", "removed", "owned", "admired", "revealed", "obtained", "avoided",
]  # fmt: skip

# irregular verbs whose past and past participle differ: (past, participle, objects)
IRREGULAR_VERBS = [
    ("wrote", "written", ("a letter", "a song", "the book")),
    ("ate", "eaten", ("the cake", "an apple", "the bread")),
    ("saw", "seen", ("the car", "the film", "a bird")),
    ("took", "taken", ("the bus", "the money", "a picture")),
    ("gave", "given", ("a speech", "an answer", "a gift")),
    ("broke", "broken", ("the window", "the glass", "a record")),
    ("chose", "chosen", ("a book", "the house", "a name")),
    ("drove", "driven", ("the car", "a truck", "the bus")),
    ("spoke", "spoken", ("the truth", "english", "french")),
    ("stole", "stolen", ("the money", "a car", "the bag")),
    ("forgot", "forgotten", ("the name", "the answer", "the key")),
    ("began", "begun", ("the work", "a new job", "the game")),
    ("drank", "drunk", ("the water", "the coffee", "the milk")),
    ("sang", "sung", ("a song", "the song", "the anthem")),
    ("threw", "thrown", ("the ball", "a stone", "the bottle")),
    ("knew", "known", ("the answer", "the way", "the truth")),
    ("drew", "drawn", ("a picture", "a map", "a line")),
    ("wore", "worn", ("a hat", "the dress", "a coat")),
    ("tore", "torn", ("the paper", "the shirt", "the letter")),
    ("hid", "hidden", ("the key", "the money", "the book")),
    ("shook", "shaken", ("the tree", "the box", "the bottle")),
    ("rode", "ridden", ("a horse", "the bike", "the bus")),
    ("did", "done", ("the work", "the job", "the dishes")),
    ("grew", "grown", ("a beard", "the plants", "rice")),
    ("flew", "flown", ("the plane", "a kite", "the flag")),
    ("froze", "frozen", ("the meat", "the water", "the bread")),
    ("went", "gone", ("home", "away", "to school")),
    ("forgave", "forgiven", ("the thief", "the mistake", "the debt")),
]

# people with a gender: (singular, plural, "m" or "f")
GENDERED_NOUNS = [
    ("man", "men", "m"), ("woman", "women", "f"), ("boy", "boys", "m"), ("girl", "girls", "f"),
    ("king", "kings", "m"), ("queen", "queens", "f"), ("father", "fathers", "m"),
    ("mother", "mothers", "f"), ("brother", "brothers", "m"), ("sister", "sisters", "f"),
    ("son", "sons", "m"), ("daughter", "daughters", "f"), ("husband", "husbands", "m"),
    ("wife", "wives", "f"), ("uncle", "uncles", "m"), ("aunt", "aunts", "f"),
    ("prince", "princes", "m"), ("princess", "princesses", "f"),
]  # fmt: skip

MALE_NAMES = [
    "john", "james", "david", "michael", "robert", "peter", "paul", "mark", "george", "thomas",
    "daniel", "tom", "jack", "william", "richard", "charles", "henry", "steven", "adam", "simon",
]  # fmt: skip
FEMALE_NAMES = [
    "mary", "anna", "sarah", "emma", "lucy", "susan", "jane", "alice", "laura", "helen",
    "emily", "kate", "lisa", "julia", "rachel", "rose", "linda", "maria", "grace", "claire",
]  # fmt: skip

# verbs that take a reflexive object, in the past tense ("the boy hurt himself")
REFLEXIVE_PAST = [
    "saw", "hurt", "helped", "blamed", "praised", "washed", "defended", "introduced",
    "protected", "trusted", "taught", "described", "found", "loved", "hated", "forgave",
    "admired", "asked",
]  # fmt: skip

REFLEXIVES = {"m": "himself", "f": "herself", "plural": "themselves"}

# a singular head with a relation to a plural attractor, or the reverse:
# (head singular, head plural, its attractors as (singular, plural))
PEOPLE = (("boy", "boys"), ("girl", "girls"), ("student", "students"), ("player", "players"))
RELATIONAL_NOUNS = [
    ("friend", "friends", PEOPLE),
    ("teacher", "teachers", PEOPLE),
    ("mother", "mothers", PEOPLE),
    ("father", "fathers", PEOPLE),
    ("doctor", "doctors", PEOPLE),
    ("leader", "leaders", (("team", "teams"), ("group", "groups"), ("soldier", "soldiers"))),
    ("owner", "owners", (("car", "cars"), ("house", "houses"), ("dog", "dogs"), ("shop", "shops"))),
    ("author", "authors", (("book", "books"), ("song", "songs"), ("letter", "letters"))),
    ("captain", "captains", (("ship", "ships"), ("team", "teams"), ("player", "players"))),
    ("manager", "managers", (("shop", "shops"), ("team", "teams"), ("hotel", "hotels"))),
]
PREDICATE_ADJECTIVES = [
    "happy", "tired", "late", "busy", "ready", "angry", "famous", "rich", "young", "old", "sick",
]  # fmt: skip
COPULAS = [("is", "are"), ("was", "were")]  # (singular, plural)

DETERMINERS = [("this", "these"), ("that", "those")]  # (singular, plural)
# verbs in the past tense (no agreement with the subject) that take any of THING_NOUNS
THING_VERBS_PAST = [
    "saw", "found", "bought", "liked", "wanted", "took", "needed", "carried", "sold", "moved",
    "kept", "lost", "used",
]  # fmt: skip


def _regular(singular: str, plural: str) -> bool:
    """True when plural is singular + s, + es, or y -> ies."""
    return plural in (singular + "s", singular + "es", singular[:-1] + "ies")


def _people() -> list[str]:
    """Singular subjects that are people: "the teacher", "the boy", and the names."""
    nouns = [s for s, _ in ANIMATE_NOUNS if s not in ("dog", "cat", "bird", "horse", "baby")]
    return [f"the {n}" for n in nouns] + MALE_NAMES + FEMALE_NAMES


# --- the paradigms: each yields (group, good, bad); a pair's sentences differ in one word ----------

Entry = tuple[str, str, str]  # (group, good sentence, bad sentence)


def _subject_verb_agreement() -> Iterable[Entry]:
    """regular_plural_subject_verb_agreement_1: "the dog runs." / "the dog run." (the verb)."""
    for singular, plural in ANIMATE_NOUNS:
        if _regular(singular, plural):
            for base, third in INTRANSITIVE_PRESENT:
                yield "singular", f"the {singular} {third}.", f"the {singular} {base}."
                yield "plural", f"the {plural} {base}.", f"the {plural} {third}."


def _attractor_agreement() -> Iterable[Entry]:
    """distractor_agreement_relational_noun: "the author of the books is famous." / "... are
    famous."; the attractor always has the other number than the head."""
    for head, heads, attractors in RELATIONAL_NOUNS:
        for one, many in attractors:
            for is_, are in COPULAS:
                for adjective in PREDICATE_ADJECTIVES:
                    singular, plural = f"the {head} of the {many}", f"the {heads} of the {one}"
                    yield (
                        "singular head",
                        f"{singular} {is_} {adjective}.",
                        f"{singular} {are} {adjective}.",
                    )
                    yield (
                        "plural head",
                        f"{plural} {are} {adjective}.",
                        f"{plural} {is_} {adjective}.",
                    )


def _determiner_noun(vary: str) -> Callable[[], Iterable[Entry]]:
    """determiner_noun_agreement_1 (vary="noun"): "... this book." / "... this books.";
    determiner_noun_agreement_2 (vary="determiner"): "... this book." / "... these book."."""

    def entries() -> Iterable[Entry]:
        verbs = itertools.cycle(THING_VERBS_PAST)  # one verb for each subject and noun, in turn
        for subject in _people():
            for this, these in DETERMINERS:
                for one, many in THING_NOUNS:
                    start = f"{subject} {next(verbs)}"
                    if vary == "noun":
                        yield "singular", f"{start} {this} {one}.", f"{start} {this} {many}."
                        yield "plural", f"{start} {these} {many}.", f"{start} {these} {one}."
                    else:
                        yield "singular", f"{start} {this} {one}.", f"{start} {these} {one}."
                        yield "plural", f"{start} {these} {many}.", f"{start} {this} {many}."

    return entries


def _anaphor_number() -> Iterable[Entry]:
    """anaphor_number_agreement: "the boys saw themselves." / "the boys saw himself."."""
    named = [(n, "m") for n in MALE_NAMES] + [(n, "f") for n in FEMALE_NAMES]
    for verb in REFLEXIVE_PAST:
        for singular, plural, gender in GENDERED_NOUNS:
            him = REFLEXIVES[gender]
            yield "singular", f"the {singular} {verb} {him}.", f"the {singular} {verb} themselves."
            yield "plural", f"the {plural} {verb} themselves.", f"the {plural} {verb} {him}."
        for name, gender in named:
            him = REFLEXIVES[gender]
            yield "singular", f"{name} {verb} {him}.", f"{name} {verb} themselves."


def _anaphor_gender() -> Iterable[Entry]:
    """anaphor_gender_agreement: "mary saw herself." / "mary saw himself."."""
    subjects = [(f"the {s}", g) for s, _, g in GENDERED_NOUNS]
    subjects += [(n, "m") for n in MALE_NAMES] + [(n, "f") for n in FEMALE_NAMES]
    for verb in REFLEXIVE_PAST:
        for subject, gender in subjects:
            right, wrong = REFLEXIVES[gender], REFLEXIVES["f" if gender == "m" else "m"]
            group = "masculine" if gender == "m" else "feminine"
            yield group, f"{subject} {verb} {right}.", f"{subject} {verb} {wrong}."


def _irregular_past() -> Iterable[Entry]:
    """irregular_past_participle_verbs: "the girl wrote a letter." / "the girl written a
    letter.", and in the perfect "the girl has written a letter." / "the girl has wrote a
    letter."; singular subjects only (a plural "ran" / "run" would be a present tense)."""
    for subject in _people():
        for past, participle, objects in IRREGULAR_VERBS:
            for thing in objects:
                yield "past", f"{subject} {past} {thing}.", f"{subject} {participle} {thing}."
                yield (
                    "perfect",
                    f"{subject} has {participle} {thing}.",
                    f"{subject} has {past} {thing}.",
                )


def _transitive() -> Iterable[Entry]:
    """transitive: "the man found the book." / "the man slept the book." (the verb)."""
    intransitive = itertools.cycle(INTRANSITIVE_PAST)  # one bad verb for each good one, in turn
    for subject in _people():
        for good in TRANSITIVE_ONLY_PAST:
            for thing, _ in THING_NOUNS:
                bad = next(intransitive)
                yield "", f"{subject} {good} the {thing}.", f"{subject} {bad} the {thing}."


def _drop_argument() -> Iterable[Entry]:
    """drop_argument: "the man left." / "the man found." (a verb that must have an object)."""
    for subject in _people():
        for good in OPTIONALLY_TRANSITIVE_PAST + INTRANSITIVE_PAST:
            for bad in TRANSITIVE_ONLY_PAST:
                yield "", f"{subject} {good}.", f"{subject} {bad}."


# name (as BLiMP's) -> the paradigm's entries; each group of a paradigm gets an equal share
PHENOMENA: dict[str, Callable[[], Iterable[Entry]]] = {
    "regular_plural_subject_verb_agreement_1": _subject_verb_agreement,
    "distractor_agreement_relational_noun": _attractor_agreement,
    "determiner_noun_agreement_1": _determiner_noun("noun"),
    "determiner_noun_agreement_2": _determiner_noun("determiner"),
    "anaphor_number_agreement": _anaphor_number,
    "anaphor_gender_agreement": _anaphor_gender,
    "irregular_past_participle_verbs": _irregular_past,
    "transitive": _transitive,
    "drop_argument": _drop_argument,
}


@dataclass(frozen=True)
class MinimalPair:
    """A grammatical sentence and an ungrammatical one that differ where the phenomenon says."""

    phenomenon: str  # BLiMP's name of the paradigm
    good: str
    bad: str
    group: str = ""  # the paradigm's case: "singular" / "plural" subject, "past" / "perfect", ...


def words(text: str) -> list[str]:
    """text lower-cased and split into words and punctuation: "The dog runs." -> the dog runs ."""
    return re.findall(r"\w+|[^\w\s]", text.lower())


def generate(
    n: int = 200,
    seed: int = 0,
    vocabulary: Iterable[str] | None = None,
    phenomena: Sequence[str] | None = None,
) -> list[MinimalPair]:
    """n pairs of each phenomenon (all of PHENOMENA unless named), drawn without repeats.

    vocabulary: the known words (a corpus's, say; compared lower-cased); only pairs all of whose
    words are known are drawn. A paradigm's groups (singular and plural subjects, ...) get equal
    shares. The same arguments give the same pairs; each phenomenon's draw depends only on the
    seed and its name.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int (pairs per phenomenon), got {n!r}")
    names = list(PHENOMENA) if phenomena is None else list(phenomena)
    unknown = [name for name in names if name not in PHENOMENA]
    if unknown or not names:
        raise ValueError(f"phenomena must be among {sorted(PHENOMENA)}, got {names!r}")
    known = None if vocabulary is None else {w.lower() for w in vocabulary}
    pairs = []
    for name in names:
        groups: dict[str, list[tuple[str, str]]] = {}
        for group, good, bad in PHENOMENA[name]():
            groups.setdefault(group, [])  # a group with no known pair still asks its share
            if known is None or all(w in known for w in _content_words(good + " " + bad)):
                groups[group].append((good, bad))
        rng = random.Random(f"{seed}:{name}")  # a str seed is hashed the same in every process
        for i, (group, candidates) in enumerate(groups.items()):
            share = n // len(groups) + (i < n % len(groups))
            if len(candidates) < share:
                have = "" if known is None else " from the vocabulary"
                raise ValueError(
                    f"{name}: only {len(candidates):,} {group or 'distinct'} pairs can be built"
                    f"{have}, {share:,} needed for {n:,} pairs; ask for fewer pairs (n), give a "
                    f"larger vocabulary, or leave {name} out (phenomena=...)"
                )
            drawn = rng.sample(candidates, share)
            pairs += [MinimalPair(name, good, bad, group) for good, bad in drawn]
    return pairs


def _content_words(sentences: str) -> list[str]:
    """The words of generated sentences without their full stops: what a vocabulary must know."""
    return sentences.replace(".", " ").split()


# --- scoring: a masked language model's pseudo-log-likelihood, or any f(sentence) ---------------


@torch.no_grad()
def pseudo_log_likelihood(
    model: nn.Module, tokenizer: Any, sentences: Sequence[str], batch_size: int = 128
) -> list[float]:
    """Each sentence's pseudo-log-likelihood in nats (Salazar et al., 2020): every WordPiece
    token masked in turn, one at a time, and log P(original token) summed; [CLS] and [SEP] are
    never masked. model: a BertForMaskedLM or BertForPreTraining, run in eval mode; batch_size:
    masked copies per forward pass."""
    if isinstance(sentences, str) or not all(isinstance(s, str) for s in sentences):
        raise TypeError("sentences must be a list of str (wrap a single sentence in a list)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int (masked copies), got {batch_size!r}")
    if not (hasattr(model, "bert") and hasattr(model, "mlm")):
        raise TypeError(
            f"pseudo_log_likelihood needs a masked language model with .bert and .mlm "
            f"(minibert's BertForMaskedLM or BertForPreTraining), got {type(model).__name__}"
        )
    encoded = [list(tokenizer(s)["input_ids"]) for s in sentences]
    limit = model.config.max_position_embeddings
    for i, ids in enumerate(encoded):
        if len(ids) <= 2 or len(ids) > limit:
            raise ValueError(
                f"sentence {i} is {len(ids) - 2:,} WordPiece tokens without [CLS] and [SEP]; "
                f"each must have 1 to {limit - 2:,}: give a non-empty, shorter sentence "
                f"({sentences[i]!r:.80})"
            )
    # one copy per (sentence, position) to mask; copies of similar length batched together
    copies = sorted(
        ((i, p) for i, ids in enumerate(encoded) for p in range(1, len(ids) - 1)),
        key=lambda copy: len(encoded[copy[0]]),
    )
    device = next(model.parameters()).device
    totals = [0.0] * len(sentences)
    with evaluating(model):
        for start in range(0, len(copies), batch_size):
            batch = copies[start : start + batch_size]
            length = max(len(encoded[i]) for i, _ in batch)
            input_ids = torch.full((len(batch), length), tokenizer.pad_token_id)  # (copies, seq)
            attention_mask = torch.zeros_like(input_ids)
            for row, (i, position) in enumerate(batch):
                input_ids[row, : len(encoded[i])] = torch.tensor(encoded[i])
                attention_mask[row, : len(encoded[i])] = 1
                input_ids[row, position] = tokenizer.mask_token_id
            rows = torch.arange(len(batch), device=device)
            positions = torch.tensor([p for _, p in batch], device=device)
            originals = torch.tensor([encoded[i][p] for i, p in batch], device=device)
            hidden = model.bert(
                input_ids.to(device), attention_mask=attention_mask.to(device)
            ).last_hidden_state  # (copies, seq, hidden)
            # the vocabulary projection only where the [MASK] is: (copies, vocab)
            logits = model.mlm(hidden[rows, positions]).float()
            log_probs = logits.log_softmax(-1)[rows, originals]  # (copies,)
            for (i, _), log_prob in zip(batch, log_probs.tolist()):
                totals[i] += log_prob
    return totals


def pll_scorer(model: nn.Module, tokenizer: Any, batch_size: int = 128) -> Scorer:
    """A Scorer for accuracy and judge: sentences -> their pseudo-log-likelihoods under model."""
    return lambda sentences: pseudo_log_likelihood(model, tokenizer, sentences, batch_size)


def sentence_scorer(score: Callable[[str], float]) -> Scorer:
    """A Scorer from any one-sentence score (an n-gram's log-probability, say), higher: likelier."""
    return lambda sentences: [float(score(s)) for s in sentences]


class WordNgramModel:
    """A word n-gram language model: the minimal pairs' n-gram baseline.

    Add-k (discount None): P(w | h) = (count(h, w) + k) / (count(h) + k n_V), h the order - 1
    words before w (<s> before the first), V the training words, </s> and <unk> (a word never seen
    in training is <unk>). A history never seen in training backs off to its longest seen suffix
    (at worst the empty one: add-k unigrams), so each P(. | h) still sums to one over V.

    Interpolated absolute discounting (discount d in (0, 1], Ney et al. 1994), the better
    baseline: P(w | h) = max(count(h, w) - d, 0) / count(h) + d N(h) / count(h) P(w | h'), N(h)
    the distinct words seen after h and h' the history without its first word; an unseen history
    is its shorter one's; the add-k unigrams at the end. Under add-k alone a history seen once or
    twice spreads its few counts over all of V (k n_V pseudo-counts, n_V the size of V), while a history never seen
    borrows a frequent shorter one's: a rare grammatical sequence can score below an unseen
    ungrammatical one. Words as ``words`` splits.
    """

    START, END, UNKNOWN = "<s>", "</s>", "<unk>"

    def __init__(
        self,
        texts: Iterable[str],
        order: int = 3,
        k: float = 0.1,
        discount: float | None = None,
    ):
        if isinstance(order, bool) or not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1 (3 for trigrams), got {order!r}")
        if not k > 0:
            raise ValueError(f"k must be > 0 (the add-k smoothing count), got {k!r}")
        if discount is not None and not 0 < discount <= 1:
            raise ValueError(
                f"discount must be in (0, 1] (0.75 is usual) or None, got {discount!r}"
            )
        self.order, self.k, self.discount = order, k, discount
        self.counts: dict[tuple[str, ...], collections.Counter] = collections.defaultdict(
            collections.Counter
        )  # history -> next word -> count, for histories of 0 to order - 1 words
        seen: set[str] = set()
        for text in texts:
            sequence = self._padded(words(text))
            seen.update(words(text))
            for i in range(order - 1, len(sequence)):
                for m in range(order):  # the history's length
                    self.counts[tuple(sequence[i - m : i])][sequence[i]] += 1
        if not seen:
            raise ValueError("the n-gram model needs at least one word of training text")
        self.vocabulary = seen | {self.END, self.UNKNOWN}
        self.totals = {history: sum(c.values()) for history, c in self.counts.items()}

    def _padded(self, sentence_words: list[str]) -> list[str]:
        return [self.START] * (self.order - 1) + sentence_words + [self.END]

    def log_prob(self, word: str, history: Sequence[str]) -> float:
        """log P(word | history), natural log; history: the words before, <s> for the start."""
        word = word if word in self.vocabulary else self.UNKNOWN
        h = tuple(w if w in self.vocabulary or w == self.START else self.UNKNOWN for w in history)
        h = h[len(h) - (self.order - 1) :] if self.order > 1 else ()
        if self.discount is not None:
            return math.log(self._interpolated(word, h))
        while h and not self.totals.get(h):
            h = h[1:]  # never seen: back off to the shorter history
        count, total = self.counts.get(h, {}).get(word, 0), self.totals.get(h, 0)
        return math.log((count + self.k) / (total + self.k * len(self.vocabulary)))

    def _interpolated(self, word: str, h: tuple[str, ...]) -> float:
        """P(word | h) by interpolated absolute discounting, down to the add-k unigrams."""
        total = self.totals.get(h, 0)
        if not h:
            count = self.counts.get((), {}).get(word, 0)
            return (count + self.k) / (total + self.k * len(self.vocabulary))
        lower = self._interpolated(word, h[1:])
        if not total:
            return lower  # a history never seen: its shorter one's distribution
        seen_after = self.counts[h]
        kept = max(seen_after.get(word, 0) - self.discount, 0.0) / total
        return kept + self.discount * len(seen_after) / total * lower

    def log_probability(self, text: str) -> float:
        """log P(text) in nats: each word given the order - 1 before it, and </s> at the end."""
        sequence = self._padded(words(text))
        start = self.order - 1
        return sum(
            self.log_prob(sequence[i], sequence[i - start : i]) for i in range(start, len(sequence))
        )


# --- accuracy: right only when the good sentence scores strictly higher -------------------------


@dataclass(frozen=True)
class Accuracy:
    """The share of pairs a scorer gets right, and its bootstrap interval (over the pairs)."""

    pairs: int
    right: int
    accuracy: float
    low: float
    high: float


def judge(pairs: Sequence[MinimalPair], score: Scorer) -> list[bool]:
    """For each pair, whether score(good) > score(bad) strictly: a tie is wrong. Each distinct
    sentence is scored once."""
    if not pairs:
        raise ValueError("no pairs to judge: generate() some")
    sentences = list(dict.fromkeys(s for p in pairs for s in (p.good, p.bad)))
    scores = list(score(sentences))
    if len(scores) != len(sentences):
        raise ValueError(
            f"the scorer returned {len(scores):,} scores for {len(sentences):,} sentences: "
            "it must return one score per sentence, in order"
        )
    of = dict(zip(sentences, scores))
    return [bool(of[p.good] > of[p.bad]) for p in pairs]


def summarize(
    pairs: Sequence[MinimalPair], right: Sequence[bool], level: float = 0.95, seed: int = 0
) -> dict[str, Accuracy]:
    """Accuracy per phenomenon (in the pairs' order) and "overall" (all pairs pooled), each with
    its percentile bootstrap interval at level (``paired_statistics.paired_bootstrap`` against
    an all-wrong partner: the pairs resampled, 2,000 times)."""
    if len(right) != len(pairs):
        raise ValueError(f"{len(pairs):,} pairs but {len(right):,} judgements: give one per pair")
    by_phenomenon: dict[str, list[bool]] = {}
    for pair, ok in zip(pairs, right):
        by_phenomenon.setdefault(pair.phenomenon, []).append(bool(ok))
    by_phenomenon["overall"] = [bool(ok) for ok in right]
    results = {}
    for name, outcomes in by_phenomenon.items():
        if len(outcomes) < 2:
            raise ValueError(f"{name} has {len(outcomes)} pair: an interval needs at least 2")
        # the mean of outcomes minus the mean of zeros: the accuracy, resampled over the pairs
        value, low, high = paired_bootstrap([0] * len(outcomes), outcomes, level=level, seed=seed)
        results[name] = Accuracy(len(outcomes), sum(outcomes), value, low, high)
    return results


def accuracy(
    pairs: Sequence[MinimalPair], score: Scorer, level: float = 0.95, seed: int = 0
) -> dict[str, Accuracy]:
    """Accuracy per phenomenon and overall, with intervals: ``summarize(pairs, judge(pairs, score))``."""
    return summarize(pairs, judge(pairs, score), level=level, seed=seed)


def table(results: dict[str, Accuracy]) -> str:
    """The results as aligned text lines: phenomenon, accuracy in %, its interval, pairs."""
    width = max(map(len, results))
    return "\n".join(
        f"{name:<{width}}  {100 * r.accuracy:5.1f}%  [{100 * r.low:5.1f}, {100 * r.high:5.1f}]  "
        f"({r.right:,} of {r.pairs:,})"
        for name, r in results.items()
    )
