"""minibert.minimal_pairs: the pairs' generator and word tables, the scorers, ties counted wrong."""

import math
import re

import pytest
import torch

from minibert import minimal_pairs as mp
from minibert.config import BertConfig
from minibert.model import BertForMaskedLM, BertForPreTraining
from minibert.tokenization import BertTokenizer

BLIMP_NAMES = {  # BLiMP's own names (Warstadt et al., 2020, the data's UID field)
    "regular_plural_subject_verb_agreement_1",
    "distractor_agreement_relational_noun",
    "determiner_noun_agreement_1",
    "determiner_noun_agreement_2",
    "anaphor_number_agreement",
    "anaphor_gender_agreement",
    "irregular_past_participle_verbs",
    "transitive",
    "drop_argument",
}


@pytest.fixture(scope="module")
def pairs():
    return mp.generate()


# --- the generator ----------------------------------------------------------------------------


def test_each_blimp_phenomenon_gets_200_pairs_in_equal_groups_without_repeats(pairs):
    assert set(mp.PHENOMENA) == BLIMP_NAMES
    for name in mp.PHENOMENA:
        mine = [p for p in pairs if p.phenomenon == name]
        assert len(mine) == 200 and len(set(mine)) == 200, name
        groups = {p.group for p in mine}
        assert all(sum(p.group == g for p in mine) == 200 // len(groups) for g in groups), name
        assert all(p.good != p.bad for p in mine)
    by_group = {(p.phenomenon, p.group) for p in pairs}  # both numbers, both genders, both tenses
    assert {
        ("regular_plural_subject_verb_agreement_1", g) for g in ("singular", "plural")
    } <= by_group
    assert {("anaphor_gender_agreement", g) for g in ("masculine", "feminine")} <= by_group
    assert {("irregular_past_participle_verbs", g) for g in ("past", "perfect")} <= by_group


def _one_swap(pair: mp.MinimalPair) -> tuple[int, list[str], str, str]:
    """(position, good's words, good word, bad word) of the one word the sentences differ in."""
    good, bad = pair.good.rstrip(".").split(), pair.bad.rstrip(".").split()
    assert len(good) == len(bad) and pair.good.endswith(".") and pair.bad.endswith("."), pair
    differ = [i for i, (a, b) in enumerate(zip(good, bad)) if a != b]
    assert len(differ) == 1, pair
    return differ[0], good, good[differ[0]], bad[differ[0]]


def _third_person(base: str) -> str:
    """English's rule, written apart from the module's table: run -> runs, cry -> cries."""
    if base.endswith("y") and base[-2] not in "aeiou":
        return base[:-1] + "ies"
    return base + ("es" if base.endswith(("s", "sh", "ch", "x")) else "s")


SINGULAR_DETERMINERS, PLURAL_DETERMINERS = {"this", "that"}, {"these", "those"}
MASCULINE = {"man", "boy", "king", "father", "brother", "son", "husband", "uncle", "prince"}
FEMININE = {"woman", "girl", "queen", "mother", "sister", "daughter", "wife", "aunt", "princess"}
FEMININE_PLURAL = {"women", "girls", "queens", "mothers", "sisters", "daughters", "wives", "aunts"}


def _female(subject: str) -> bool:
    return subject in FEMININE | FEMININE_PLURAL | {"princesses"} or subject in mp.FEMALE_NAMES


def _is_plural(noun: str) -> bool:
    """A common noun's number (a name is singular: "thomas", "charles")."""
    return noun in ("men", "women", "children") or (noun.endswith("s") and not noun.endswith("ss"))


def test_each_pair_differs_in_one_word_where_its_phenomenon_says(pairs):
    """Checked by rules written here, not read back from the module's tables where avoidable."""
    plural_of = {s: p for s, p in mp.THING_NOUNS}
    forms = {(past, participle) for past, participle, _ in mp.IRREGULAR_VERBS}
    for pair in pairs:
        i, good, right, wrong = _one_swap(pair)
        name = pair.phenomenon
        if name == "regular_plural_subject_verb_agreement_1":  # the dog runs / the dog run
            assert i == 2 and good[0] == "the"
            if _is_plural(good[1]):
                assert wrong == _third_person(right) and pair.group == "plural", pair
            else:
                assert right == _third_person(wrong) and pair.group == "singular", pair
        elif name == "distractor_agreement_relational_noun":  # the author of the books is
            assert good[2:4] == ["of", "the"] and i == 5, pair
            head, attractor = _is_plural(good[1]), _is_plural(good[4])
            assert head != attractor, pair  # the attractor has the other number
            assert (right in ("are", "were")) == head and {right, wrong} in (
                {"is", "are"},
                {"was", "were"},
            ), pair
        elif name == "determiner_noun_agreement_1":  # this book / this books: the noun
            determiner = good[i - 1]
            noun_plural = right in plural_of.values()
            assert (determiner in PLURAL_DETERMINERS) == noun_plural, pair
            assert (plural_of.get(right) == wrong) or (plural_of.get(wrong) == right), pair
        elif name == "determiner_noun_agreement_2":  # this book / these book: the determiner
            noun = good[i + 1]
            plural = noun in plural_of.values()
            assert right in (PLURAL_DETERMINERS if plural else SINGULAR_DETERMINERS), pair
            assert {right, wrong} in ({"this", "these"}, {"that", "those"}), pair
        elif name == "anaphor_number_agreement":  # the boys saw themselves / himself
            assert i == len(good) - 1 and "themselves" in (right, wrong), pair
            subject = good[1] if good[0] == "the" else good[0]
            assert (right == "themselves") == (good[0] == "the" and _is_plural(subject)), pair
            other = wrong if right == "themselves" else right  # the subject's gender is kept
            assert other == ("herself" if _female(subject) else "himself"), pair
        elif name == "anaphor_gender_agreement":  # mary saw herself / himself
            assert i == len(good) - 1 and {right, wrong} == {"himself", "herself"}, pair
            subject = good[1] if good[0] == "the" else good[0]
            female = _female(subject)
            assert female != (subject in MASCULINE or subject in mp.MALE_NAMES), pair
            assert right == ("herself" if female else "himself"), pair
        elif name == "irregular_past_participle_verbs":  # wrote / written, has written / has wrote
            perfect = good[i - 1] == "has"
            assert ((wrong, right) if perfect else (right, wrong)) in forms, pair
            assert pair.group == ("perfect" if perfect else "past")
        elif name == "transitive":  # found the book / slept the book: an object follows
            assert good[i + 1] == "the" and i + 2 == len(good) - 1, pair  # ... found the book
            assert right in mp.TRANSITIVE_ONLY_PAST and wrong in mp.INTRANSITIVE_PAST, pair
        elif name == "drop_argument":  # left / found: no object
            assert i == len(good) - 1, pair
            assert wrong in mp.TRANSITIVE_ONLY_PAST, pair
            assert right in mp.OPTIONALLY_TRANSITIVE_PAST + mp.INTRANSITIVE_PAST, pair
        else:
            pytest.fail(f"no check for {name}")


def test_the_word_tables_are_plain_lowercase_words_and_their_classes_disjoint():
    tables = [
        [w for pair in mp.ANIMATE_NOUNS + mp.THING_NOUNS for w in pair],
        [w for pair in mp.INTRANSITIVE_PRESENT for w in pair],
        mp.INTRANSITIVE_PAST + mp.OPTIONALLY_TRANSITIVE_PAST + mp.TRANSITIVE_ONLY_PAST,
        [w for past, part, things in mp.IRREGULAR_VERBS for w in (past, part, *" ".join(things).split())],
        [w for s, p, _ in mp.GENDERED_NOUNS for w in (s, p)] + mp.MALE_NAMES + mp.FEMALE_NAMES,
        mp.REFLEXIVE_PAST + mp.PREDICATE_ADJECTIVES + mp.THING_VERBS_PAST,
    ]  # fmt: skip
    for table in tables:
        assert all(re.fullmatch(r"[a-z]+", w) for w in table), table
    for base, third in mp.INTRANSITIVE_PRESENT:
        assert third == _third_person(base)
    assert all(plural.endswith("s") for _, plural in mp.THING_NOUNS)  # all regular
    assert all(past != participle for past, participle, _ in mp.IRREGULAR_VERBS)
    must, never = set(mp.TRANSITIVE_ONLY_PAST), set(mp.INTRANSITIVE_PAST)
    assert not must & never and not must & set(mp.OPTIONALLY_TRANSITIVE_PAST)
    assert not set(mp.MALE_NAMES) & set(mp.FEMALE_NAMES)
    assert {g for _, _, g in mp.GENDERED_NOUNS} == {"m", "f"}


def test_a_vocabulary_keeps_every_word_known_and_too_small_a_one_is_refused(pairs):
    every = {w for p in pairs for w in mp.words(p.good + " " + p.bad) if w.isalpha()}
    removed = {"dog", "runs", "john", "mary", "famous", "book", "written", "slept"}
    known = {w.upper() for w in every - removed}  # compared lower-cased
    kept = mp.generate(n=100, vocabulary=known)
    assert len(kept) == 100 * len(mp.PHENOMENA)
    for pair in kept:
        used = set(mp.words(pair.good + " " + pair.bad)) - {"."}
        assert used <= every - removed, pair
    with pytest.raises(ValueError, match="anaphor_number_agreement: only 0 singular pairs"):
        mp.generate(n=10, vocabulary=every - {"themselves"})
    tiny = {"the", "dog", "dogs", "run", "runs"}  # 1 singular and 1 plural pair can be built
    assert (
        len(
            mp.generate(n=2, vocabulary=tiny, phenomena=["regular_plural_subject_verb_agreement_1"])
        )
        == 2
    )
    with pytest.raises(
        ValueError, match="regular_plural_subject_verb_agreement_1: only 1 singular"
    ):
        mp.generate(n=4, vocabulary=tiny, phenomena=["regular_plural_subject_verb_agreement_1"])


def test_the_same_seed_gives_the_same_pairs_and_a_phenomenon_its_own_draw(pairs):
    assert mp.generate() == pairs
    assert mp.generate(seed=1) != pairs
    alone = mp.generate(phenomena=["transitive"])
    assert alone == [p for p in pairs if p.phenomenon == "transitive"]
    with pytest.raises(ValueError, match="phenomena must be among"):
        mp.generate(phenomena=["island_effects"])
    with pytest.raises(ValueError, match="positive int"):
        mp.generate(n=0)


# --- pseudo-log-likelihood ---------------------------------------------------------------------

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "run", "##s", "."]


