"""Open-domain QA (retriever + reader): the retrievers' scores as defined, the answer the best span
score over the paragraphs read (not the first paragraph's), the span's score its start + end
logit, `mb.ask` and `minibert ask` on a small fixture, the defaults, and bad input in one line."""

import json
from pathlib import Path

import pytest
import torch
from conftest import cli, tiny_encoder_folder
from conftest import tiny_reader_folder as reader_folder

import minibert
from minibert import inference, open_qa, retrieval
from minibert.model import BertForQuestionAnswering, BertForSequenceClassification
from minibert.open_qa import Asker
from minibert.retrieval import Passage, corpus, hits, retriever_of
from minibert.retrieval.encoders import encode, load_encoder
from minibert.retrieval.measures import every_score
from minibert.retrieval.rerank import LABELS, Reranker, SentenceEntailment, load_scorer
from minibert.tokenization import BertTokenizer

PASSAGES = [
    Passage("Cats", 0, "the cat sat on the mat"),
    Passage("Dogs", 0, "a dog sat on a log and the dog slept on the log all day"),
    Passage("Pets", 0, "cats and dogs"),
    Passage("Paris", 0, "the tower is in paris"),
    Passage("Paris", 1, "paris"),
]
QUESTION = "where is the tower ?"
RESULTS = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "retrieval.json"


def tiny_reader_folder(folder: Path, cls=BertForQuestionAnswering, **config) -> Path:
    """A saved tiny span reader (random weights, its head saved) with the passages' words."""
    return reader_folder(folder, [p.text for p in PASSAGES] + [QUESTION], cls, **config)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("open_qa")
    return tiny_encoder_folder(root / "encoder"), tiny_reader_folder(root / "reader")


@pytest.fixture
def wiki(monkeypatch):
    """The package's Wikipedia replaced by the five passages."""
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)


def every_passage(retriever, question: str) -> torch.Tensor:
    """(passages,) the question's score for every passage, through the one interface."""
    n = len(retriever.passages)
    return every_score(retriever.search([question], n), n)[0]


def test_bm25_hybrid_and_dense_retrievers_score_as_defined(folders):
    encoder_folder, _ = folders
    bm25 = retriever_of("bm25", PASSAGES)
    expected = retrieval.BM25([retrieval.words(p.text) for p in PASSAGES])
    want = expected.scores(retrieval.words(QUESTION))
    torch.testing.assert_close(every_passage(bm25, QUESTION), want)
    found = hits(bm25, QUESTION, 2)
    assert [h.rank for h in found] == [1, 2] and found[0].passage == PASSAGES[3]
    assert bm25.measure == "BM25 score"
    dense = retriever_of(encoder_folder, PASSAGES)
    vectors = encode(load_encoder(encoder_folder), [QUESTION] + [p.text for p in PASSAGES])
    unit = torch.nn.functional.normalize(vectors, dim=-1)
    cosines = every_passage(dense, QUESTION)
    torch.testing.assert_close(cosines, (unit[1:] @ unit[0]).double(), atol=1e-5, rtol=0)
    hybrid = retriever_of("hybrid", PASSAGES, encoder=encoder_folder, weight=0.3)
    lexical = every_passage(bm25, QUESTION)[None]
    want = retrieval.hybrid_scores(lexical, cosines[None], 0.3)[0]
    torch.testing.assert_close(every_passage(hybrid, QUESTION), want, atol=1e-5, rtol=0)
    assert hybrid.measure == "hybrid score" and dense.measure == "cosine"
    with pytest.raises(ValueError, match="weight must be in"):
        retriever_of("hybrid", PASSAGES, encoder=encoder_folder, weight=1.5)
    with pytest.raises(ValueError, match="none of the question's words"):
        hits(bm25, "zebra xylophone", 5, what="question")


