"""wiki-qa: extractive question answering on questions written for the course (SQuAD's shape).

Each question is about one paragraph of a Wikipedia article of the course's extract; its answer
is an exact span of that paragraph (one or more accepted answers, with character offsets). The
questions were written by hand, each read against its paragraph (the guideline and the counts are
in data/README.md); they live in ``minibert/task_data/wiki_qa/``, one SQuAD v1.1 file per article.
Splits by article: test = the held-out articles (``corpora.heldout_article``), dev = the training
articles with ``crc32(title) % 5 == 0``, train = the other training articles.

The model reads ``[CLS] question [SEP] context window [SEP]``: a context longer than the window is
cut into windows that overlap by ``stride`` pieces (the BERT paper's SQuAD recipe). Training labels
each window with the answer's first and last piece, or with [CLS] (0, 0) when the window does not
hold the whole answer. ``inference.best_span`` decodes: over every window, the start and end
pieces of the context with the highest start + end score, end not before start and at most
``inference.MAX_ANSWER_PIECES`` pieces long, mapped back to characters by the pieces' offsets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from minibert import inference, squad
from minibert.corpora import QUESTIONS, Question, questions, split_of
from minibert.inference import best_span
from minibert.model import BertForQuestionAnswering
from minibert.options import POSITIVE_INT
from minibert.tasks.qa_baselines import best_sentence, sliding_window
from minibert.tasks.registry import (
    Baseline,
    Selection,
    Shape,
    Task,
    register,
    register_shape,
    subset,
)
from minibert.tasks.shapes import Argument, Command, CommandError
from minibert.training import evaluate

__all__ = [
    "QUESTIONS",
    "QADataset",
    "Question",
    "questions",
    "split_of",
    "trained_length",
]


class QADataset(torch.utils.data.Dataset):
    """Questions cut into model windows: items hold the model's inputs and the answer's pieces;
    ``windows[i]`` says which question window i belongs to and where its context pieces lie."""

    def __init__(self, items: Sequence[Question], tokenizer, max_length: int, stride: int):
        if not items:
            raise ValueError("no questions: give at least one")
        self.questions, self.items, self.windows = list(items), [], []
        for index, q in enumerate(self.questions):
            for enc in _encode(tokenizer, q, max_length, stride):
                start, end = _answer_pieces(enc, *q.answers[0])
                self.items.append(
                    {
                        "input_ids": enc.input_ids,
                        "token_type_ids": enc.token_type_ids,
                        "start_positions": start,
                        "end_positions": end,
                    }
                )
                context = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
                self.windows.append((index, context, enc.offsets))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.items[index]


def _encode(tokenizer, q: Question, max_length: int, stride: int) -> list:
    """The windows of [CLS] question [SEP] context [SEP], with offsets and sequence ids; a long
    question leaves less room for the context, and its windows overlap by at most half of it."""
    room = max_length - 3 - len(tokenizer.tokenize(q.question))
    if room < 8:
        raise ValueError(
            f"max_length {max_length} leaves {room} pieces for the context of question {q.id} "
            "(at least 8 are needed); use a larger max_length"
        )
    return tokenizer(
        q.question,
        q.context,
        max_length=max_length,
        truncation="only_second",
        stride=min(stride, room // 2),
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
    )


def _answer_pieces(enc, text: str, start: int) -> tuple[int, int]:
    """The window's first and last piece of the answer at characters [start, start + len(text)),
    or (0, 0), [CLS], when the window does not hold all of it."""
    end = start + len(text)
    pieces = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    if not pieces or enc.offsets[pieces[0]][0] > start or enc.offsets[pieces[-1]][1] < end:
        return 0, 0
    first = next(i for i in pieces if enc.offsets[i][1] > start)
    last = next(i for i in reversed(pieces) if enc.offsets[i][0] < end)
    return first, last


def _predict_answers(net: Any, data: QADataset, collate) -> list[str]:
    """Each question's answer: the best span over all its windows, as text of its context."""
    scores: list[tuple[list[float], list[float]]] = []

    def collect(batch: dict, out: Any) -> dict:
        scores.extend(zip(out.start_logits.tolist(), out.end_logits.tolist()))
        return {}

    evaluate(net, data, 64, collate, metrics_fn=collect)
    best: dict[int, tuple[float, int, int]] = {}
    for (index, context, offsets), (starts, ends) in zip(data.windows, scores):
        found = best_span(starts, ends, context)
        if found is not None and (index not in best or found[0] > best[index][0]):
            best[index] = (found[0], offsets[found[1]][0], offsets[found[2]][1])
    return [
        q.context[best[i][1] : best[i][2]] if i in best else ""
        for i, q in enumerate(data.questions)
    ]


def _gold_answers(data: QADataset) -> list[list[str]]:
    """Each question's accepted answers."""
    return [[text for text, _ in q.answers] for q in data.questions]


def _squad_line(t: dict[str, Any]) -> str:
    """The test line of a span: SQuAD v1.1's exact match and F1."""
    return f"exact match {t['exact_match']:.2f}, F1 {t['f1']:.2f} (SQuAD v1.1, percent)"


