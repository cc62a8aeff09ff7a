"""Self-supervised retrieval pairs: ICT removes the query sentence from its passage (kept as often as
stated), only the training articles' text is read, the bi-encoder's loss on such pairs is the
in-batch cross-entropy by hand, and SimCSE's two views differ by dropout alone."""

import math

import pytest
import torch
from conftest import tiny_encoder_folder

from minibert import assets, corpora, tasks
from minibert.retrieval import wiki_queries
from minibert.retrieval.bi_encoder import BiEncoder, collate_pairs, pair_examples
from minibert.retrieval.corpus import (
    ICT_KEEP,
    ict_pairs,
    pairs_of,
    simcse_pairs,
    training_paragraphs,
)
from minibert.retrieval.encoders import load_encoder
from minibert.tokenization import BertTokenizer

PARAGRAPH = ("the cat sat on the mat .", "the tower is in paris .", "cats and dogs .")


def test_ict_removes_each_sentence_from_its_passage():
    pairs = ict_pairs([PARAGRAPH, ("paris",)], keep=0.0)  # one sentence alone: no passage left
    assert pairs == [
        ("the cat sat on the mat .", "the tower is in paris . cats and dogs ."),
        ("the tower is in paris .", "the cat sat on the mat . cats and dogs ."),
        ("cats and dogs .", "the cat sat on the mat . the tower is in paris ."),
    ]
    kept = ict_pairs([PARAGRAPH], keep=1.0)
    assert [p for _, p in kept] == [" ".join(PARAGRAPH)] * 3
    with pytest.raises(ValueError, match="two sentences"):
        ict_pairs([("paris",)])


def test_ict_keeps_the_sentence_in_its_passage_one_time_in_ten():
    paragraphs = [tuple(f"sentence {p} {i} ." for i in range(10)) for p in range(100)]
    kept = sum(q in p for q, p in ict_pairs(paragraphs, seed=0))
    n, share = 1000, ICT_KEEP  # 4 binomial standard deviations either side: ~6e-5 to fail
    sd = math.sqrt(n * share * (1 - share))
    assert abs(kept - n * share) <= 4 * sd
    assert ict_pairs(paragraphs, seed=1) != ict_pairs(paragraphs, seed=0)
    assert ict_pairs(paragraphs, seed=1) == ict_pairs(paragraphs, seed=1)


def test_only_the_training_articles_text_is_read():
    by_split: dict[str, set] = {"train": set(), "dev": set(), "test": set()}
    for article in corpora.wikipedia_articles("all"):
        by_split[corpora.split_of(article.title)].update(article.paragraph_sentences)
    found = set(training_paragraphs())
    assert found == by_split["train"]
    assert not found & (by_split["dev"] | by_split["test"])
    # no query or passage of the pairs is a held-out or dev paragraph's sentence
    elsewhere = {s for p in by_split["dev"] | by_split["test"] for s in p}
    ict = pairs_of("ict", training_paragraphs())
    assert len(ict) > 10_000 and not {q for q, _ in ict} & (
        elsewhere - {s for p in found for s in p}
    )


def test_simcse_pairs_a_sentence_with_itself_once():
    pairs = simcse_pairs([PARAGRAPH, ("cats and dogs .", "paris")])
    assert pairs == [(s, s) for s in (*PARAGRAPH, "paris")]
    with pytest.raises(ValueError, match="objective"):
        pairs_of("mlm", [PARAGRAPH])


@pytest.fixture
def tiny_folder(tmp_path):
    return tiny_encoder_folder(tmp_path / "tiny")


def test_the_loss_on_ict_pairs_is_the_in_batch_cross_entropy_by_hand(tiny_folder):
    tiny = load_encoder(tiny_folder)
    pairs = ict_pairs([PARAGRAPH, ("the dog slept on the log .", "a dog sat on a log .")], keep=0)
    batch = collate_pairs(pair_examples(tiny, pairs), tiny.tokenizer.pad_token_id)
    model = BiEncoder.around(tiny.model, "mean", temperature=0.5).eval()
    with torch.no_grad():
        out = model(**batch)
    q, p = out.query_vectors.tolist(), out.passage_vectors.tolist()

    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    losses = []
    for i in range(len(q)):
        logits = [cosine(q[i], p[j]) / 0.5 for j in range(len(p))]
        losses.append(math.log(sum(math.exp(x) for x in logits)) - logits[i])
    assert out.loss.item() == pytest.approx(sum(losses) / len(losses), abs=1e-5)


def test_simcse_views_differ_by_dropout_alone(tiny_folder):
    tiny = load_encoder(tiny_folder)
    pairs = simcse_pairs([PARAGRAPH])
    batch = collate_pairs(pair_examples(tiny, pairs), tiny.tokenizer.pad_token_id)
    without = BiEncoder.from_pretrained(tiny_folder, hidden_dropout=0.0, attention_dropout=0.0)
    out = without.train()(**batch)  # training mode, but no dropout: the same vector twice
    assert torch.equal(out.query_vectors, out.passage_vectors)
    torch.testing.assert_close(
        out.loss, torch.nn.functional.cross_entropy(
            torch.nn.functional.normalize(out.query_vectors, dim=-1)
            @ torch.nn.functional.normalize(out.passage_vectors, dim=-1).T / 0.05,
            torch.arange(len(pairs)),
        ),
    )  # fmt: skip
    torch.manual_seed(0)
    noisy = BiEncoder.from_pretrained(tiny_folder, hidden_dropout=0.1, attention_dropout=0.1)
    out = noisy.train()(**batch)  # two forward passes, two dropout masks
    assert (out.query_vectors - out.passage_vectors).abs().max() > 1e-3
    out = noisy.eval()(**batch)  # no dropout in evaluation: the views agree again
    torch.testing.assert_close(out.query_vectors, out.passage_vectors)


def test_wiki_ict_trains_on_article_pairs_and_is_measured_on_wiki_searchs_questions():
    tok = BertTokenizer.from_pretrained(assets.course_checkpoint("course"))
    task = tasks.get("wiki-ict")
    assert task.shape == "vector" and task.selection == tasks.get("wiki-search").selection
    train, dev, test = task.datasets(tok, 64, train_examples=8, seed=0)
    expected = pairs_of("ict", training_paragraphs(), seed=0)
    assert len(train) == 8 and set(train.pairs) <= set(expected)
    assert all(len(item["query_ids"]) <= 64 for item in train)
    assert [q.id for q in dev.queries] == [q.id for q in wiki_queries("dev")]
    assert [q.id for q in test.queries] == [q.id for q in wiki_queries("test")]