def test_the_answer_is_the_best_span_score_over_the_paragraphs_not_the_first(folders, monkeypatch):
    _, reader = folders
    surest = "the cat sat on the mat"  # ranked below the tower's paragraph for this question

    def scripted(model, tok, question, context, max_length, stride):
        if context == surest:
            return inference.Answer("cat", 0.5, 4, 7, 9.0)
        return inference.Answer(context[:3], 0.9, 0, 3, 1.0)  # more probable, lower score

    monkeypatch.setattr(open_qa.inference, "answer", scripted)
    found = Asker("bm25", reader, passages=PASSAGES, retrieval_weight=0.0)(QUESTION, top_k=5)
    assert found.hit.passage.text == surest and found.hit.rank > 1  # DrQA's rule: spans alone
    assert found.text == "cat" and found.score == found.span_score == 9.0
    assert [r.hit.rank for r in found.read] == list(range(1, len(found.read) + 1))


def test_the_retrieval_score_standardised_adds_to_the_span_score(folders, monkeypatch):
    _, reader = folders

    def level(model, tok, question, context, max_length, stride):  # every span alike
        return inference.Answer(context[:3], 0.5, 0, 3, 2.0)

    monkeypatch.setattr(open_qa.inference, "answer", level)
    asker = Asker("bm25", reader, passages=PASSAGES, retrieval_weight=0.5)
    found = asker(QUESTION, top_k=3)
    scores = every_passage(asker.retriever, QUESTION)
    z = (scores - scores.mean()) / scores.std()
    for r in found.read:
        assert r.retrieval_z == pytest.approx(float(z[r.hit.index]))
        assert r.score == pytest.approx(2.0 + 0.5 * r.retrieval_z)
    assert found.hit.rank == 1 and found.score == max(r.score for r in found.read)  # z decides
    with pytest.raises(ValueError, match="retrieval_weight must be a finite number >= 0"):
        Asker("bm25", reader, passages=PASSAGES, retrieval_weight=-1.0)


def test_a_span_s_score_is_its_start_plus_end_logit_and_its_text_is_in_its_paragraph(folders):
    _, reader = folders
    found = Asker("bm25", reader, passages=PASSAGES)(QUESTION, top_k=3)
    assert found.score == max(r.score for r in found.read)
    assert found.span_score == next(r.answer.score for r in found.read if r.hit == found.hit)
    assert found.hit.text[found.start : found.end] == found.text
    model, tok = open_qa.load_reader(reader)
    context = found.hit.text
    enc = tok(QUESTION, context, return_offsets_mapping=True)
    with torch.no_grad():
        out = model(torch.tensor([enc.input_ids]), torch.tensor([enc.token_type_ids]))
    inside = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    starts, ends = out.start_logits[0].tolist(), out.end_logits[0].tolist()
    best = inference.best_span(starts, ends, inside)
    assert found.span_score == pytest.approx(best[0], abs=1e-5)
    assert (found.start, found.end) == (enc.offsets[best[1]][0], enc.offsets[best[2]][1])


def test_mb_ask_and_the_command_print_the_answer_then_its_paragraph(folders, wiki):
    encoder_folder, reader = folders
    found = minibert.ask(QUESTION, retriever="bm25", reader=reader, top_k=3)
    assert found.text and found.text in found.hit.text and len(found.read) == 3
    args = ["ask", QUESTION, "--reader", str(reader), "--encoder", str(encoder_folder)]
    done = cli(*args, "--top-k", "3")  # the default retriever: the hybrid
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    hybrid = Asker("hybrid", reader, encoder_folder, passages=PASSAGES)(QUESTION, 3)
    assert lines[0] == hybrid.text  # the answer alone on the first line
    title = f"{hybrid.hit.title}, paragraph {hybrid.hit.passage.paragraph + 1}"
    assert lines[1].startswith(f"{title}\tretrieved {hybrid.hit.rank} of 3 (hybrid score ")
    assert "span score" in lines[1] and "start + end logit" in lines[1]
    assert lines[2] == f"    {hybrid.hit.text}"  # the paragraph the span came from
    assert lines[0] in lines[2] and len(lines) == 3