def _answer(args: Any, model: Any, tok: Any, task: Task | None) -> list[str]:
    """The answer's text alone on the first line, then its probability and characters."""
    context = _text_or_file(args.context)
    length = args.max_length or trained_length(args.model)
    found = inference.answer(model, tok, args.question, context, length, length // 4)
    return [
        found.text,
        f"probability {found.probability:.3f}\tcharacters {found.start}-{found.end}",
    ]


def _text_or_file(value: str) -> str:
    """--context: the text of the file of that name when one exists, else the value itself (a
    paragraph pasted in quotes); a folder, or what can only be a missing file's name, refused."""
    path = Path(value)
    if not value.strip() or "\0" in value:  # not a file's name ("" is "."): a text, checked later
        return value
    try:
        if path.is_file():
            try:
                return path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise CommandError(f"cannot read the context file {value}: {exc}", 2) from None
        if path.is_dir():
            raise CommandError(f"--context {value} is a folder; give a text or a file", 2)
    except OSError:  # a name too long for a file (ENAMETOOLONG): a text
        return value
    if not any(c.isspace() for c in value) and path.suffix in (".txt", ".md", ".text"):
        raise CommandError(f"--context: no file {value}; give an existing file or a text", 2)
    return value


def trained_length(folder: str | Path) -> int:
    """The window length (pieces) a reader folder was fine-tuned with (results.json), else 384."""
    try:
        results = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
        return int(results["options"]["max_length"])
    except (OSError, ValueError, KeyError, TypeError):
        return 384


ANSWER = Command(
    "answer",
    "answer a question with a span of a context",
    "a folder written by `minibert finetune --task wiki-qa`",
    "answers a question with a span of a context",
    (
        Argument("--question", "the question, in quotes", required=True),
        Argument(
            "--context",
            "the context to answer from: a text in quotes, or a file",
            required=True,
            metavar="TEXT_OR_FILE",
        ),
        Argument(
            "--max-length",
            "pieces per window (default: the folder's training length)",
            kind=int,
            check=POSITIVE_INT,
        ),
    ),
    _answer,
)
SPAN = register_shape(
    Shape(
        "span",
        BertForQuestionAnswering,
        _predict_answers,
        _gold_answers,
        result_line=_squad_line,
        command=ANSWER,
    )
)


def window_metrics(batch: dict[str, torch.Tensor], out: Any) -> dict[str, tuple[int, int]]:
    """Training's measure: in the windows that hold the answer, how often the best start and the
    best end are both the answer's (a window without it says nothing about spans)."""
    has = batch["start_positions"] != 0  # (batch,)
    starts, ends = out.start_logits.argmax(-1), out.end_logits.argmax(-1)  # (batch,)
    both = (starts == batch["start_positions"]) & (ends == batch["end_positions"]) & has
    return {"span_exact": (int(both.sum()), int(has.sum()))}


def _score(task: Task, gold: Sequence[Sequence[str]], predictions: Sequence[str]) -> dict:
    """SQuAD v1.1's exact match and F1 (percent), with the number of questions."""
    measured = squad.evaluate(gold, predictions)
    return {**measured, "examples": len(gold), "unit": task.unit}


def _load(tok, max_length: int, train_examples: int | None, seed: int):
    """The questions of the training, dev and held-out articles, cut into windows."""
    train = subset(questions("train"), train_examples, seed, "questions")
    stride = max_length // 4
    return tuple(
        QADataset(q, tok, max_length, stride) for q in (train, questions("dev"), questions("test"))
    )


def _sliding_window(train, dev: QADataset, test: QADataset, tokenizer) -> list[str]:
    """The sliding-window baseline, its longest answer (1 to 6 words) chosen on dev by F1."""

    def answers(data: QADataset, words: int) -> list[str]:
        return [
            sliding_window(q.question, q.context, max_answer_words=words) for q in data.questions
        ]

    gold = _gold_answers(dev)
    words = max(range(1, 7), key=lambda n: squad.evaluate(gold, answers(dev, n))["f1"])
    return answers(test, words)


def _best_sentence(train, dev, test: QADataset, tokenizer) -> list[str]:
    """The sentence of the context that shares the most question words."""
    return [best_sentence(q.question, q.context) for q in test.questions]


WIKI_QA = register(
    Task(
        name="wiki-qa",
        labels=("start", "end"),
        shape="span",
        unit="question",
        load=_load,
        metrics=window_metrics,
        selection=Selection("span_exact", lambda record: record["eval_span_exact"]),
        description="answer a question with a span of a Wikipedia paragraph (questions written "
        "for the course; test: the held-out articles)",
        baselines=(
            Baseline("sliding window", _sliding_window),
            Baseline("best sentence", _best_sentence),
        ),
        score=_score,
        max_length=256,  # most paragraphs fit one or two windows
        # MiniLM's reader at BERT's 5e-5 barely moves in 3 epochs (dev window exact match 0.085,
        # test F1 19.7); the seed-0 sweep chose 3.3e-4 on dev, and 3e-4 gives dev 0.314 (F1 41.0)
        large_model_lr=3e-4,
    )
)
