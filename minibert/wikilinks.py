"""Wikipedia's links as annotations: plain-text paragraphs and sentences with each link's span.

    articles = linked_articles("train")          # list[LinkedArticle], the dump's order kept
    sentence = articles[0].sentences[0]          # LinkedText: text, links
    link = sentence.links[0]                     # Link: start, end (characters), target
    sentence.text[link.start : link.end]         # the anchor text, exactly as a reader sees it

An editor who writes ``[[Paris|the French capital]]`` marks "the French capital" as naming the
article Paris: a span of the text and what it refers to, written by people, not by a model. Here
the markup is parsed by mwparserfromhell (a real wikitext parser: templates nest, tables and
refs hold links of their own, which regular expressions get wrong) and rendered to text:

- ``[[Target]]`` and ``[[Target|anchor]]`` keep their anchor as a link to Target (underscores
  read as spaces, the first letter capitalised, a ``#section`` dropped). A link trail is part
  of the anchor, as MediaWiki shows it: ``[[apple]]s`` reads "apples", all of it the link.
- Dropped with everything inside them: templates (nested or not: infoboxes, citations,
  ``{{convert}}``, whose holes stay holes, as in gensim's text), tables, ``<ref>``, ``<math>``,
  galleries and code, comments, file and image links (their captions and the links in them),
  categories and interlanguage links (``[[fr:Paris]]``).
- Tables are dropped, and the links in their cells with them: cells are fragments, not sentences,
  and the course's pretraining text (corpora.wiki_paragraphs) drops them too.
- Kept as plain text without a link: links to other wikis (``[[wikt:word|word]]``), to other
  namespaces (``[[Help:...]]``, ``[[:Category:...]]``) and to sections of the same article
  (``[[#History|below]]``): their text is visible but names no article. External links keep
  their title (``[http://... title]``); bare URLs go.
- Bold and italic quotes are read as text and deleted: parsed as tags, one unbalanced ``''`` in
  a ref or a caption hides the ref, table or file around it from the parser (its markup then
  leaked into the text of some of the course's articles).
- Headings end a paragraph; a heading such as "References" or "See also" ends the prose (the
  same names as corpora.wiki_paragraphs); a list item is a paragraph of its own; paragraphs of
  fewer than four words are dropped.

Each paragraph is cut into sentences by corpora.split_sentences; a link that crosses a sentence
boundary is dropped from both sentences and counted (``LinkedArticle.crossing``).
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import mwparserfromhell
from mwparserfromhell.nodes import ExternalLink, Heading, HTMLEntity, Tag, Text, Wikilink
from mwparserfromhell.wikicode import Wikicode

from minibert import assets, corpora
from minibert.wordpiece import is_control, is_whitespace

__all__ = [
    "Link",
    "LinkedArticle",
    "LinkedText",
    "link_target",
    "linked_articles",
    "linked_paragraphs",
    "linked_sentences",
    "read_linked_dump",
]


@dataclass(frozen=True)
class Link:
    """One link of a text: its anchor's characters [start, end) and the article it names."""

    start: int
    end: int
    target: str


@dataclass(frozen=True)
class LinkedText:
    """A paragraph or a sentence of plain text and its links, in the order of the text."""

    text: str
    links: tuple[Link, ...] = ()

    @property
    def anchors(self) -> list[str]:
        """The text of each link's anchor, in order."""
        return [self.text[link.start : link.end] for link in self.links]


@dataclass(frozen=True)
class LinkedArticle:
    """One article: its title, paragraphs, sentences, and the links lost at sentence boundaries."""

    title: str
    paragraphs: tuple[LinkedText, ...]
    sentences: tuple[LinkedText, ...]
    crossing: int  # links of the paragraphs that cross a sentence boundary (in no sentence)


# ---- which links name an article ------------------------------------------------------------

_DROPPED_NAMESPACES = frozenset({"file", "image", "media", "category"})  # invisible or a picture
_OTHER_NAMESPACES = frozenset(
    """
    user wikipedia wp project mediawiki template help portal draft timedtext module special talk
    wikt wiktionary s wikisource q wikiquote b wikibooks n wikinews v wikiversity voy wikivoyage
    species wikispecies commons c meta m mw d wikidata w doi hdl
    """.split()
)  # visible text, but no article of this wiki
_NAMESPACES = _DROPPED_NAMESPACES | _OTHER_NAMESPACES  # "[[:Category:X]]" shows its text
_LANGUAGE = re.compile(r"^(?:[a-z]{2,3}(?:-[a-z]+)*|simple)$")  # interlanguage: "fr", "be-x-old"
_TRAIL = re.compile(r"[a-z]+")  # English Wikipedia's link trail: "[[apple]]s" reads "apples"


def link_target(title: str) -> str | None:
    """The article a link's title names ("paris_(city)#x" -> "Paris (city)"), or None for a
    link to a section of the same page, another namespace or another wiki."""
    title = " ".join(html.unescape(title).replace("_", " ").split("#")[0].split()).lstrip(": ")
    prefix = title.split(":")[0].strip() if ":" in title else ""
    if not title or prefix.lower() in _NAMESPACES or prefix.lower().endswith(" talk"):
        return None
    if _LANGUAGE.match(prefix):  # [[:fr:Paris]]: a visible link to another language's article
        return None
    return title[0].upper() + title[1:]