def test_the_defaults_are_the_best_retriever_measured_and_its_dev_chosen_weight():
    rows = json.loads(RESULTS.read_text(encoding="utf-8"))["rows"]
    best = max(rows, key=lambda name: rows[name]["test"]["mrr@10"])
    assert rows[best]["kind"] == "hybrid" and rows[best]["dense"] == "MiniLM mean"
    assert float(rows[best]["weight"]) == open_qa.HYBRID_WEIGHT
    assert open_qa.Asker.__init__.__defaults__[:3] == ("hybrid", None, "minilm")
    assert open_qa.DEFAULT_TOP_K == 5
    done = cli("ask", "--help")
    assert done.returncode == 0
    help_text = " ".join(done.stdout.split())
    assert "minibert finetune --model minilm --task wiki-qa --out" in help_text
    assert "default: 0.55" in help_text and "(default: 5)" in help_text
    assert open_qa.RETRIEVAL_WEIGHT == 1.0 and "(default: 1, chosen on the dev" in help_text


@pytest.mark.parametrize("question", ["", "   "])
def test_an_empty_question_is_one_line(question):
    done = cli("ask", question)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("minibert ask: error: the question is empty")
    with pytest.raises(ValueError, match="the question is empty"):
        minibert.ask(question)


def test_no_reader_is_one_line_that_gives_the_command_that_makes_one(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "cache"))
    done = cli("ask", "who built the tower?", "--retriever", "bm25")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    default = tmp_path / "cache" / "wiki-qa-reader"
    assert f"no reader yet at {default}" in done.stderr
    assert f"`minibert finetune --model minilm --task wiki-qa --out {default}`" in done.stderr
    done = cli("ask", "who?", "--reader", str(tmp_path / "nowhere"))
    assert done.returncode == 2 and f"no reader in {tmp_path / 'nowhere'}" in done.stderr


def test_a_folder_that_is_not_a_reader_is_one_line(folders, tmp_path):
    encoder_folder, _ = folders
    done = cli("ask", "who?", "--reader", str(encoder_folder), "--retriever", "bm25")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "is not a span reader (a BertModel)" in done.stderr
    classifier = tiny_reader_folder(tmp_path / "rt", BertForSequenceClassification)
    (classifier / "results.json").write_text(json.dumps({"task": "rotten-tomatoes"}))
    done = cli("ask", "who?", "--reader", str(classifier), "--retriever", "bm25")
    assert "(fine-tuned for rotten-tomatoes)" in done.stderr and done.returncode == 2


# --- re-ranking: lesson 7's pair classifier or a cross-encoder, through retrieval.rerank ---------

SENTENCES = [Passage("Two", 0, "The cat sat on the mat. The tower is in paris."), PASSAGES[4]]


def tiny_pair_classifier(folder: Path) -> Path:
    """A saved tiny pair classifier with wiki-qnli's labels (random weights, its head saved)."""
    labels = ("not_entailment", "entailment")
    return tiny_reader_folder(folder, BertForSequenceClassification, label_names=labels)


def test_the_reranker_scores_a_paragraph_by_its_sentence_most_likely_to_hold_the_answer(tmp_path):
    folder = tiny_pair_classifier(tmp_path / "qnli")
    scorer = load_scorer(folder)  # a wiki-qnli folder: read sentence by sentence
    assert isinstance(scorer, SentenceEntailment) and scorer.measure == "entailment probability"
    scores = scorer.scores([(QUESTION, p.text) for p in SENTENCES])
    model = BertForSequenceClassification.from_pretrained(folder).eval()
    tok = BertTokenizer.from_pretrained(folder)
    pairs = [(QUESTION, "The cat sat on the mat."), (QUESTION, "The tower is in paris."),
             (QUESTION, "paris")]  # fmt: skip
    with torch.no_grad():
        entailment = model(**tok.encode_batch(pairs)).logits.softmax(-1)[:, 1]  # (pairs,)
    torch.testing.assert_close(scores, torch.stack([entailment[:2].max(), entailment[2]]))


