"""minibert.corpora: measured counts, the fixed splits, sentence splitting on real sentences."""

import bz2

import pytest

from minibert import corpora


@pytest.fixture(scope="module")
def articles():
    return corpora.wikipedia_articles("all")


def test_wikipedia_counts(articles):
    # measured on the gensim 4.4.0 extract: 206 main-namespace pages, 99 redirects, 1 empty page
    assert len(articles) == 106
    assert sum(a.num_words for a in articles) == 446_274
    assert sum(len(a.paragraphs) for a in articles) == 7_396
    assert sum(len(a.sentences) for a in articles) == 21_618


def test_redirects_and_markup_are_gone(articles):
    titles = {a.title for a in articles}
    assert "AccessibleComputing" not in titles  # a redirect page in the dump
    assert "Autism" in titles and "Anarchism" in titles
    for article in articles:
        for para in article.paragraphs:
            assert "'''" not in para and "[[" not in para and "{{" not in para
            assert not para.startswith("==")


def test_paragraph_order_is_kept(articles):
    autism = next(a for a in articles if a.title == "Autism")
    assert autism.paragraphs[0].startswith("Autism is a neurodevelopmental disorder")
    assert autism.paragraphs[1].startswith("While autism is highly heritable")
    assert autism.sentences[0] == (
        "Autism is a neurodevelopmental disorder characterized by impaired social interaction, "
        "verbal and non-verbal communication, and restricted and repetitive behavior."
    )
    assert "References" not in autism.text.split()[-5:]


def test_train_heldout_split_is_fixed_and_disjoint(articles):
    train = corpora.wikipedia_articles("train")
    heldout = corpora.wikipedia_articles("heldout")
    assert len(train) == 97 and len(heldout) == 9
    assert {a.title for a in train}.isdisjoint(a.title for a in heldout)
    assert sorted(a.title for a in heldout) == sorted(
        [
            "Achilles",
            "Alchemy",
            "Amphibian",
            "Apollo 11",
            "Astronaut",
            "Asia Minor (disambiguation)",
            "Demographics of Angola",
            "Android (robot)",
            "American Revolutionary War",
        ]
    )
    assert sum(a.num_words for a in heldout) == 51_790
    assert all(corpora.heldout_article(a.title) for a in heldout)
    with pytest.raises(ValueError, match="'train'"):
        corpora.wikipedia_articles("validation")


# real sentences of the extract, each containing a trap for a naive splitter
REAL_SENTENCES = [
    "At eighteen, he joined Plato's Academy in Athens and remained there until the age of "
    "thirty-seven (c. 347 BC).",
    "Dr. Blodgett is the scientist who pulls the lever to demonstrate Project X.",
    "The U.S. Congress selected Huntsville as the site for the first Constitutional Convention "
    "of Alabama after it was approved to become the 22nd state.",
    "Globally, autism is estimated to affect 21.7 million people as of 2013.",
    "In response, the federalist sections formed their own International at the St. Imier "
    "Congress, adopting a revolutionary anarchist program.",
    "Phenomena such as civilization, technology (e.g. within anarcho-primitivism), and the "
    "democratic process may be sharply criticised within some anarchist tendencies and "
    "simultaneously lauded in others.",
]


@pytest.mark.parametrize("sentence", REAL_SENTENCES)
def test_real_sentences_survive_splitting(articles, sentence):
    assert sentence in {s for a in articles for s in a.sentences}
    assert corpora.split_sentences(sentence) == [sentence]


def test_split_sentences_rules():
    text = REAL_SENTENCES[0] + " " + REAL_SENTENCES[3] + '  Is it? "Yes!" He left.'
    assert corpora.split_sentences(text) == [
        REAL_SENTENCES[0],
        REAL_SENTENCES[3],
        "Is it?",
        '"Yes!"',
        "He left.",
    ]
    assert corpora.split_sentences("J. R. R. Tolkien wrote it. i.e. not me.") == [
        "J. R. R. Tolkien wrote it. i.e. not me."
    ]
    assert corpora.split_sentences("   ") == []
    with pytest.raises(TypeError, match="bytes"):
        corpora.split_sentences(b"bytes")