def _tiny(model_class):
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
        max_position_embeddings=16, initializer_range=0.5,
    )  # fmt: skip
    return model_class(config), BertTokenizer(VOCAB)


def _pll_by_hand(model, tokenizer, sentence: str) -> float:
    """Mask each piece but [CLS] and [SEP] in turn, one forward pass each, sum log P(piece)."""
    ids = tokenizer(sentence).input_ids
    total = 0.0
    model.eval()
    for position in range(1, len(ids) - 1):
        masked = list(ids)
        masked[position] = tokenizer.mask_token_id
        with torch.no_grad():
            out = model(input_ids=torch.tensor([masked]))
        logits = out.logits if isinstance(model, BertForMaskedLM) else out.mlm_logits
        total += float(logits[0, position].log_softmax(-1)[ids[position]])
    return total


@pytest.mark.parametrize("model_class", [BertForMaskedLM, BertForPreTraining])
def test_pseudo_log_likelihood_is_the_hand_count(model_class):
    model, tokenizer = _tiny(model_class)
    assert tokenizer.tokenize("the dog runs") == ["the", "dog", "run", "##s"]
    assert tokenizer.tokenize("dog .") == ["dog", "."]
    sentences = ["dog .", "the dog runs", "the dog"]  # 2, 4 and 2 pieces: padded, batches of 3
    expected = [_pll_by_hand(model, tokenizer, s) for s in sentences]
    model.train()  # dropout on: the scorer must switch it off, and back on after
    rows = []
    hook = model.bert.register_forward_hook(lambda m, args, out: rows.append(args[0].shape[0]))
    got = mp.pseudo_log_likelihood(model, tokenizer, sentences, batch_size=3)
    hook.remove()
    assert got == pytest.approx(expected, abs=1e-6)
    assert sum(rows) == 2 + 4 + 2 and max(rows) == 3  # one copy per piece: [CLS]/[SEP] never masked
    assert model.training
    assert all(x < 0 for x in got) and len({round(x, 6) for x in got}) == 3  # real, distinct
    assert mp.pll_scorer(model, tokenizer, batch_size=64)(sentences) == pytest.approx(
        expected, abs=1e-6
    )