def test_reranking_orders_the_first_stage_by_the_classifier_and_cuts_to_top_k(
    tmp_path, monkeypatch
):
    bm25 = retriever_of("bm25", PASSAGES)
    reranker = Reranker(bm25, tiny_pair_classifier(tmp_path / "qnli"), depth=4)
    first = hits(bm25, QUESTION, 4)
    scores = torch.tensor([0.1, 0.7, 0.1, 0.9])  # the first stage's four, in its order
    monkeypatch.setattr(reranker.cross_encoder, "scores", lambda pairs, *_: scores)
    again = open_qa.reranked(reranker, QUESTION, first, top_k=3)
    assert [h.passage for h in again] == [first[3].passage, first[1].passage, first[0].passage]
    assert [h.rank for h in again] == [1, 2, 3] and [h.score for h in again] == pytest.approx(
        [0.9, 0.7, 0.1]
    )  # a tie (0.1, 0.1) keeps the first stage's order


def test_ask_reranks_before_reading_and_refuses_a_folder_that_is_not_a_reranker(
    folders, wiki, tmp_path
):
    _, reader = folders
    qnli = tiny_pair_classifier(tmp_path / "qnli")
    args = ["ask", QUESTION, "--reader", str(reader), "--retriever", "bm25"]
    done = cli(*args, "--rerank", str(qnli), "--top-k", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert (
        f"of 2 (re-ranked from the top {open_qa.RERANK_DEPTH}: entailment probability " in lines[1]
    )
    found = minibert.ask(QUESTION, "bm25", reader, top_k=2, rerank=qnli)
    assert lines[0] == found.text and lines[2] == f"    {found.hit.text}"
    cross = tiny_reader_folder(
        tmp_path / "rerank", BertForSequenceClassification, label_names=LABELS
    )
    done = cli(*args, "--rerank", str(cross), "--top-k", "2")  # a wiki-rerank folder: the same way
    assert done.returncode == 0, done.stderr
    assert "re-ranked from the top 20: cross-encoder log-odds" in done.stdout.splitlines()[1]
    done = cli(*args, "--rerank", str(reader))  # a span reader, not a pair classifier
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{reader} is not a trained re-ranker (a BertForQuestionAnswering)" in done.stderr
    assert "--task wiki-rerank" in done.stderr and "--task wiki-qnli" in done.stderr


def test_the_end_to_end_benchmark_measured_mb_ask_as_it_ships():
    e2e = json.loads(RESULTS.read_text(encoding="utf-8"))["end_to_end"]
    assert e2e["top_k"] == open_qa.DEFAULT_TOP_K
    assert e2e["retrieval_weight"] == open_qa.RETRIEVAL_WEIGHT
    assert e2e["hybrid_weight"] == open_qa.HYBRID_WEIGHT
    assert {"hybrid", "bm25"} <= set(e2e["retrievers"])
    gold = e2e["gold_paragraph"]["f1"]
    for found in e2e["retrievers"].values():  # the ratio is the two F1s', inside its interval
        ratio, low, high = found["f1_over_gold"]
        assert found["f1"] == pytest.approx(ratio * gold)
        assert low <= ratio <= high
        assert found["meets_target"] == (ratio >= 0.6)


def test_top_k_is_at_most_the_corpus_said_in_one_line(folders, wiki):
    """`ask --top-k 1e20` read the whole corpus with no bound or word (still running at 300 s)."""
    encoder_folder, reader = folders
    with pytest.raises(
        ValueError, match=r"top_k must be at most 5 \(the paragraphs in the corpus\)"
    ):
        open_qa.ranked(retriever_of("bm25", PASSAGES), QUESTION, 6)
    with pytest.raises(ValueError, match="at most 5 .*, got 100,000,000,000,000,000,000"):
        minibert.ask(QUESTION, retriever="bm25", reader=reader, top_k=10**20)
    done = cli(
        "ask", QUESTION, "--retriever", "bm25", "--reader", str(reader), "--top-k", str(10**20)
    )
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "top_k must be at most 5 (the paragraphs in the corpus)" in done.stderr
    assert len(minibert.ask(QUESTION, retriever="bm25", reader=reader, top_k=5).read) == 5
