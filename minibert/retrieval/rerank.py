"""The cross-encoder re-ranker (Nogueira & Cho, 2019, monoBERT): BERT reads a question and a
passage together, [CLS] question [SEP] passage [SEP], and a classifier on it says whether the
passage is the one the question is about. A first stage (BM25 by default) finds a few candidates
fast; the cross-encoder, which sees both texts at once, orders them.

    reranker = Reranker(BM25.of(passages), "runs/rerank", depth=20)   # a wiki-rerank folder
    reranker.search(["who built the tower?"], k=5)   # Ranking(ids, scores): the one interface
    Reranker(BM25.of(passages), "runs/rerank", weight=0.3)  # 0.7 BM25 + 0.3 cross-encoder
    retriever_of("bm25+rerank", reranker="runs/rerank")   # the same by its registered name
    retriever_of("hybrid+rerank", reranker="runs/rerank")  # the hybrid's top 20, re-ranked

The folder is one ``minibert finetune --task wiki-rerank`` wrote (``tasks.wiki_rerank``): a
BertForSequenceClassification with the labels LABELS, trained on each training question's
paragraph against BM25's best-ranked wrong paragraphs. A passage's score is the classifier's
log-odds of 'relevant' (its two logits' difference; a probability near 1 would tie in float32);
a tie keeps the first stage's order. By default the cross-encoder's order replaces the first
stage's; with a weight below 1 the two are interpolated as the hybrid composes two retrievers
(``interpolated``: each query's first-stage scores and pair scores standardised over its
candidates, then (1 - weight) * first + weight * pair scorer; weight 0 is the first stage alone),
so that a cross-encoder trained on little keeps the first stage's order where it knows little
(the weight chosen on the dev questions: benchmarks/retrieval_rerank.py). Unlike a bi-encoder,
nothing is indexed: every (question, passage) pair is read anew, which is why it re-ranks a few.
``search(queries, k)`` reads the first stage's max(k, depth) best, so that every score it returns
is the cross-encoder's (k = every passage, as the hybrid asks, reads them all: slow);
``rerank(queries, first, k)`` orders a first stage's ranking already in hand (``open_qa`` keeps
the first stage's scores over the corpus).

The re-ranker reads its pairs through one of two pair scorers, told apart by the folder's labels
(``load_scorer``), and orders them the same way:
- ``CrossEncoder``, a wiki-rerank folder (labels LABELS): BERT reads the question with the whole
  passage, trained for exactly this; a score is the log-odds of 'relevant'.
- ``SentenceEntailment``, a wiki-qnli folder (lesson 7's pair classifier, a label 'entailment'):
  trained to say whether one *sentence* holds the answer, so it reads the question with each of a
  passage's sentences, and a passage's score is its sentences' highest probability of
  'entailment'. ``minibert ask --rerank`` has read it since before wiki-rerank existed; on dev it
  re-ranks worse than the retriever alone (benchmarks/results/retrieval.json).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from minibert import assets, corpora
from minibert.model import BertForSequenceClassification
from minibert.retrieval.encoders import by_length, pad
from minibert.retrieval.measures import Ranking
from minibert.tokenization import BertTokenizer
from minibert.utils import check_top_k, evaluating

__all__ = [
    "ENTAILMENT",
    "LABELS",
    "PAIR_LENGTH",
    "RERANK_DEPTH",
    "SENTENCE_PAIR_LENGTH",
    "CrossEncoder",
    "PairScorer",
    "Reranker",
    "SentenceEntailment",
    "default_reranker",
    "interpolated",
    "load_scorer",
    "reranker_command",
]

LABELS = ("irrelevant", "relevant")  # wiki-rerank's labels, index = label id
RELEVANT = LABELS[1]
RERANK_DEPTH = 20  # the first stage's passages re-ranked (``minibert ask --rerank`` reads as many)
PAIR_LENGTH = 256  # pieces of [CLS] question [SEP] passage [SEP] (wiki-rerank's default length)
ENTAILMENT = "entailment"  # wiki-qnli's label: the sentence holds the answer
SENTENCE_PAIR_LENGTH = 128  # pieces of [CLS] question [SEP] sentence [SEP] (wiki-qnli's length)


def default_reranker() -> Path:
    """Where the registered re-rankers look for their folder: wiki-rerank in the asset cache."""
    return assets.cache_dir() / "wiki-rerank"


def reranker_command(folder: str | Path | None = None) -> str:
    """The command that fine-tunes MiniLM as a re-ranker into folder (the default one's)."""
    return (
        f"minibert finetune --model minilm --task wiki-rerank --out {folder or default_reranker()}"
    )


def _results(folder: Path) -> dict:
    """A fine-tuned folder's results.json ({} when it has none or it is unreadable)."""
    try:
        results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return results if isinstance(results, dict) else {}


def _trained_length(folder: Path, positions: int, default: int = PAIR_LENGTH) -> int:
    """The pair length a folder was fine-tuned with (its results.json), else default; at most
    the model's positions."""
    try:
        return min(int(_results(folder)["options"]["max_length"]), positions)
    except (KeyError, TypeError, ValueError):
        return min(default, positions)


def _architectures(folder: Path) -> list[str]:
    """The model classes a folder's config.json names (none when it names none or is unreadable:
    loading it says what is wrong)."""
    try:
        found = json.loads((folder / "config.json").read_text(encoding="utf-8"))["architectures"]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [name for name in found if isinstance(name, str)] if isinstance(found, list) else []


def _classifier(folder: Path) -> BertForSequenceClassification | None:
    """A folder's pair classifier, in evaluation mode; None when its config names other model
    classes only (a span reader, an encoder alone). A missing folder is a FileNotFoundError
    naming the command that makes a re-ranker, one that does not load a ValueError."""
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"no re-ranker in {folder} (a folder written by `minibert finetune --task "
            f"wiki-rerank`): make one with `{reranker_command(folder)}`"
        )
    architectures = _architectures(folder)
    if architectures and BertForSequenceClassification.__name__ not in architectures:
        return None
    try:
        return BertForSequenceClassification.from_pretrained(folder).eval()
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot re-rank with {folder}: {exc}") from None


