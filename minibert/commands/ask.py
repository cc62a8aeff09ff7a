"""``minibert ask``: open-domain question answering on the course's Wikipedia, a retriever and a
reader (DrQA).

    minibert ask "who designed the eiffel tower?"                  # hybrid retriever, default reader
    minibert ask "who designed the eiffel tower?" --reader runs/qa --retriever bm25 --top-k 3
    minibert ask "who designed the eiffel tower?" --reader runs/qa --rerank runs/qnli

Prints the answer's text alone on the first line, then the paragraph it came from: its article and
paragraph, its retrieval rank and score, the span's score (start + end logit, the measure compared
across the paragraphs read), then the paragraph itself. Errors are one line and an exit code; a
missing reader's line gives the command that makes one (``minibert.open_qa``).
"""

from __future__ import annotations

import argparse
import sys

from minibert.commands.flags import argparse_type
from minibert.options import NON_NEGATIVE, POSITIVE_INT, UNIT_INTERVAL


def add_arguments(sub: argparse._SubParsersAction) -> None:
    """The sub-command ask."""
    from minibert.open_qa import (
        DEFAULT_TOP_K,
        HYBRID_WEIGHT,
        RERANK_DEPTH,
        RETRIEVAL_WEIGHT,
        default_reader,
        reader_command,
    )

    text = "answer a question from the course's Wikipedia: retrieve paragraphs, read a span"
    ask = sub.add_parser(
        "ask",
        help=text,
        description=text,
        epilog="The answer is the span with the highest score over the paragraphs read: its "
        "start + end logit (DrQA's: a probability would not compare, each paragraph's softmax has "
        "its own normaliser) plus --retrieval-weight times its paragraph's retrieval score, "
        "standardised over the corpus for the question (BERTserini's). No reader ships with the "
        f"course: make the default one with `{reader_command()}`.",
    )
    ask.add_argument("question", help="the question, in quotes")
    ask.add_argument(
        "--retriever",
        default="hybrid",
        help="'hybrid' (default: BM25 and --encoder's cosine, the best retriever measured in "
        "benchmarks/results/retrieval.json), 'bm25' (no model), 'tfidf', or an encoder alone: "
        "'minilm', 'course' or a BERT folder",
    )
    ask.add_argument(
        "--reader",
        default=None,
        help="a folder fine-tuned on wiki-qa (`minibert finetune --task wiki-qa`); default: "
        f"{default_reader()}",
    )
    ask.add_argument(
        "--top-k",
        type=argparse_type(int, POSITIVE_INT),
        default=DEFAULT_TOP_K,
        help=f"paragraphs the reader reads (default: {DEFAULT_TOP_K})",
    )
    ask.add_argument(
        "--encoder",
        default="minilm",
        help="the hybrid's other side: 'minilm' (default), 'course', a BERT folder or a "
        "retriever's name",
    )
    ask.add_argument(
        "--weight",
        type=argparse_type(float, UNIT_INTERVAL),
        default=HYBRID_WEIGHT,
        help="the hybrid's dense weight in [0, 1] (default: "
        f"{HYBRID_WEIGHT}, chosen on the dev questions by benchmarks/retrieval.py)",
    )
    ask.add_argument(
        "--retrieval-weight",
        type=argparse_type(float, NON_NEGATIVE),
        default=RETRIEVAL_WEIGHT,
        help="how much the paragraph's standardised retrieval score adds to a span's start + end "
        f"logit (default: {RETRIEVAL_WEIGHT:g}, chosen on the dev questions; 0: the span alone)",
    )
    ask.add_argument(
        "--rerank",
        default=None,
        metavar="FOLDER",
        help=f"a folder that re-ranks the retriever's {RERANK_DEPTH} best paragraphs before the "
        "reader reads --top-k of them: a pair classifier fine-tuned on wiki-qnli (`minibert "
        "finetune --task wiki-qnli`: each paragraph by its sentence most likely to hold the "
        "answer) or a cross-encoder fine-tuned on wiki-rerank (the whole paragraph); default: none",
    )
    ask.add_argument(
        "--max-length",
        type=argparse_type(int, POSITIVE_INT),
        default=None,
        help="the reader's pieces per window (default: its training length)",
    )
    ask.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the answer, then where it came from and the paragraph; the exit code."""
    from minibert.open_qa import Asker
    from minibert.utils import check_text

    try:  # before loading anything: the answer is instant
        check_text(args.question, "the question")
    except ValueError as exc:
        return _error(exc, 2)
    try:
        asker = Asker(
            args.retriever,
            args.reader,
            args.encoder,
            args.weight,
            quiet=False,
            rerank=args.rerank,
            retrieval_weight=args.retrieval_weight,
        )
        found = asker(args.question, args.top_k, args.max_length)
    except (FileNotFoundError, NotADirectoryError) as exc:
        return _error(exc, 2)
    except (ValueError, KeyError, TypeError) as exc:  # the question, or a folder that is no BERT
        return _error(exc, 2)
    except OSError as exc:
        return _error(exc, 1)
    hit = found.hit
    print(found.text)
    z = found.score - found.span_score
    print(
        f"{hit.title}, paragraph {hit.passage.paragraph + 1}\tretrieved {hit.rank} of "
        f"{len(found.read)} ({asker.measure} {hit.score:.3f})\tscore {found.score:.2f} = span "
        f"score {found.span_score:.2f} (start + end logit) + {z:.2f} (retrieval), the best of "
        f"the {len(found.read)} paragraphs"
    )
    print(f"    {hit.text}")
    return 0


def _error(problem: object, code: int) -> int:
    print(f"minibert ask: error: {problem}", file=sys.stderr)
    return code
