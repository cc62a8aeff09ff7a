"""wiki-rerank: is this the paragraph the question was written about? BERT as a cross-encoder (Nogueira
& Cho, 2019): lesson 7's pair classifier, [CLS] question [SEP] paragraph [SEP], trained to tell a
question's own paragraph from the paragraphs BM25 ranks highest for it, and used to re-rank a
retriever's top 20 (``retrieval.rerank.Reranker``, the retrievers 'bm25+rerank', 'hybrid+rerank').

Pairs: each wiki-qa question (split by article, as wiki-search's) with its paragraph (label 1,
relevant) and with BM25's NEGATIVES best-ranked paragraphs that are not it (label 0): hard
negatives mined over every paragraph of the course's Wikipedia (``retrieval.negatives``, a
paragraph of the same text as the question's never among them). Dev and test are built alike, so
that the pairs measured are the kind the re-ranker meets. The dev evaluation kept is the best by
pair order: of every (relevant, irrelevant) couple of pairs in an evaluation batch, the share
whose relevant one has the higher log-odds (the area under the ROC curve within batches; a model
giving every pair one score has 0.5). A re-ranker is used for its order, not its threshold: with
a quarter of the pairs relevant, a model can rank them well while its log-odds stay below 0
everywhere, and balanced accuracy would call it trivial (0.5). Baseline at the same pairs: BM25's own choice, 'relevant'
for the candidate it ranks first among a question's (a tie counts against the question's
paragraph). How much re-ranking buys is measured by ranking, in benchmarks/retrieval_rerank.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from minibert import finetuning
from minibert.retrieval import corpus
from minibert.retrieval.corpus import Passage, Query
from minibert.retrieval.lexical import BM25, words
from minibert.retrieval.negatives import mine_hard_negatives, positives_of
from minibert.retrieval.rerank import LABELS, PAIR_LENGTH
from minibert.tasks.registry import Baseline, Selection, Task, register, subset

__all__ = ["NEGATIVES", "RerankPairs", "rerank_metrics", "rerank_pairs"]

NEGATIVES = 3  # BM25 negatives per question (one positive each: a quarter of the pairs relevant)


class RerankPairs(finetuning.ClassificationDataset):
    """A split's (question, paragraph, label) pairs as a pair dataset, each question's paragraph
    first and its negatives after it; first_stage: BM25's choice per pair (1 for the candidate
    it ranks first among its question's), the baseline's answers."""

    def __init__(self, pairs: Sequence[tuple[str, str, int]], tokenizer, max_length: int):
        questions, labels = [q for q, _, _ in pairs], [y for _, _, y in pairs]
        super().__init__(questions, labels, tokenizer, max_length, [p for _, p, _ in pairs])
        self.first_stage: list[int] = []


def rerank_pairs(
    queries: Sequence[Query],
    passages: Sequence[Passage],
    retriever,
    negatives: int = NEGATIVES,
) -> list[tuple[str, str, int]]:
    """(question, paragraph, label) for each query: its paragraph (1), then the retriever's
    negatives best-ranked paragraphs that are not it nor of its text (0), best first."""
    found = positives_of(queries, passages)
    mined = mine_hard_negatives(retriever, [q.text for q in queries], found, negatives)
    return [
        (q.text, passages[i].text, label)
        for q, hard in zip(queries, mined)
        for i, label in ((q.passage, 1), *((j, 0) for j in hard))
    ]


def rerank_metrics(batch: dict, out) -> dict[str, tuple[float, int]]:
    """classification_metrics, and the batch's pair order: of every (relevant, irrelevant) couple
    of its pairs, those whose relevant one has the higher log-odds (a tie counts a half), and
    how many couples there are."""
    sums = finetuning.classification_metrics(batch, out)
    odds = out.logits[:, 1] - out.logits[:, 0]  # (batch,) log p(relevant) / p(irrelevant)
    labels = batch["labels"]
    ahead = odds[labels == 1][:, None] - odds[labels == 0][None, :]  # (relevant, irrelevant)
    sums["pair_order"] = (float((ahead > 0).sum() + 0.5 * (ahead == 0).sum()), ahead.numel())
    return sums


def _first_stage(bm25: BM25, queries: Sequence[Query], pairs: Sequence[tuple]) -> list[int]:
    """BM25's answers per pair: 1 for the candidate it scores highest among its question's (its
    paragraph only when strictly above every negative: a tie counts against it)."""
    texts = {p.text: i for i, p in reversed(list(enumerate(bm25.passages)))}  # a text's first
    scores = bm25.score_matrix([words(q.text) for q in queries])  # (queries, passages)
    per_query = len(pairs) // len(queries)
    answers = []
    for row, start in zip(scores, range(0, len(pairs), per_query)):
        group = [float(row[texts[p]]) for _, p, _ in pairs[start : start + per_query]]
        best = max(range(1, per_query), key=lambda i: group[i])  # the best negative
        chosen = 0 if group[0] > group[best] else best
        answers += [int(i == chosen) for i in range(per_query)]
    return answers


def _load(tok, max_length: int, train_examples: int | None, seed: int):
    """The training (a random subset of questions), dev and test pairs, each question with its
    paragraph and BM25's NEGATIVES best wrong ones over every paragraph."""
    passages = corpus.wiki_passages()
    bm25 = BM25.of(passages)
    train = subset(corpus.wiki_queries("train", passages), train_examples, seed, "questions")
    made = []
    for queries in (
        train,
        corpus.wiki_queries("dev", passages),
        corpus.wiki_queries("test", passages),
    ):
        pairs = rerank_pairs(queries, passages, bm25)
        data = RerankPairs(pairs, tok, max_length)
        data.first_stage = _first_stage(bm25, queries, pairs)
        made.append(data)
    return tuple(made)


WIKI_RERANK = register(
    Task(
        name="wiki-rerank",
        labels=LABELS,
        shape="text",
        unit="pair",
        load=_load,
        metrics=rerank_metrics,
        selection=Selection("pair_order", lambda record: record["eval_pair_order"], trivial=0.5),
        description="is this the paragraph the question was written about? a cross-encoder that "
        "re-ranks a retriever's top 20 (pairs: each question's paragraph and BM25's best wrong "
        "ones)",
        baselines=(Baseline("BM25's first", lambda train, dev, test, tok: test.first_stage),),
        max_length=PAIR_LENGTH,
        pairs=True,
        # a question's own paragraph is longer than BM25's best wrong ones (150 against 123
        # MiniLM pieces; under 1% of the shortest eighth is relevant): batches grouped by
        # length would run from mostly relevant to all irrelevant, and the model learns that
        group_by_length=False,
    )
)