def _dropped(title: str) -> bool:
    """Whether a link shows nothing in the text: a file, image, category or interlanguage link."""
    if ":" not in title or title.startswith(":"):
        return False
    prefix = title.split(":")[0].strip()
    if prefix.lower() in _OTHER_NAMESPACES:  # "doi", "mw": not languages
        return False
    return prefix.lower() in _DROPPED_NAMESPACES or bool(_LANGUAGE.match(prefix))


# ---- rendering: wikicode -> characters, each with the id of the link it belongs to -------------

_DROPPED_TAGS = frozenset(
    """
    ref references table math chem ce gallery imagemap timeline graph mapframe score code pre
    source syntaxhighlight includeonly templatedata hiero
    """.split()
)
_ITEM_TAGS = frozenset({"li", "dd", "dt"})


class _Writer:
    """Characters of visible text with a link id each (-1: none), cut into paragraphs."""

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.ids: list[int] = []
        self.paragraphs: list[tuple[str, list[int]]] = []
        self.targets: list[str] = []  # link id -> target
        self.item = False  # inside a list item: the end of its line ends the paragraph
        self.blank = True  # nothing visible on the current line yet
        self.done = False  # the prose has ended (a "References" heading)

    def write(self, text: str, link: int = -1) -> None:
        """Append visible text; a newline ends a line (a blank line or an item: a paragraph)."""
        for i, line in enumerate(text.split("\n")):
            if i:
                if self.item or self.blank:
                    self.flush()
                else:
                    self.chars.append(" ")
                    self.ids.append(-1)
                self.blank = True
            line = unicodedata.normalize("NFC", line)
            self.chars.extend(line)
            self.ids.extend([link] * len(line))
            self.blank = self.blank and not line.strip()

    def flush(self) -> None:
        """End the current paragraph."""
        if self.chars:
            self.paragraphs.append(("".join(self.chars), self.ids))
        self.chars, self.ids, self.item, self.blank = [], [], False, True


def _render(code: Wikicode, out: _Writer, link: int = -1) -> None:
    """Write code's visible text to out; link: the id of the link whose anchor this is."""
    trail = -1  # the id of the link just written, whose trail the next text may hold
    for node in code.nodes:
        if out.done:
            return
        if isinstance(node, Text):
            text = node.value
            if trail >= 0 and (letters := _TRAIL.match(text)):
                out.write(letters.group(), trail)
                text = text[letters.end() :]
            out.write(text, link)
        trail = -1
        if isinstance(node, Wikilink):
            trail = _wikilink(node, out, link)
        elif isinstance(node, Tag):
            _tag(node, out, link)
        elif isinstance(node, Heading):
            out.flush()
            out.done = bool(corpora._END_SECTIONS.match(str(node).strip()))
        elif isinstance(node, HTMLEntity):
            out.write(node.normalize(), link)
        elif isinstance(node, ExternalLink) and node.title is not None:
            _render(node.title, out, link)
        # Template, Argument, Comment: nothing visible


def _wikilink(node: Wikilink, out: _Writer, link: int) -> int:
    """Write a link's anchor; its link id (for a trail), or -1 if it names no article."""
    title = str(node.title).strip()
    if _dropped(title):
        return -1
    target = link_target(title) if link < 0 else None  # a link inside an anchor is its text
    if target is not None:
        out.targets.append(target)
        link = len(out.targets) - 1
    if node.text is None:
        out.write(html.unescape(title.lstrip(":")), link)
    else:
        _render(node.text, out, link)
    return link if target is not None else -1


def _tag(node: Tag, out: _Writer, link: int) -> None:
    """Write a tag's text: list items become paragraphs, refs and tables vanish."""
    name = str(node.tag).strip().lower()
    if name in _DROPPED_TAGS:
        return
    if name in ("br", "hr"):
        out.write(" ", link)
    elif name in _ITEM_TAGS:
        out.flush()
        out.item = True
    if node.contents is not None and not node.self_closing:
        _render(node.contents, out, link)
    if name in _ITEM_TAGS and node.wiki_markup is None:  # <li>...</li>: the item ends here
        out.flush()


# ---- cleaning the rendered text, keeping each character's link id ----------------------------

_DELETIONS = tuple(
    re.compile(pattern)
    for pattern in (
        r"__[A-Z]+__",  # magic words: __NOTOC__
        r"'{2,}",  # bold and italic quotes the parser left (unbalanced ones)
        r"\(\s*[,;:\s]*\)",  # what removed templates leave: "( )", "(;;)"
        r"(?<=\()\s*(?:[,;:]\s*)+",  # "(; ; 14 March" -> "(14 March"
        r"(?:\s*[,;:])+\s*(?=\))",  # "(Akhilleus, )" -> "(Akhilleus)"
        r"\s+(?=[,.;:!?])",  # a space before punctuation
        r"^ +| +$|(?<= ) +",  # spaces at the ends, and all but one of a run
    )
)


