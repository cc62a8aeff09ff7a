"""What both recipes share: their sources (the corpus, a model folder), making their options,
starting a run, refusing a resume with other options, and writing a finished model."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from minibert import corpora, distributed, english_corpus
from minibert.options import (
    Check,
    build,
    changed,
    replace,
)
from minibert.recipes.outputs import OutputFolder
from minibert.tokenization import BertTokenizer
from minibert.training import TrainOptions
from minibert.utils import atomic_write, default_device, read_json_object, set_seed

__all__ = ["CORPORA", "SOURCE", "load_corpus", "model_folder"]

# the corpora the course ships (english-modern: english without its archaic Gutenberg texts); any
# dump or folder works too
CORPORA = ("wikipedia", "english", "english-modern", "reviews")
HELDOUT_FRACTION = 0.1  # of a user corpus whose titles' hash holds out nothing
SOURCE = Check("a name or a path", lambda v: isinstance(v, str | Path) and str(v).strip() != "")


def load_corpus(name: str | Path = "wikipedia") -> tuple[list, list]:
    """(training, held-out) documents: 'wikipedia', 'reviews', a MediaWiki dump, a .txt folder or
    a .json file of articles (``corpora.write_articles``: the course extract, for a machine
    without gensim; read as it was written, in its order, so it splits as 'wikipedia' does).

    'reviews' is the review text of the Rotten Tomatoes training movies, one document per movie,
    without labels (``corpora.review_documents``); no dev or test movie is in either part.
    The fixed split holds out a document when crc32(title) % 10 == 2; a corpus where that
    leaves no held-out document (or nothing else) holds out its last 10% by title instead,
    at least one document.
    """
    if str(name) == "wikipedia":
        return corpora.wikipedia_articles("train"), corpora.wikipedia_articles("heldout")
    if str(name) in ("english", "english-modern"):  # english_corpus's few million words; held
        # out: the extract's held-out articles (so its measures compare with a 'wikipedia' run's)
        sources = english_corpus.DEFAULT_SOURCES
        if str(name) == "english-modern":
            sources = tuple(s for s in sources if s != "gutenberg-archaic")
        return english_corpus.documents("train", sources), corpora.wikipedia_articles("heldout")
    if str(name) == "reviews":  # the training split's movies only, no labels; split by title too
        movies = corpora.review_documents("train")
        heldout = [m for m in movies if corpora.heldout_article(m.title)]
        return [m for m in movies if not corpora.heldout_article(m.title)], heldout
    source = Path(name)
    if source.is_dir():
        articles = corpora.read_text_files(source)
    elif source.is_file() and source.suffix == ".json":
        articles = corpora.read_articles(source)
    elif source.is_file():
        articles = list(corpora.read_wikipedia_dump(source))
    else:
        raise FileNotFoundError(
            f"corpus {name}: not {' or '.join(CORPORA)}, a dump file or a folder"
        )
    articles = [a for a in articles if a.sentences]
    if len(articles) < 2:
        raise ValueError(
            f"corpus {name} has {len(articles)} non-empty document(s); pretraining needs at "
            "least two (one to train on, one held out)"
        )
    heldout = [a for a in articles if corpora.heldout_article(a.title)]
    if not heldout or len(heldout) == len(articles):
        ordered = sorted(articles, key=lambda a: a.title)
        n = max(1, round(HELDOUT_FRACTION * len(ordered)))
        heldout = ordered[-n:]
    held = {id(a) for a in heldout}
    return [a for a in articles if id(a) not in held], heldout


def model_folder(name: str | Path) -> Path:
    """A course checkpoint by name ('course'), 'minilm' or a model folder."""
    from minibert import assets

    if str(name) in assets.COURSE_CHECKPOINTS:
        return assets.course_checkpoint(str(name))
    if str(name) == "minilm":
        return assets.path("minilm")
    folder = Path(name)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"model {name}: not {', '.join(map(repr, assets.COURSE_CHECKPOINTS))}, 'minilm' or "
            "a folder with a config.json"
        )
    return folder


def options_of(cls: type, options: Any, changes: dict[str, Any]) -> Any:
    """The recipe's options: an options object, with keyword changes applied (the loop's options
    included), or made of them. A misspelt option is a TypeError listing the options."""
    if options is None:
        return build(cls, **changes)
    return replace(options, **changes) if changes else options


def say(*text: Any) -> None:
    """print, in the one process that reports (all of them but one are quiet under torchrun)."""
    if distributed.is_main():
        print(*text)


def start(o: TrainOptions) -> float:
    """Seed everything and join torchrun's processes if started by it, as both recipes begin; the
    start time. (The loop sets torch's threads for the run and puts them back after.)"""
    set_seed(o.seed)
    distributed.start(torch.device(o.device or default_device()))
    return time.perf_counter()


def check_resume(folder: OutputFolder, o: Any) -> None:
    """Refuse to resume a run with options that differ from the ones it started with."""
    before = read_json_object(folder.run / "recipe.json")
    if differ := changed(before, o):
        raise ValueError(
            f"resume with options that differ from the run in {folder.path}: "
            f"{', '.join(differ)}; resume with the same options"
        )


def model_files(model, tok: BertTokenizer, files: dict[str, Any]) -> Callable[[Path], None]:
    """What writes a finished model's folder: weights and config, tokenizer, the JSON files."""

    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        for name, content in files.items():
            atomic_write(folder / name, json.dumps(content, indent=1) + "\n")

    return write