def _trained(model: BertForSequenceClassification | None) -> bool:
    return model is not None and not model.loading_info["newly_initialized"]


def _what(folder: Path, model: BertForSequenceClassification | None) -> str:
    """What a folder refused as a re-ranker holds: the task it was fine-tuned for, and its
    labels (or its model classes, when it holds no classifier) and whether its head is trained."""
    task = _results(folder).get("task")
    fitted = f"fine-tuned for {task}, " if isinstance(task, str) else ""
    if model is None:
        return f"{fitted}a {', '.join(_architectures(folder))}"
    untrained = "" if _trained(model) else ", no trained head"
    return f"{fitted}labels {model.config.names()}{untrained}"


def _pair_logits(
    model: BertForSequenceClassification,
    tokenizer: BertTokenizer,
    pairs: Sequence[tuple[str, str]],
    cut: dict,
    batch_size: int,
    progress: bool,
) -> torch.Tensor:
    """(pairs, labels) float32: the classifier's logits for each pair, read as [CLS] A [SEP] B
    [SEP] cut as cut says, in batches of similar length, in inference mode."""
    from tqdm.auto import tqdm

    encodings = tokenizer.encode_batch(list(pairs), **cut, padding=False, return_tensors=None)
    ids = [e.input_ids for e in encodings]
    device = next(model.parameters()).device
    logits = torch.empty(len(ids), model.config.num_labels)
    batches = list(by_length(ids, batch_size))
    with torch.inference_mode(), evaluating(model):
        for rows in tqdm(batches, desc="re-ranking", unit="batch", disable=not progress):
            input_ids, attention_mask = pad([ids[i] for i in rows], tokenizer.pad_token_id)
            token_type_ids, _ = pad([encodings[i].token_type_ids for i in rows], 0)
            out = model(input_ids.to(device), token_type_ids.to(device), attention_mask.to(device))
            logits[rows] = out.logits.float().cpu()  # (batch, labels)
    return logits


