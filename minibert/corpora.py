"""Readers for the course's real text: the Wikipedia extract, Rotten Tomatoes snippets, any dump.

    articles = wikipedia_articles("train")       # list[Article], markup removed, order kept
    articles[0].title, articles[0].paragraphs, articles[0].sentences
    reviews = rotten_tomatoes("train")           # list[Review]: text, label (1 fresh, 0 rotten), movie
    movies = review_documents("train")           # list[Article]: a movie's snippets, no labels

Wikipedia markup is removed with gensim's ``wikicorpus`` tools (the same ones gensim uses to build
its Wikipedia corpora); this module only cuts the result into paragraphs and sentences.
"""

from __future__ import annotations

import bz2
import csv
import functools
import hashlib
import io
import itertools
import json
import os
import random
import re
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from minibert import assets
from minibert.utils import atomic_write

__all__ = [
    "QUESTIONS",
    "Article",
    "Question",
    "Review",
    "heldout_article",
    "questions",
    "read_articles",
    "read_text_files",
    "read_wikipedia_dump",
    "review_documents",
    "rotten_tomatoes",
    "split_sentences",
    "split_of",
    "wikipedia_articles",
    "write_articles",
]


@dataclass(frozen=True)
class Article:
    """One document: a title and its paragraphs of plain text, in their original order."""

    title: str
    paragraphs: tuple[str, ...]
    paragraph_sentences: tuple[tuple[str, ...], ...] = field(repr=False, compare=False)

    @property
    def sentences(self) -> list[str]:
        """All sentences of the article, in order."""
        return [s for para in self.paragraph_sentences for s in para]

    @property
    def text(self) -> str:
        """The article as plain text, a blank line between paragraphs."""
        return "\n\n".join(self.paragraphs)

    @property
    def num_words(self) -> int:
        """Whitespace-separated words in the article."""
        return sum(len(p.split()) for p in self.paragraphs)


def make_article(title: str, paragraphs: list[str]) -> Article:
    """Build an Article, splitting each paragraph into sentences."""
    paras = tuple(p for p in (" ".join(p.split()) for p in paragraphs) if p)
    return Article(title, paras, tuple(tuple(split_sentences(p)) for p in paras))


# ---- sentence splitting ------------------------------------------------------------------------
#
# A documented rule set, in the spirit of Punkt but without a trained model:
#   1. A sentence may end after a run of '.', '!' or '?', optionally followed by closing quotes or
#      brackets, when whitespace follows and the next word starts with an upper-case letter, a
#      digit, or an opening quote or bracket. A lower-case next word never starts a sentence, so
#      "e.g. the" or "approx. three" never split.
#   2. A '.' does not end a sentence when the word it ends is a known abbreviation
#      (titles such as Dr., Mr., St.; "c." and "ca." before dates; "No.", "Vol.", "pp."; "e.g.",
#      "i.e.", "vs.", "et al."; month abbreviations), or a single letter (initials "J. R. R."),
#      or a dotted initialism ("U.S.", "U.K.", "A.D."). The price: "in the U.S. He moved" stays one
#      sentence. Decimals ("3.5") never split because no whitespace follows the point.