def test_read_text_files(tmp_path):
    (tmp_path / "b.txt").write_text("Second doc. Two sentences here.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text(
        "First paragraph of doc a.\n\n  Second paragraph, with Dr. Who in it.\n", encoding="utf-8"
    )
    docs = corpora.read_text_files(tmp_path)
    assert [d.title for d in docs] == ["a", "b"]
    assert docs[0].paragraphs == (
        "First paragraph of doc a.",
        "Second paragraph, with Dr. Who in it.",
    )
    assert docs[1].sentences == ["Second doc.", "Two sentences here."]
    with pytest.raises(FileNotFoundError):
        corpora.read_text_files(tmp_path / "nope")


def test_written_articles_read_back_as_they_were_split_and_in_their_order(tmp_path):
    """write_articles keeps each article's own sentences (not split again on reading) and the
    order given, so a machine without gensim reads the course extract exactly."""
    made = corpora.make_article("Zeta", ["One sentence. Another one.", "A second paragraph."])
    kept = corpora.Article("Alpha", ("Dr. Who came. He left.",), (("Dr. Who came. He left.",),))
    file = corpora.write_articles([made, kept], tmp_path / "articles.json")
    back = corpora.read_articles(file)
    assert [a.title for a in back] == ["Zeta", "Alpha"]
    assert [a.paragraph_sentences for a in back] == [
        made.paragraph_sentences,
        kept.paragraph_sentences,
    ]
    assert back[1].sentences == ["Dr. Who came. He left."]  # as written, not split again
    for other in ('{"title": "not a list of articles"}', "[1, 2]", "not JSON"):
        (tmp_path / "other.json").write_text(other, encoding="utf-8")
        with pytest.raises(ValueError, match="not a file of articles as corpora.write_articles"):
            corpora.read_articles(tmp_path / "other.json")


def test_read_any_mediawiki_dump(tmp_path):
    xml = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
  <page><title>Tiny</title><ns>0</ns><id>1</id><revision><text>'''Tiny''' is a [[test|small]] page.
It has two sentences in one paragraph.

==See also==
* [[Other]]</text></revision></page>
  <page><title>Gone</title><ns>0</ns><id>2</id><revision><text>#REDIRECT [[Tiny]]</text></revision></page>
  <page><title>Talk:Tiny</title><ns>1</ns><id>3</id><revision><text>A talk page with words.</text></revision></page>