def _delete(pattern: re.Pattern, text: str, ids: list[int]) -> tuple[str, list[int]]:
    """Delete pattern's matches from text and their ids from ids."""
    matches = [match.span() for match in pattern.finditer(text)]
    if not matches:
        return text, ids
    texts, kept, end = [], [], 0
    for start, stop in matches:
        texts.append(text[end:start])
        kept += ids[end:start]
        end = stop
    return "".join(texts) + text[end:], kept + ids[end:]


_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ASCII_SPACE = str.maketrans("\t\n\r\x0b\x0c", "     ")


def _clean(text: str, ids: list[int], targets: list[str]) -> LinkedText:
    """Whitespace collapsed, control characters and template debris removed; links by span."""
    if text.isascii():
        text, ids = _delete(_ASCII_CONTROL, text, ids)
        text = text.translate(_ASCII_SPACE)
    else:
        kept = [
            (" " if c.isspace() or is_whitespace(c) else c, i)
            for c, i in zip(text, ids)
            if not is_control(c)
        ]
        text, ids = "".join(c for c, _ in kept), [i for _, i in kept]
    for _ in range(2):  # removing "( )" can leave " ," or two spaces behind
        for pattern in _DELETIONS:
            text, ids = _delete(pattern, text, ids)
    where: dict[int, list[int]] = {}
    for i, link in enumerate(ids):
        if link >= 0 and text[i] != " ":
            where.setdefault(link, []).append(i)
    links = tuple(Link(at[0], at[-1] + 1, targets[k]) for k, at in sorted(where.items()))
    return LinkedText(text, links)


def linked_paragraphs(wikitext: str) -> list[LinkedText]:
    """Plain-text paragraphs of one article's wikitext (at least 4 words each), with links."""
    out = _Writer()
    _render(mwparserfromhell.parse(wikitext, skip_style_tags=True), out)
    out.flush()
    paragraphs = [_clean(text, ids, out.targets) for text, ids in out.paragraphs]
    return [p for p in paragraphs if len(p.text.split()) >= corpora._MIN_PARAGRAPH_WORDS]


# ---- sentences ---------------------------------------------------------------------------------


def linked_sentences(paragraph: LinkedText) -> tuple[list[LinkedText], int]:
    """The paragraph's sentences (corpora.split_sentences) with the links inside each, and the
    number of links dropped because they cross a sentence boundary."""
    sentences, position, kept = [], 0, 0
    for sentence in corpora.split_sentences(paragraph.text):
        start = paragraph.text.index(sentence, position)  # sentences are slices of the text
        end = position = start + len(sentence)
        links = tuple(
            Link(link.start - start, link.end - start, link.target)
            for link in paragraph.links
            if start <= link.start and link.end <= end
        )
        sentences.append(LinkedText(sentence, links))
        kept += len(links)
    return sentences, len(paragraph.links) - kept


def _article(title: str, wikitext: str) -> LinkedArticle | None:
    """The linked article of one page's wikitext, or None if no paragraph is left."""
    paragraphs = linked_paragraphs(wikitext)
    if not paragraphs:
        return None
    sentences, crossing = [], 0
    for paragraph in paragraphs:
        found, lost = linked_sentences(paragraph)
        sentences += found
        crossing += lost
    return LinkedArticle(title, tuple(paragraphs), tuple(sentences), crossing)


def read_linked_dump(path: str | Path) -> Iterator[LinkedArticle]:
    """Linked articles of a MediaWiki XML dump (.xml or .xml.bz2): main namespace, no redirects."""
    for title, wikitext in corpora.dump_pages(path):
        if (article := _article(title, wikitext)) is not None:
            yield article


def _text_row(t: LinkedText) -> list:
    return [t.text, [[k.start, k.end, k.target] for k in t.links]]


def _text_of(row: list) -> LinkedText:
    return LinkedText(row[0], tuple(Link(*k) for k in row[1]))


@functools.lru_cache(maxsize=1)
def _linked_cached(file: str, mtime_ns: int) -> tuple[LinkedArticle, ...]:
    return tuple(
        corpora.parsed_once(
            Path(file),
            "linked",
            lambda: list(read_linked_dump(file)),
            lambda a: [
                a.title,
                [_text_row(p) for p in a.paragraphs],
                [_text_row(s) for s in a.sentences],
                a.crossing,
            ],
            lambda r: LinkedArticle(
                r[0], tuple(map(_text_of, r[1])), tuple(map(_text_of, r[2])), r[3]
            ),
            code=(__file__,),
            libraries=("gensim", "mwparserfromhell"),
        )
    )


def linked_articles(split: str = "all") -> list[LinkedArticle]:
    """The course's Wikipedia dump with its links: 'all', 'train' or 'heldout' (by title, as
    corpora.heldout_article splits pretraining)."""
    if split not in ("all", "train", "heldout"):
        raise ValueError(f"split must be 'all', 'train' or 'heldout', got {split!r}")
    file = assets.path("wikipedia")
    articles = _linked_cached(str(file), file.stat().st_mtime_ns)
    if split == "all":
        return list(articles)
    return [a for a in articles if corpora.heldout_article(a.title) == (split == "heldout")]
