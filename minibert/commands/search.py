"""``minibert search``: a retriever finds the paragraphs of the course's Wikipedia for a query.

    minibert search minilm "who painted the mona lisa?"
    minibert search data/course_checkpoint "the capital of france" --pooling cls --top-k 3
    minibert search bm25 "the capital of france"      # any registered retriever: bm25, tfidf, hybrid

The retriever is read only through the one interface (``minibert.retrieval.retriever``). The
first search with a folder encodes every paragraph (7,396) and keeps the index beside the folder;
later ones read it (``minibert.retrieval.index``). Errors are one line and an exit code.
"""

from __future__ import annotations

import argparse
import sys
import textwrap

from minibert.commands.flags import argparse_type
from minibert.options import POSITIVE_INT

SHOWN = 300  # characters of each paragraph printed


def add_arguments(sub: argparse._SubParsersAction) -> None:
    """The sub-command search."""
    find = sub.add_parser(
        "search", help="find the Wikipedia paragraphs closest to a query with a retriever"
    )
    find.add_argument(
        "model",
        help="the retriever: an encoder ('minilm', 'course' or a BERT folder with config.json "
        "and weights) or a retriever's name ('bm25', 'tfidf', 'hybrid': BM25 and MiniLM)",
    )
    find.add_argument("query", help="the query, in quotes: a question or a few words")
    find.add_argument(
        "--top-k",
        type=argparse_type(int, POSITIVE_INT),
        default=5,
        help="how many paragraphs to print (default: 5)",
    )
    find.add_argument(
        "--pooling",
        choices=("mean", "cls", "pooler"),
        default="mean",
        help="an encoder's vector per text: the mean of the last layer's tokens (default; "
        "MiniLM's), its raw [CLS] vector, or BERT's pooler on it",
    )
    find.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print each hit: rank, score, article and paragraph, then the paragraph's start; the exit code."""
    from minibert.retrieval.retriever import hits, retriever_of
    from minibert.utils import check_text

    try:  # before loading anything: the answer is instant
        check_text(args.query, "the query")
    except ValueError as exc:
        return _error(exc, 2)
    try:
        retriever = retriever_of(args.model, pooling=args.pooling, quiet=False)
        found = hits(retriever, args.query, args.top_k)
    except (FileNotFoundError, NotADirectoryError) as exc:
        return _error(exc, 2)
    except (ValueError, KeyError, TypeError) as exc:  # the query, or a folder that is no BERT
        return _error(f"cannot search with {args.model}: {exc}", 2)
    except OSError as exc:
        return _error(exc, 1)
    for hit in found:
        where = f"{hit.title}, paragraph {hit.passage.paragraph + 1}"
        print(f"{hit.rank}\t{hit.score:.3f}\t{where}")
        print(textwrap.indent(textwrap.shorten(hit.text, SHOWN, placeholder=" ..."), "    "))
    return 0


def _error(problem: object, code: int) -> int:
    print(f"minibert search: error: {problem}", file=sys.stderr)
    return code