def test_pseudo_log_likelihood_refuses_what_it_cannot_score():
    model, tokenizer = _tiny(BertForMaskedLM)
    with pytest.raises(TypeError, match="list of str"):
        mp.pseudo_log_likelihood(model, tokenizer, "the dog")
    with pytest.raises(ValueError, match="1 to 14"):
        mp.pseudo_log_likelihood(model, tokenizer, ["the dog " * 10])
    with pytest.raises(ValueError, match="1 to 14"):
        mp.pseudo_log_likelihood(model, tokenizer, [""])
    with pytest.raises(TypeError, match="masked language model"):
        mp.pseudo_log_likelihood(torch.nn.Linear(2, 2), tokenizer, ["the dog"])


# --- the n-gram sentence scorer -----------------------------------------------------------------


def test_the_word_ngram_log_probability_is_the_hand_count():
    lm = mp.WordNgramModel(["a b", "a c"], order=2, k=1.0)
    assert lm.vocabulary == {"a", "b", "c", "</s>", "<unk>"}  # |V| = 5
    # P(a | <s>) = (2 + 1) / (2 + 5); P(b | a) = (1 + 1) / (2 + 5); P(</s> | b) = (1 + 1) / (1 + 5)
    assert lm.log_probability("a b") == pytest.approx(math.log(3 / 7 * 2 / 7 * 2 / 6))
    # "A B." : lower-cased; "." never seen: <unk>, P(. | b) = 1/6, then P(</s> | <unk>): the
    # history <unk> never seen, backed off to the unigrams (6 tokens counted): (2 + 1) / (6 + 5)
    assert lm.log_probability("A B.") == pytest.approx(math.log(3 / 7 * 2 / 7 * 1 / 6 * 3 / 11))
    for history in (["<s>"], ["a"], ["zebra"]):  # each P(. | h) sums to one over V
        total = sum(math.exp(lm.log_prob(w, history)) for w in lm.vocabulary)
        assert total == pytest.approx(1.0)
    trigram = mp.WordNgramModel(["a b c"], order=3, k=0.5)  # V = a b c </s> <unk>: 5
    # P(a | <s> <s>) = 1.5 / 3.5; P(b | <s> a) = 1.5 / 3.5; P(c | a b) = 1.5 / 3.5; P(</s> | b c) = 1.5 / 3.5
    assert trigram.log_probability("a b c") == pytest.approx(4 * math.log(1.5 / 3.5))
    with pytest.raises(ValueError, match="at least one word"):
        mp.WordNgramModel([""])