@dataclass
class CrossEncoder:
    """A wiki-rerank folder's pair classifier (labels LABELS) and its tokenizer; max_length: the
    pieces a (question, passage) pair is cut to (its training length), the passage cut first (the
    longer side). A passage's score is the log-odds of 'relevant'."""

    model: BertForSequenceClassification
    tokenizer: BertTokenizer
    max_length: int
    measure = "cross-encoder log-odds"

    @classmethod
    def load(cls, folder: str | Path) -> CrossEncoder:
        """The cross-encoder of a wiki-rerank folder, in evaluation mode; a missing folder is a
        FileNotFoundError naming the command that makes one, another model's a ValueError."""
        folder = Path(folder)
        return cls.of(folder, _classifier(folder))

    @classmethod
    def of(cls, folder: Path, model: BertForSequenceClassification | None) -> CrossEncoder:
        """The cross-encoder of a classifier loaded from folder (``_classifier``); refused unless
        it has LABELS and a trained head."""
        if not _trained(model) or model.config.names() != LABELS:
            raise ValueError(
                f"{folder} is not a trained re-ranker ({_what(folder, model)}, expected "
                f"{LABELS}, and a trained head): make one with `{reranker_command()}`"
            )
        length = _trained_length(folder, model.config.max_position_embeddings)
        return cls(model, BertTokenizer.from_pretrained(folder), length)

    def scores(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 64, progress: bool = False
    ) -> torch.Tensor:
        """(pairs,) float32: each (question, passage) pair's log-odds of 'relevant', read as
        [CLS] question [SEP] passage [SEP], in batches of similar length, in inference mode."""
        cut = {"max_length": self.max_length, "truncation": True}
        logits = _pair_logits(self.model, self.tokenizer, pairs, cut, batch_size, progress)
        return logits[:, 1] - logits[:, 0]  # log p(relevant)/p(irrelevant)


@dataclass
class SentenceEntailment:
    """A wiki-qnli folder's pair classifier (lesson 7's: does this sentence hold the answer to the
    question?) scoring passages sentence by sentence: a (question, passage) pair's score is the
    highest probability of ENTAILMENT over the passage's sentences, each read as [CLS] question
    [SEP] sentence [SEP] (the sentence cut first, to max_length pieces). Unlike CrossEncoder it
    was never trained on whole passages, nor on retrieval's wrong ones."""

    model: BertForSequenceClassification
    tokenizer: BertTokenizer
    max_length: int
    positive: int  # ENTAILMENT's label id
    measure = f"{ENTAILMENT} probability"

    @classmethod
    def load(cls, folder: str | Path) -> SentenceEntailment:
        """The sentence scorer of a wiki-qnli folder, in evaluation mode; refused like
        CrossEncoder.load."""
        folder = Path(folder)
        return cls.of(folder, _classifier(folder))

    @classmethod
    def of(cls, folder: Path, model: BertForSequenceClassification | None) -> SentenceEntailment:
        """The sentence scorer of a classifier loaded from folder (``_classifier``); refused
        unless it has an ENTAILMENT label and a trained head."""
        if not _trained(model) or ENTAILMENT not in model.config.names():
            raise ValueError(
                f"{folder} is not a trained pair classifier with an {ENTAILMENT!r} label "
                f"({_what(folder, model)}): re-rank with a folder of `minibert finetune --task "
                "wiki-qnli`"
            )
        names = model.config.names()
        length = _trained_length(folder, model.config.max_position_embeddings, SENTENCE_PAIR_LENGTH)
        return cls(model, BertTokenizer.from_pretrained(folder), length, names.index(ENTAILMENT))

    def scores(
        self, pairs: Sequence[tuple[str, str]], batch_size: int = 64, progress: bool = False
    ) -> torch.Tensor:
        """(pairs,) float32: each (question, passage) pair's highest probability of ENTAILMENT
        over the passage's sentences (``corpora.split_sentences``; a passage with none, whole)."""
        sentences = [corpora.split_sentences(passage) or [passage] for _, passage in pairs]
        read = [(q, s) for (q, _), group in zip(pairs, sentences) for s in group]
        cut = {"max_length": self.max_length, "truncation": "only_second"}
        logits = _pair_logits(self.model, self.tokenizer, read, cut, batch_size, progress)
        probabilities = logits.softmax(-1)[:, self.positive]  # (sentences,)
        per_passage = torch.split(probabilities, [len(group) for group in sentences])
        return torch.stack([p.max() for p in per_passage])


PairScorer = CrossEncoder | SentenceEntailment