</mediawiki>"""
    path = tmp_path / "dump.xml.bz2"
    path.write_bytes(bz2.compress(xml.encode("utf-8")))
    docs = list(corpora.read_wikipedia_dump(path))
    assert [d.title for d in docs] == ["Tiny"]
    assert docs[0].sentences == ["Tiny is a small page.", "It has two sentences in one paragraph."]


def test_rotten_tomatoes_counts_and_labels():
    raw = corpora.rotten_tomatoes_raw_counts()
    assert raw == {"fresh": 7_403, "rotten": 5_405, "plot": 1_097, "labelled": 12_808}
    everything = corpora.rotten_tomatoes("all")
    assert len(everything) == 12_752  # 56 exact duplicates removed
    assert sum(r.label for r in everything) == 7_368
    assert len({r.text for r in everything}) == len(everything)
    assert {r.label for r in everything} == {0, 1}


def test_rotten_tomatoes_split_by_movie():
    splits = {name: corpora.rotten_tomatoes(name) for name in ("train", "dev", "test")}
    total = sum(len(s) for s in splits.values())
    assert total == 12_752
    movies = {name: {r.movie for r in s} for name, s in splits.items()}
    assert movies["train"].isdisjoint(movies["dev"])
    assert movies["train"].isdisjoint(movies["test"])
    assert movies["dev"].isdisjoint(movies["test"])
    for name, fraction in corpora.SPLIT_FRACTIONS.items():
        assert abs(len(splits[name]) / total - fraction) < 0.01, name
    assert [len(splits[n]) for n in ("train", "dev", "test")] == [10_233, 1_247, 1_272]
    assert corpora.rotten_tomatoes("train") == splits["train"]  # deterministic
    with pytest.raises(ValueError, match="'dev'"):
        corpora.rotten_tomatoes("validation")


def test_review_documents_hold_only_training_movies_and_no_labels():
    # the corpus for continued pretraining: no text of a dev or test movie, no label
    documents = corpora.review_documents("train", plots=True)
    train = corpora.rotten_tomatoes("train")
    assert [d.title for d in documents] == sorted({r.movie for r in train})  # one per movie
    text = {p for d in documents for p in d.paragraphs}
    assert {r.text for r in train} <= text
    for split in ("dev", "test"):
        others = corpora.rotten_tomatoes(split)
        assert not {r.movie for r in others} & {d.title for d in documents}
        assert not {r.text for r in others} & text
    plain = corpora.review_documents("train")
    assert sum(len(d.paragraphs) for d in plain) == len(train)  # each snippet once, nothing else
    assert all(isinstance(p, str) for d in plain for p in d.paragraphs)  # text only: no labels
    with pytest.raises(ValueError, match="split"):
        corpora.review_documents("all")


def test_corpus_files_that_cannot_be_read_say_which_and_why(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("Plain text, not a dump.\n", encoding="utf-8")
    with pytest.raises(ValueError, match="notes.txt is not a MediaWiki XML dump"):
        list(corpora.read_wikipedia_dump(text))
    broken = tmp_path / "broken.xml"
    broken.write_text("<mediawiki><page><title>x</title>", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.xml is not a readable MediaWiki dump"):
        list(corpora.read_wikipedia_dump(broken))
    folder = tmp_path / "texts"
    folder.mkdir()
    (folder / "latin1.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    with pytest.raises(ValueError, match="latin1.txt is not UTF-8 text"):
        corpora.read_text_files(folder)


def test_the_parsed_dump_is_kept_and_read_back_the_same(tmp_path, monkeypatch):
    xml = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
  <page><title>Tiny</title><ns>0</ns><id>1</id><revision><text>'''Tiny''' is a page. It has
two sentences.

A second paragraph, with its own words.</text></revision></page>
</mediawiki>"""
    dump = tmp_path / "dump.xml.bz2"
    dump.write_bytes(bz2.compress(xml.encode("utf-8")))
    mtime = dump.stat().st_mtime_ns
    corpora._wikipedia_cached.cache_clear()
    parsed = corpora._wikipedia_cached(str(dump), mtime)
    assert len(list(tmp_path.glob(".dump.xml.bz2.articles.*.json"))) == 1
    corpora._wikipedia_cached.cache_clear()
    monkeypatch.setattr(corpora, "read_wikipedia_dump", lambda _: pytest.fail("parsed again"))
    again = corpora._wikipedia_cached(str(dump), mtime)
    assert again == parsed and [a.paragraph_sentences for a in again] == [
        a.paragraph_sentences for a in parsed
    ]
    assert again[0].sentences == ["Tiny is a page.", "It has two sentences.",
                                  "A second paragraph, with its own words."]  # fmt: skip
    corpora._wikipedia_cached.cache_clear()
    dump.write_bytes(dump.read_bytes() + b"\n")  # another dump: parsed anew, the old file gone
    monkeypatch.undo()
    assert corpora._wikipedia_cached(str(dump), dump.stat().st_mtime_ns) == parsed
    assert len(list(tmp_path.glob(".dump.xml.bz2.articles.*.json"))) == 1
    corpora._wikipedia_cached.cache_clear()


def test_the_linked_dump_is_kept_and_read_back_the_same(tmp_path, monkeypatch):
    from minibert import wikilinks

    xml = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">
  <page><title>Tiny</title><ns>0</ns><id>1</id><revision><text>Tiny is a [[Page (x)|page]]
about [[Small things]]. It has two sentences and a [[link]].</text></revision></page>
</mediawiki>"""
    dump = tmp_path / "dump.xml"
    dump.write_text(xml, encoding="utf-8")
    wikilinks._linked_cached.cache_clear()
    parsed = wikilinks._linked_cached(str(dump), dump.stat().st_mtime_ns)
    assert [k.target for s in parsed[0].sentences for k in s.links][:2] == [
        "Page (x)",
        "Small things",
    ]
    wikilinks._linked_cached.cache_clear()
    monkeypatch.setattr(wikilinks, "read_linked_dump", lambda _: pytest.fail("parsed again"))
    assert wikilinks._linked_cached(str(dump), dump.stat().st_mtime_ns) == parsed
    assert len(list(tmp_path.glob(".dump.xml.linked.*.json"))) == 1
    wikilinks._linked_cached.cache_clear()