_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft gen col lt sgt capt cmdr adm rev hon gov sen rep pres
    c ca cf vs viz approx est no nos vol vols pp p fig figs ed eds trans repr
    e.g i.e et al incl inc ltd co corp bros dept univ assn
    jan feb mar apr jun jul aug sep sept oct nov dec
    """.split()
)

_BOUNDARY = re.compile(r"""[.!?]+['"”’)\]]*\s+(?=[\"“‘'(\[]?[A-Z0-9À-ÖØ-Þ])""")
_LAST_WORD = re.compile(r"(\S+)$")
_INITIALISM = re.compile(r"^(?:[A-Za-z]\.)+$")


def _is_abbreviation(text_before: str) -> bool:
    """Whether the word that ends text_before (at a '.') is an abbreviation or an initial."""
    match = _LAST_WORD.search(text_before)
    if not match:
        return False
    word = match.group(1).lstrip("(\"'“‘[")
    if not word.endswith("."):
        return False
    if _INITIALISM.match(word):  # "J.", "U.S.", "A.D."
        return True
    return word[:-1].lower() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """Split plain text into sentences with the documented rule set above; whitespace normalised."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    text = " ".join(text.split())
    sentences, start = [], 0
    for match in _BOUNDARY.finditer(text):
        end_of_punct = match.start() + len(match.group(0).rstrip())
        candidate = text[start:end_of_punct]
        if candidate.rstrip("'\"”’)]").endswith(".") and _is_abbreviation(
            candidate.rstrip("'\"”’)]")
        ):
            continue
        sentences.append(candidate.strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


# ---- Wikipedia ---------------------------------------------------------------------------------

_END_SECTIONS = re.compile(
    r"^=+\s*(references|notes|footnotes|citations|sources|bibliography|further reading|"
    r"external links|see also)\s*=+\s*$",
    re.IGNORECASE,
)
_HEADING = re.compile(r"^=+.*=+\s*$")
_TABLE_OR_TEMPLATE = re.compile(r"^\s*(\{\||\|\}|\||!|\{\{|\}\})")
_EMPTY_PARENS = re.compile(r"\(\s*[,;:\s]*\)")  # what removed templates leave: "( )", "(;;)"
_PUNCT_OPENING_PARENS = re.compile(r"\(\s*(?:[,;:]\s*)+")  # "(; ; 14 March" -> "(14 March"
_PUNCT_CLOSING_PARENS = re.compile(r"(?:\s*[,;:])+\s*\)")  # "(Akhilleus, )" -> "(Akhilleus)"
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
_MIN_PARAGRAPH_WORDS = 4


def wiki_paragraphs(wikitext: str) -> list[str]:
    """Plain-text paragraphs of one article's wikitext (markup removed by gensim's filter_wiki)."""
    from gensim.corpora.wikicorpus import filter_wiki

    plain = filter_wiki(wikitext)
    plain = plain.replace("'''", "").replace("''", "")  # bold and italic quotes
    paragraphs: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = " ".join(" ".join(current).split())
        text = _PUNCT_OPENING_PARENS.sub("(", _EMPTY_PARENS.sub("", text))
        text = _PUNCT_CLOSING_PARENS.sub(")", text)
        text = _SPACE_BEFORE_PUNCT.sub(r"\1", text)
        text = " ".join(text.split())
        if len(text.split()) >= _MIN_PARAGRAPH_WORDS:
            paragraphs.append(text)
        current.clear()

    for line in plain.splitlines():
        stripped = line.strip()
        if _END_SECTIONS.match(stripped):
            break  # references, links and the like end the prose
        if not stripped or _HEADING.match(stripped) or _TABLE_OR_TEMPLATE.match(stripped):
            flush()
        elif stripped[0] in "*#:;":  # a list item is a paragraph of its own
            flush()
            current.append(stripped.lstrip("*#:; "))
            flush()
        else:
            current.append(stripped)
    flush()
    return paragraphs


def dump_pages(path: str | Path) -> Iterator[tuple[str, str]]:
    """(title, wikitext) of each page of a MediaWiki XML dump (.xml or .xml.bz2): the main
    namespace, redirects left out."""
    from gensim.corpora.wikicorpus import extract_pages

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no MediaWiki dump at {path}")
    if path.suffix not in (".xml", ".bz2"):
        raise ValueError(
            f"{path} is not a MediaWiki XML dump (.xml or .bz2); for plain text, give a "
            "folder of .txt files, one document each"
        )
    opener = bz2.open if path.suffix == ".bz2" else open
    try:
        with opener(path, "rb") as f:
            for title, wikitext, _page_id in extract_pages(f, filter_namespaces=("0",)):
                if not wikitext.lstrip().lower().startswith("#redirect"):
                    yield title, wikitext
    except (SyntaxError, OSError, EOFError, ValueError) as exc:  # XML ParseError: SyntaxError
        raise ValueError(f"{path} is not a readable MediaWiki dump: {exc}") from None


def read_wikipedia_dump(path: str | Path) -> Iterator[Article]:
    """Articles of any MediaWiki XML dump (.xml or .xml.bz2): main namespace, no redirects, no empties."""
    for title, wikitext in dump_pages(path):
        paragraphs = wiki_paragraphs(wikitext)
        if paragraphs:
            yield make_article(title, paragraphs)


def heldout_article(title: str) -> bool:
    """The fixed train / held-out split: an article is held out when crc32(title) % 10 == 2."""
    return zlib.crc32(title.encode("utf-8")) % 10 == 2


def parsed_once(
    dump: Path,
    kind: str,
    parse: Callable[[], list],
    row: Callable,
    unrow: Callable,
    code: tuple[str, ...] = (),
    libraries: tuple[str, ...] = (),
) -> list:
    """parse() of a dump, kept beside it as JSON (one row(item) per item, read back by unrow) and
    named by the dump's size and mtime, the source of this module and the code files given, the
    versions of the libraries given and this Python's Unicode tables, so that a new dump, a change
    to the parsing or another environment parses again. Parsing the course's dump takes seconds
    in every process that reads it (gensim's or mwparserfromhell's markup filters)."""
    from importlib import metadata

    sources = b"".join(Path(f).read_bytes() for f in (__file__, *code))
    sources += repr([unicodedata.unidata_version, *map(metadata.version, libraries)]).encode()
    stat = dump.stat()
    key = f"{stat.st_size}-{stat.st_mtime_ns}-{hashlib.sha256(sources).hexdigest()[:12]}"
    kept = dump.with_name(f".{dump.name}.{kind}.{key}.json")
    try:
        return [unrow(r) for r in json.loads(kept.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError, KeyError, IndexError):
        pass  # not parsed yet, or unreadable: parse the dump
    items = parse()
    try:  # written whole or not at all; where the cache is read-only, each process parses
        for stale in dump.parent.glob(f".{dump.name}.{kind}.*.json"):
            stale.unlink(missing_ok=True)
        partial = kept.with_name(f"{kept.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps([row(i) for i in items], ensure_ascii=False), "utf-8")
        os.replace(partial, kept)
    except OSError:
        pass
    return items


def _article_row(article: Article) -> list:
    return [article.title, article.paragraphs, article.paragraph_sentences]


def _row_article(row: list) -> Article:
    return Article(row[0], tuple(row[1]), tuple(tuple(s) for s in row[2]))


@functools.lru_cache(maxsize=1)
def _wikipedia_cached(file: str, mtime_ns: int) -> tuple[Article, ...]:
    return tuple(
        parsed_once(
            Path(file),
            "articles",
            lambda: list(read_wikipedia_dump(file)),
            _article_row,
            _row_article,
            libraries=("gensim",),
        )
    )


def wikipedia_articles(split: str = "all") -> list[Article]:
    """The course's Wikipedia extract as Articles: split 'all', 'train' or 'heldout' (by title)."""
    if split not in ("all", "train", "heldout"):
        raise ValueError(f"split must be 'all', 'train' or 'heldout', got {split!r}")
    file = assets.path("wikipedia")
    articles = _wikipedia_cached(str(file), file.stat().st_mtime_ns)
    if split == "all":
        return list(articles)
    want_heldout = split == "heldout"
    return [a for a in articles if heldout_article(a.title) == want_heldout]


def write_articles(articles: Iterable[Article], file: str | Path) -> Path:
    """Articles as one JSON file, in their order, each as it was split (title, paragraphs, their
    sentences): the course's extract, written where gensim is, for ``pretrain --corpus FILE.json``
    on a machine without it (``read_articles`` reads it back)."""
    rows = [_article_row(a) for a in articles]
    return atomic_write(file, json.dumps(rows, ensure_ascii=False))


def read_articles(file: str | Path) -> list[Article]:
    """The articles ``write_articles`` wrote, in the same order and split as they were."""
    try:
        rows = json.loads(Path(file).read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        rows = None  # not JSON text: refused below, as a JSON value of another shape is
    if not isinstance(rows, list) or not all(
        isinstance(r, list) and len(r) == 3 and isinstance(r[0], str) for r in rows
    ):
        raise ValueError(
            f"{file} is not a file of articles as corpora.write_articles writes them (a JSON "
            "list of [title, paragraphs, their sentences]); write one with write_articles"
        )
    return [_row_article(row) for row in rows]


def read_text_files(folder: str | Path, pattern: str = "*.txt") -> list[Article]:
    """One Article per text file in folder (sorted by name), paragraphs separated by blank lines."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder at {folder}")
    articles = []
    for file in sorted(folder.glob(pattern)):
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start})"
            ) from None
        paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
        if paragraphs:
            articles.append(make_article(file.stem, paragraphs))
    return articles


# ---- Rotten Tomatoes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Review:
    """One labelled review snippet: its text, label (1 = fresh, 0 = rotten) and movie."""

    text: str
    label: int
    movie: str


LABELS = ("rotten", "fresh")  # index = label
SPLIT_FRACTIONS = {"train": 0.8, "dev": 0.1, "test": 0.1}
_SPLIT_SEED = 20190531


@functools.lru_cache(maxsize=1)
def _rotten_tomatoes_cached(file: str, mtime_ns: int) -> dict[str, tuple[Review, ...]]:
    with bz2.open(file, "rb") as raw:
        rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    seen: set[str] = set()
    reviews: list[Review] = []
    plots: list[tuple[str, str]] = []  # (movie, plot summary)
    for row in rows:
        if row["category"] == "plot":
            plots.append((row["movie_name"], " ".join(row["text"].split())))
        if row["category"] not in LABELS:  # plot summaries are not reviews
            continue
        text = " ".join(row["text"].split())
        if text in seen:  # exact duplicates (56 of them) would leak across splits
            continue
        seen.add(text)
        reviews.append(Review(text, LABELS.index(row["category"]), row["movie_name"]))
    # whole movies go to one split: shuffle the movies with a fixed seed, then fill 80/10/10
    movies = sorted({r.movie for r in reviews})
    random.Random(_SPLIT_SEED).shuffle(movies)
    per_movie: dict[str, int] = {}
    for r in reviews:
        per_movie[r.movie] = per_movie.get(r.movie, 0) + 1
    bounds = list(itertools.accumulate(SPLIT_FRACTIONS.values()))  # 0.8, 0.9, 1.0
    split_of: dict[str, str] = {}
    done = 0
    for movie in movies:
        fraction = done / len(reviews)
        split_of[movie] = next(
            (name for name, bound in zip(SPLIT_FRACTIONS, bounds) if fraction < bound), "test"
        )
        done += per_movie[movie]
    out: dict[str, tuple] = {"all": tuple(reviews)}
    for name in SPLIT_FRACTIONS:
        out[name] = tuple(r for r in reviews if split_of[r.movie] == name)
        # a plot summary belongs to its movie's split; a movie with no snippet has none
        out[f"plots:{name}"] = tuple(p for p in plots if split_of.get(p[0]) == name)
    return out


def rotten_tomatoes(split: str = "train") -> list[Review]:
    """Labelled snippets, de-duplicated, split 80/10/10 by movie: 'train', 'dev', 'test' or 'all'."""
    if split not in ("all", *SPLIT_FRACTIONS):
        raise ValueError(f"split must be 'train', 'dev', 'test' or 'all', got {split!r}")
    file = assets.path("rotten_tomatoes")
    return list(_rotten_tomatoes_cached(str(file), file.stat().st_mtime_ns)[split])


def review_documents(split: str = "train", plots: bool = False) -> list[Article]:
    """Review text without labels, one document per movie of a split (sorted by movie title).

    Each snippet of the movie is a paragraph, in the file's order; plots=True adds the movie's
    plot summary first. Only the split's own movies: the text of a dev or test movie never
    enters pretraining on the 'train' documents, and no label is kept.
    """
    if split not in SPLIT_FRACTIONS:
        raise ValueError(f"split must be 'train', 'dev' or 'test', got {split!r}")
    file = assets.path("rotten_tomatoes")
    cached = _rotten_tomatoes_cached(str(file), file.stat().st_mtime_ns)
    by_movie: dict[str, list[str]] = {}
    if plots:
        for movie, summary in cached[f"plots:{split}"]:
            by_movie.setdefault(movie, []).append(summary)
    for review in cached[split]:
        by_movie.setdefault(review.movie, []).append(review.text)
    return [make_article(movie, by_movie[movie]) for movie in sorted(by_movie)]


def rotten_tomatoes_raw_counts() -> dict[str, int]:
    """Counts in the file before de-duplication: labelled snippets, fresh, rotten, plot summaries."""
    file = assets.path("rotten_tomatoes")
    with bz2.open(file, "rb") as raw:
        rows = list(csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")))
    counts = {"fresh": 0, "rotten": 0, "plot": 0}
    for row in rows:
        counts[row["category"]] = counts.get(row["category"], 0) + 1
    counts["labelled"] = counts["fresh"] + counts["rotten"]
    return counts


# ---- the course's questions (wiki-qa's, and wiki-search's queries) ----------------------------
# Written by hand for the course, each about one paragraph of an article of the Wikipedia extract
# (data/README.md): one SQuAD v1.1 file per article under minibert/task_data/wiki_qa/.

QUESTIONS = Path(__file__).resolve().parent / "task_data" / "wiki_qa"


@dataclass(frozen=True)
class Question:
    """One question: its paragraph (context), and the accepted answers as (text, character start)."""

    id: str
    title: str
    context: str
    question: str
    answers: tuple[tuple[str, int], ...]


def split_of(title: str) -> str:
    """The split of an article's questions: test (held out), dev or train."""
    if heldout_article(title):
        return "test"
    return "dev" if zlib.crc32(title.encode("utf-8")) % 5 == 0 else "train"


@functools.lru_cache(maxsize=4)
def _read(folder: str) -> tuple[Question, ...]:
    """Every question of the SQuAD-format files in folder, in file and paragraph order."""
    found = []
    for file in sorted(Path(folder).glob("*.json")):
        article = json.loads(file.read_text(encoding="utf-8"))
        for paragraph in article["paragraphs"]:
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                answers = tuple((a["text"], a["answer_start"]) for a in qa["answers"])
                for text, start in answers:
                    if context[start : start + len(text)] != text:
                        raise ValueError(f"{file.name}: {qa['id']}: {text!r} is not at {start}")
                found.append(Question(qa["id"], article["title"], context, qa["question"], answers))
    if not found:
        raise FileNotFoundError(f"no questions in {folder}")
    return tuple(found)


def questions(split: str = "train", folder: str | Path = QUESTIONS) -> list[Question]:
    """The questions of one split ('train', 'dev', 'test' or 'all')."""
    if split not in ("train", "dev", "test", "all"):
        raise ValueError(f"split must be 'train', 'dev', 'test' or 'all', got {split!r}")
    every = _read(str(folder))
    return [q for q in every if split == "all" or split_of(q.title) == split]