def load_scorer(folder: str | Path) -> PairScorer:
    """The pair scorer a folder holds, by its labels: a SentenceEntailment when they include
    ENTAILMENT (a wiki-qnli folder), a CrossEncoder when they are LABELS (a wiki-rerank folder);
    any other folder is refused in one line naming both commands (a missing one: the
    re-ranker's)."""
    folder = Path(folder)
    model = _classifier(folder)
    names = model.config.names() if model is not None else ()
    if not _trained(model) or (names != LABELS and ENTAILMENT not in names):
        raise ValueError(
            f"{folder} is not a trained re-ranker ({_what(folder, model)}): re-rank with a "
            f"folder of `{reranker_command()}` (labels {LABELS}) or of `minibert finetune --task "
            f"wiki-qnli` (a pair classifier with an {ENTAILMENT!r} label)"
        )
    if ENTAILMENT in names:
        return SentenceEntailment.of(folder, model)
    return CrossEncoder.of(folder, model)


def interpolated(first: torch.Tensor, pair: torch.Tensor, weight: float) -> torch.Tensor:
    """(queries, n) scores: each query's first-stage scores and pair scores over its n candidates,
    each standardised over the n (so neither's scale decides; a row of one candidate, or of
    equal scores, standardises to 0), then (1 - weight) * first + weight * pair. weight 1 orders
    by the pair scorer alone, 0 keeps the first stage's order."""
    if first.shape != pair.shape or first.dim() != 2 or not 0 <= weight <= 1:
        raise ValueError(
            f"first and pair must be alike (queries, n) scores and weight in [0, 1], got "
            f"{tuple(first.shape)}, {tuple(pair.shape)} and {weight}"
        )

    def z(scores: torch.Tensor) -> torch.Tensor:
        scores = scores.double()
        centred = scores - scores.mean(1, keepdim=True)
        return centred / scores.std(1, correction=0, keepdim=True).clamp(min=1e-12)

    return (1 - weight) * z(first) + weight * z(pair)


class Reranker:
    """A first-stage retriever's max(k, depth) best passages for each query, ordered again by a
    pair scorer (a CrossEncoder or a SentenceEntailment, or a folder holding one: ``load_scorer``)
    or, with weight below 1, by the two interpolated (``interpolated``): search(queries, k) ->
    Ranking. measure: the scorer's, or 'interpolated score'."""

    def __init__(
        self,
        first,
        cross_encoder: PairScorer | str | Path,
        depth: int = RERANK_DEPTH,
        batch_size: int = 64,
        progress: bool = False,
        weight: float = 1.0,
    ):
        for name, value in (("depth", depth), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 <= weight <= 1:
            raise ValueError(
                "the re-ranker's weight must be in [0, 1] (1: the pair scorer alone), got "
                f"{weight!r}"
            )
        if not isinstance(cross_encoder, CrossEncoder | SentenceEntailment):
            cross_encoder = load_scorer(cross_encoder)
        self.first, self.cross_encoder, self.depth = first, cross_encoder, depth
        self.batch_size, self.progress, self.weight = batch_size, progress, float(weight)
        self.passages = first.passages

    @property
    def measure(self) -> str:
        """What a score is: the pair scorer's ('cross-encoder log-odds' or 'entailment
        probability'), or 'interpolated score' with a weight below 1."""
        return self.cross_encoder.measure if self.weight == 1 else "interpolated score"

    def search(self, queries: Sequence[str], k: int) -> Ranking:
        """Each query's k best passages by the pair scorer, best first, among the first stage's
        max(k, depth) best (a tie keeps the first stage's order): Ranking (queries, k)."""
        check_top_k(k, len(self.passages), "passages searched")
        queries = list(queries)
        depth = min(max(k, self.depth), len(self.passages))
        return self.rerank(queries, self.first.search(queries, depth), k)

    def rerank(self, queries: Sequence[str], first: Ranking, k: int) -> Ranking:
        """A first stage's Ranking (queries, n), each query's n passages ordered again by the pair
        scorer (or, with a weight below 1, by ``interpolated``) and cut to its k best (a tie keeps
        the first stage's order): Ranking (queries, k)."""
        queries, ids = list(queries), first.ids.long()  # (queries, n)
        check_top_k(k, ids.shape[1], "passages re-ranked")
        pairs = [(q, self.passages[int(i)].text) for q, row in zip(queries, ids) for i in row]
        scores = self.cross_encoder.scores(pairs, self.batch_size, self.progress)
        scores = scores.view(ids.shape)  # (queries, n)
        if self.weight < 1:
            scores = interpolated(first.scores, scores, self.weight)
        order = torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :k]
        return Ranking(ids.gather(1, order), scores.gather(1, order))