def test_the_discounted_ngram_is_the_hand_count_and_sums_to_one():
    lm = mp.WordNgramModel(["a b", "a c"], order=2, k=1.0, discount=0.5)
    unigram = {"a": 3 / 11, "b": 2 / 11, "c": 2 / 11, "</s>": 3 / 11, "<unk>": 1 / 11}
    # after <s>: a twice (one distinct word): (2 - 0.5) / 2 + 0.5 * 1 / 2 * P(a)
    p_a = 1.5 / 2 + 0.25 * unigram["a"]
    # after a: b once, c once (two distinct): (1 - 0.5) / 2 + 0.5 * 2 / 2 * P(b)
    p_b = 0.5 / 2 + 0.5 * unigram["b"]
    # after b: </s> once: (1 - 0.5) / 1 + 0.5 * 1 / 1 * P(</s>)
    p_end = 0.5 + 0.5 * unigram["</s>"]
    assert lm.log_probability("a b") == pytest.approx(math.log(p_a * p_b * p_end))
    for history in (["<s>"], ["a"], ["b"], ["zebra"]):
        total = sum(math.exp(lm.log_prob(w, history)) for w in lm.vocabulary)
        assert total == pytest.approx(1.0)
    with pytest.raises(ValueError, match="discount"):
        mp.WordNgramModel(["a"], discount=1.5)


# --- accuracy -------------------------------------------------------------------------------------


def test_a_tie_is_wrong_and_only_a_strictly_higher_good_sentence_is_right(pairs):
    goods = {p.good for p in pairs}
    constant = mp.accuracy(pairs, mp.sentence_scorer(lambda s: 0.0))  # can't tell: all ties
    assert all(r.accuracy == 0.0 and r.right == 0 for r in constant.values())
    assert constant["overall"].pairs == len(pairs)
    perfect = mp.accuracy(pairs, mp.sentence_scorer(lambda s: float(s in goods)))
    assert all(r.accuracy == 1.0 == r.low == r.high for r in perfect.values())
    few = pairs[:2]
    scores = {few[0].good: -1.0, few[0].bad: -1.0, few[1].good: -1.0, few[1].bad: -1.5}
    assert mp.judge(few, mp.sentence_scorer(scores.__getitem__)) == [False, True]
    with pytest.raises(ValueError, match="one score per sentence"):
        mp.judge(few, lambda sentences: [0.0])


def test_accuracy_per_phenomenon_and_overall_with_its_bootstrap_interval(pairs):
    right = [i % 4 != 0 for i in range(len(pairs))]  # 3 in 4 right, in every phenomenon
    results = mp.summarize(pairs, right)
    assert list(results) == [*mp.PHENOMENA, "overall"]
    for name, r in results.items():
        assert r.accuracy == pytest.approx(0.75) and r.low < 0.75 < r.high, name
    # binomial: sd sqrt(0.75 * 0.25 / 200) = 0.031, so the 95% interval is about +-6 points
    r = results["transitive"]
    assert r.pairs == 200 and r.right == 150 and 0.05 < (r.high - r.low) / 2 < 0.07
    overall = results["overall"]  # 1,800 pairs: about +-2 points
    assert overall.pairs == len(pairs) and 0.015 < (overall.high - overall.low) / 2 < 0.025
    assert "transitive" in mp.table(results) and "75.0%" in mp.table(results)
    with pytest.raises(ValueError, match="one per pair"):
        mp.summarize(pairs, right[:-1])
