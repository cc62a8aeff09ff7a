"""Recipes: text in, a saved model folder out. The CLI, the notebooks and the benchmarks call these.

    from minibert.recipes import pretrain
    result = pretrain("runs/mini", steps=2000, preset="mini")   # corpus -> vocabulary -> examples
    result.history[-1]                                          #   -> model -> loop -> folder

``pretrain`` composes the package's pieces in order: read the corpus and split it into training
and held-out documents, train a WordPiece vocabulary (or load one), cut the documents into
NSP pairs and mask them (``pretraining``), build a ``BertForPreTraining`` (``model``), run the
loop (``training``) and save the folder (``checkpoint``): config.json, model.safetensors,
vocab.txt, tokenizer files and history.json, which ``from_pretrained`` and transformers load.

Nothing is written until every argument has been checked. The output folder is one
``outputs.OutputFolder``: one run writes to it at a time; a folder that already holds a model is
refused unless ``overwrite=True``, which replaces only the files a run of ours wrote (its
manifest); while training, the run's files (its vocabulary and resumable state) live in a hidden
``.run`` subfolder, and the model is put in place atomically when training has finished, so a
failed or interrupted run never changes the model already there.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from minibert import corpora, distributed, finetuning, pretraining, tasks
from minibert.config import IGNORE_INDEX, OBJECTIVES, PRESETS, BertConfig
from minibert.guidance import NeighbourGuidance
from minibert.model import BertForPreTraining
from minibert.options import (
    COUNT,
    FRACTION,
    NON_NEGATIVE,
    OPEN_FRACTION,
    POSITIVE_INT,
    UNIT_INTERVAL,
    Check,
    changed,
    check_fields,
    inherit,
    one_of,
    option,
    saved,
)
from minibert.recipes.outputs import RUN_FOLDER, OutputFolder
from minibert.tokenization import BertTokenizer
from minibert.training import TrainOptions, evaluate, train
from minibert.utils import atomic_write, default_device, read_json_object, set_seed
from minibert.wordpiece_trainer import train_wordpiece

__all__ = [
    "RUN_FOLDER",
    "FinetuneResult",
    "PretrainResult",
    "finetune",
    "load_corpus",
    "model_folder",
    "pretrain",
]

MAX_POSITIONS = 512  # the longest max_len of a new model: BERT's position table
CORPORA = ("wikipedia", "reviews")  # the corpora the course ships; any dump or folder works too
HELDOUT_FRACTION = 0.1  # of a user corpus whose titles' hash holds out nothing


@dataclass
class PretrainResult:
    """What a pretraining run leaves: its folder, its history and the final held-out measures."""

    folder: Path
    history: list[dict[str, float]]
    heldout: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    paused: bool = False  # stopped by stop_after before the end of its schedule: resume continues
    steps: int = 0  # the schedule's length

    def report(self) -> str:
        """What ``minibert pretrain`` prints at the end: where the model is, held-out measures."""
        lines = [
            f"paused at step {len(self.history)} of {self.steps}; the run's state is in "
            f"{self.folder}/{RUN_FOLDER} (the same command with --resume continues it)"
            if self.paused
            else f"saved the model, vocabulary and history to {self.folder}"
        ]
        if self.heldout:
            lines.append("held-out: " + ", ".join(f"{k} {v:.4f}" for k, v in self.heldout.items()))
        return "\n".join([*lines, f"wall time: {self.seconds:.0f} s"])


def load_corpus(name: str | Path = "wikipedia") -> tuple[list, list]:
    """(training, held-out) documents: 'wikipedia', 'reviews', a MediaWiki dump or a .txt folder.

    'reviews' is the review text of the Rotten Tomatoes training movies, one document per movie,
    without labels (``corpora.review_documents``); no dev or test movie is in either part.
    The fixed split holds out a document when crc32(title) % 10 == 2; a corpus where that
    leaves no held-out document (or nothing else) holds out its last 10% by title instead,
    at least one document.
    """
    if str(name) == "wikipedia":
        return corpora.wikipedia_articles("train"), corpora.wikipedia_articles("heldout")
    if str(name) == "reviews":  # the training split's movies only, no labels; split by title too
        movies = corpora.review_documents("train")
        heldout = [m for m in movies if corpora.heldout_article(m.title)]
        return [m for m in movies if not corpora.heldout_article(m.title)], heldout
    source = Path(name)
    if source.is_dir():
        articles = corpora.read_text_files(source)
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


MIN_VOCAB, MIN_LEN = 100, 8  # the smallest vocabulary and example length a run accepts
VOCAB_SIZE = 8000  # the vocabulary trained when none is given
SOURCE = Check("a name or a path", lambda v: isinstance(v, str | Path) and str(v).strip() != "")


@dataclass(kw_only=True)
class PretrainOptions(TrainOptions):
    """``pretrain``'s options: the corpus, the model, the examples and masking, and the loop's."""

    lr: float = inherit(TrainOptions, "lr", 1e-3)
    eval_every: int = inherit(TrainOptions, "eval_every", 200)
    checkpoint_every: int | None = inherit(TrainOptions, "checkpoint_every", 500)
    group_by_length: bool = inherit(TrainOptions, "group_by_length", cli=False)
    preset: str | None = option(
        None,
        help="size of a new model (layers/hidden: 2/128, 4/256, 4/512, 8/512, 12/768); "
        "default: mini, or the --init model's size",
        check=one_of(*PRESETS),
    )
    corpus: str | Path = option(
        "wikipedia",
        help="'wikipedia' (the course extract), 'reviews' (the review text of the Rotten "
        "Tomatoes training movies, one document per movie, no labels; needs --objective none), "
        "a MediaWiki dump (.xml/.xml.bz2) or a folder of .txt files",
        check=SOURCE,
    )
    init: str | Path | None = option(
        None,
        help="continue pretraining from a model: 'course' (the course checkpoint) or a folder "
        "with a pretraining head; its weights, vocabulary and size are kept (no --preset, "
        "--vocab). E.g. --init course --corpus reviews --objective none",
        check=SOURCE,
    )
    vocab: str | Path | None = option(
        None,
        help="a vocab.txt or tokenizer folder; default: train one on the training articles",
        check=SOURCE,
    )
    vocab_size: int | None = option(
        None,
        help=f"size of the vocabulary to train (default: {VOCAB_SIZE}; not with --vocab or "
        "--init, whose vocabulary is used as it is)",
        check=Check(f"an int >= {MIN_VOCAB}", lambda v: POSITIVE_INT.test(v) and v >= MIN_VOCAB),
    )
    max_len: int = option(
        128,
        help="tokens per example, [CLS] and [SEP] included",
        check=Check(f"an int >= {MIN_LEN}", lambda v: POSITIVE_INT.test(v) and v >= MIN_LEN),
    )
    dropout: float = option(
        0.1,
        help="dropout while pretraining (hidden and attention); 0 is about 1.7x faster on a CPU. "
        "The saved config.json keeps BERT's 0.1 for fine-tuning",
        check=FRACTION,
    )
    dupe_factor: int = option(
        5, help="times each document is cut into examples, differently", check=POSITIVE_INT
    )
    max_predictions: int | None = option(
        None, help="cap on masked tokens per example (default: 15% of tokens)", check=POSITIVE_INT
    )
    mask_rate: float = option(
        0.15,
        help="share of tokens chosen for MLM in training examples (held-out ones: always 15%)",
        check=OPEN_FRACTION,
    )
    whole_word: bool = option(False, help="whole-word masking")
    static_masking: bool = option(False, help="mask each example once, not anew every epoch")
    objective: str = option(
        "nsp",
        help="the sentence-level task beside MLM: next sentence prediction (BERT), sentence "
        "order prediction (ALBERT: A and B in order or swapped) or none (RoBERTa: MLM only)",
        check=one_of(*OBJECTIVES),
    )
    neighbour_steps: int = option(
        0,
        help="guide layer 0's first two heads to the previous/next token for this many steps "
        "(a score bonus and an auxiliary loss, annealed to 0; the saved model is plain BERT). "
        "Escapes the MLM plateau where plain BERT says 'the' at every [MASK]",
        check=COUNT,
    )
    neighbour_bias: float = option(
        8.0, help="the guided heads' score bonus for their neighbour at step 1", check=NON_NEGATIVE
    )
    neighbour_aux: float = option(
        1.0,
        help="weight at step 1 of the loss pulling the guided heads' own attention to the "
        "neighbour",
        check=NON_NEGATIVE,
    )
    resume: bool = option(False, help="continue the interrupted run in --out", save=False)
    overwrite: bool = option(
        False,
        help="replace the model a run of ours wrote in --out (the files its manifest lists; any "
        "other file is refused, never deleted) once the new run has finished",
        save=False,
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.neighbour_steps <= self.steps:
            raise ValueError(f"neighbour_steps must be in [0, steps], got {self.neighbour_steps}")
        for name in ("preset", "vocab", "vocab_size"):
            if self.init is not None and getattr(self, name) is not None:
                raise ValueError(
                    f"init and {name} conflict: a run started from {self.init} keeps that "
                    f"model's size and vocabulary; leave out {name}"
                )
        if self.vocab is not None and self.vocab_size is not None:
            raise ValueError(
                f"vocab and vocab_size conflict: the vocabulary in {self.vocab} is used as it is "
                "(vocab_size is the size of one trained here); leave out vocab_size"
            )
        if self.vocab is None and self.init is None and self.vocab_size is None:
            self.vocab_size = VOCAB_SIZE
        if self.init is None and self.max_len > MAX_POSITIONS:
            raise ValueError(
                f"max_len {self.max_len} is more than BERT's {MAX_POSITIONS} positions: a new "
                "model's position table and attention grow with it (memory by its square)"
            )
        if str(self.corpus) == "reviews" and self.objective != "none":
            raise ValueError(
                "corpus 'reviews' holds snippets by different critics, one after another: there "
                "is no next sentence or sentence order to learn; use objective 'none' (MLM only)"
            )


def _check_sources(o: PretrainOptions) -> None:
    """The files a pretraining run reads (corpus, vocabulary, model to continue), checked first."""
    heads = PRESETS[o.preset or "mini"][2]
    if o.init is not None:
        init = BertConfig.from_hf_config(model_folder(o.init) / "config.json")
        heads = init.num_heads
        if o.max_len > init.max_position_embeddings:
            raise ValueError(
                f"max_len {o.max_len} exceeds the {init.max_position_embeddings} positions "
                f"of the model in {o.init}"
            )
    if o.neighbour_steps and heads < 2:
        raise ValueError("neighbour guidance needs a model with at least 2 heads")
    if o.vocab is not None and not Path(o.vocab).exists():
        raise FileNotFoundError(f"vocab {o.vocab}: no such file or folder")
    if str(o.corpus) not in CORPORA and not Path(o.corpus).exists():
        raise FileNotFoundError(
            f"corpus {o.corpus}: not {' or '.join(CORPORA)}, a dump file or a folder"
        )


def _tokenizer(
    vocab: str | Path | None, vocab_size: int | None, train_articles: Sequence, run: Path | None
):
    """The run's tokenizer: the one saved in the run it resumes, a given vocabulary, or a new one
    trained on the training articles."""
    if run is not None:
        return BertTokenizer.from_pretrained(run)
    if vocab is not None:
        path = Path(vocab)
        return (
            BertTokenizer.from_pretrained(path)
            if path.is_dir()
            else BertTokenizer.from_vocab_file(path)
        )
    _say(f"training a WordPiece vocabulary of {vocab_size} on the training articles")
    return BertTokenizer(
        train_wordpiece([p for a in train_articles for p in a.paragraphs], vocab_size)
    )


def _options(cls: type, options: Any, changes: dict[str, Any]) -> Any:
    """The recipe's options: an options object, with keyword changes applied (or made of them)."""
    try:
        if options is None:
            return cls(**changes)
        return dataclasses.replace(options, **changes) if changes else options
    except TypeError as exc:  # a misspelt or missing option: name the ones there are
        known = ", ".join(f.name for f in dataclasses.fields(cls))
        raise TypeError(f"{cls.__name__}: {exc}; the options are {known}") from None


def _say(*text: Any) -> None:
    """print, in the one process that reports (all of them but one are quiet under torchrun)."""
    if distributed.is_main():
        print(*text)


def _start(o: TrainOptions | FinetuneOptions) -> float:
    """Seed everything, set torch's threads and join torchrun's processes if started by it, as
    both recipes begin; the start time."""
    set_seed(o.seed)
    if o.threads:
        torch.set_num_threads(o.threads)
    distributed.start(torch.device(o.device or default_device()))
    return time.perf_counter()


def pretrain(
    out: str | Path, options: PretrainOptions | None = None, *, progress: bool = True, **changes
) -> PretrainResult:
    """Pretrain a BERT with MLM (+ NSP, SOP or nothing: objective) and save it in `out`.

    options is a PretrainOptions; keyword changes set or override its fields:
    ``pretrain("runs/mini", steps=2000, preset="mini")``. preset is the size of a new model
    ('mini' when neither it nor init is given). init ('course' or a model folder) continues
    pretraining from that model instead: its weights, vocabulary and size, with its heads
    (continued pretraining, e.g. on the review text: corpus='reviews').

    dropout applies while pretraining only: the saved config.json keeps the preset's 0.1 for
    fine-tuning. mask_rate applies to the training examples; held-out examples are always masked
    at BERT's 15%, so runs compare. neighbour_steps > 0 guides layer 0's first two heads to the
    previous and next token for that many steps (``guidance.NeighbourGuidance``: a score bonus
    neighbour_bias and an auxiliary loss of weight neighbour_aux, both annealed to zero); the
    saved model is a standard BERT. Every option is described in ``minibert pretrain --help``.
    """
    o = _options(PretrainOptions, options, changes)
    _check_sources(o)
    if o.init is None and o.preset is None:  # a new model: the recipe names its size
        o = dataclasses.replace(o, preset="mini")
    folder = OutputFolder(out, overwrite=o.overwrite, resume=o.resume, writer=distributed.is_main())
    distributed.check_split(o.batch_size)
    recipe = saved(o)
    if o.resume:
        before = read_json_object(folder.run / "recipe.json")
        if differ := changed(before, o):
            raise ValueError(
                f"resume with options that differ from the run in {folder.path}: "
                f"{', '.join(differ)}; resume with the same options"
            )
    started = _start(o)
    with folder:
        train_articles, heldout_articles = _pretraining_corpus(o)
        source = None if o.init is None else model_folder(o.init)
        tok = _tokenizer(source or o.vocab, o.vocab_size, train_articles,
                         folder.run if o.resume else None)  # fmt: skip
        train_data, eval_data = _pretraining_data(o, tok, train_articles, heldout_articles)
        if len(train_data) < o.batch_size:  # before the run writes anything
            raise ValueError(
                f"batch_size {o.batch_size} is more than the {len(train_data):,} training "
                "examples; use a smaller batch (or more text)"
            )
        config, model = _pretraining_model(o, source, len(tok.vocab))
        if distributed.is_main():  # under torchrun the other processes write nothing
            folder.run.mkdir(exist_ok=True)
            tok.save_pretrained(folder.run)
            atomic_write(folder.run / "recipe.json", json.dumps(recipe, indent=1) + "\n")
        distributed.barrier()
        history = train(
            model,
            train_data,
            eval_data,
            o,
            collate_fn=lambda batch: pretraining.collate(batch, tok.pad_token_id),
            metrics_fn=pretraining.metrics_for(tok),
            out_dir=folder.run,
            resume=o.resume,
            progress=progress,
            forward_kwargs={"sparse_mlm": True},  # score only masked positions: same loss, faster
            device=o.device or str(default_device()),
        )
        heldout = {k[len("eval_") :]: v for k, v in history[-1].items() if k.startswith("eval_")}
        paused = len(history) < o.steps  # by stop_after: the state stays in the run folder
        if paused or not distributed.is_main():  # or a process that writes nothing (torchrun)
            seconds = time.perf_counter() - started
            return PretrainResult(folder.path, history, heldout, seconds, paused, o.steps)
        if isinstance(model, NeighbourGuidance):
            model = model.finish()  # standard attention again: a plain BERT
        model.config = config  # saved with the preset's dropout, for fine-tuning
        files = {"history.json": history, "recipe.json": recipe}
        folder.put_in_place(_model_files(model, tok, files), by="minibert pretrain")
    return PretrainResult(
        folder.path, history, heldout, time.perf_counter() - started, steps=o.steps
    )


def _pretraining_corpus(o: PretrainOptions) -> tuple[list, list]:
    """(training, held-out) documents of the run's corpus, refused if NSP cannot use them."""
    train_articles, heldout_articles = load_corpus(o.corpus)
    if o.objective == "nsp":  # its negatives come from another document, in each part
        for part, docs in (("training", train_articles), ("held-out", heldout_articles)):
            if len(docs) < 2:
                raise ValueError(
                    f"corpus {o.corpus}: {len(docs)} {part} document(s), and next sentence "
                    "prediction needs at least two in each part (more documents, or "
                    "--objective sop or none)"
                )
    _say(f"corpus: {len(train_articles)} training and {len(heldout_articles)} held-out documents")
    return train_articles, heldout_articles


def _pretraining_data(o: PretrainOptions, tok: BertTokenizer, train_articles, heldout_articles):
    """(training, held-out) masked examples: masked anew each epoch unless static_masking."""
    masking = dict(whole_word=o.whole_word, max_predictions=o.max_predictions)
    train_examples = pretraining.create_examples(
        pretraining.tokenize_documents(train_articles, tok),
        o.max_len,
        objective=o.objective,
        dupe_factor=o.dupe_factor,
        seed=o.seed,
    )
    train_data = pretraining.PretrainingDataset.from_tokenizer(
        train_examples,
        tok,
        dynamic=not o.static_masking,
        seed=o.seed,
        mlm_probability=o.mask_rate,
        **masking,
    )
    eval_data = pretraining.heldout_dataset(
        heldout_articles, tok, o.max_len, objective=o.objective, seed=o.seed + 1, **masking
    )
    _say(
        f"examples: {len(train_data):,} training, {len(eval_data):,} held-out (max_len {o.max_len})"
    )
    return train_data, eval_data


def _pretraining_model(o: PretrainOptions, source: Path | None, vocab_size: int):
    """(the config to save, the model to train): new of the preset, or the source's, guided."""
    dropout = {"hidden_dropout": o.dropout, "attention_dropout": o.dropout}
    if source is None:
        config = BertConfig.preset(
            o.preset, vocab_size=vocab_size, max_position_embeddings=max(o.max_len, 128)
        )
        model = BertForPreTraining(config.replace(**dropout))
    else:  # continued pretraining: the folder's weights and heads, this run's dropout
        config = BertConfig.from_hf_config(source / "config.json")
        model = BertForPreTraining.from_pretrained(source, **dropout)
    if o.neighbour_steps:
        model = NeighbourGuidance(
            model, o.neighbour_bias, o.neighbour_aux, o.neighbour_steps * o.grad_accum_steps
        )
    return config, model


def _model_files(model, tok: BertTokenizer, files: dict[str, Any]) -> Callable[[Path], None]:
    """What writes a finished model's folder: weights and config, tokenizer, the JSON files."""

    def write(folder: Path) -> None:
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
        for name, content in files.items():
            atomic_write(folder / name, json.dumps(content, indent=1) + "\n")

    return write


# --- fine-tuning -------------------------------------------------------------------------------

MAX_EVALUATIONS = 10  # dev evaluations per fine-tuning run, at most
SMALL_MODEL_LR = 1e-3  # finetune's default for the course's small models (default_lr)
LARGE_MODEL_LR = 5e-5  # and for MiniLM-sized and larger ones


@dataclass
class FinetuneResult:
    """What a fine-tuning run leaves: its folder, history and the best dev and the test measures."""

    folder: Path
    history: list[dict[str, float]]
    dev: dict[str, Any] = field(default_factory=dict)
    test: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    selection: dict[str, Any] = field(default_factory=dict)  # measure, step, value, ties

    def report(self) -> str:
        """What ``minibert finetune`` prints at the end: the dev measure per evaluation, the
        evaluation kept, and the test scores by the task's names."""
        chosen = self.selection
        lines = [f"step {h['step']:>6,}: dev {chosen['measure']} {v:.4f}"
                 for h, v in zip(self.evaluations, chosen["values"])]  # fmt: skip
        ties = f" (tied with step {', '.join(map(str, chosen['ties']))}: the earliest kept)"
        lines.append(
            f"kept step {chosen['step']:,}: dev {chosen['measure']} {chosen['value']:.4f}"
            + (ties if chosen["ties"] else "")
        )
        t = self.test
        lines.append(
            f"test ({t['examples']:,} {t['unit']}s): accuracy {t['accuracy']:.4f}, balanced "
            f"accuracy {t['balanced_accuracy']:.4f}; {t['positive']!r}: precision "
            f"{t['precision']:.4f}, recall {t['recall']:.4f}, F1 {t['f1']:.4f}"
        )
        lines.append(f"saved the fine-tuned model, tokenizer and results.json to {self.folder}")
        return "\n".join([*lines, f"wall time: {self.seconds:.0f} s"])

    @property
    def evaluations(self) -> list[dict[str, float]]:
        """The history's records that hold a dev evaluation."""
        return [h for h in self.history if any(k.startswith("eval_") for k in h)]


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


def default_lr(config: BertConfig) -> float:
    """finetune's learning rate when none is given: measured per model size on dev.

    For the course's small models (hidden size below 384), 1e-3: the course checkpoint and its
    continuation on review text were best on dev there with all the labelled reviews (a sweep of
    1e-4 to 3e-3, one seed: benchmarks/pretraining_candidates.py); the same size from random
    weights was best at 1e-3 with 1,024 examples and at 3e-4 with all. Larger pretrained models
    (MiniLM, BERT-base) take BERT's small steps, 5e-5.
    """
    return SMALL_MODEL_LR if config.hidden_size < 384 else LARGE_MODEL_LR


@dataclass(kw_only=True)
class FinetuneOptions:
    """``finetune``'s options: the model, the task, the schedule and the loop's shared ones."""

    model: str | Path = option(
        "course",
        help="'course' (the course checkpoint, Wikipedia), 'course-reviews' (the course "
        "checkpoint continued on the training movies' review text), 'minilm' (the pretrained "
        "MiniLM) or a model folder",
        check=SOURCE,
    )
    scratch: bool = option(
        False,
        help="start from random weights of the same size and vocabulary (what pretraining buys)",
    )
    task: str = option(
        "rotten-tomatoes",
        help="; ".join(f"{t.name}: {t.description}" for t in tasks.TASKS.values()),
        check=tasks.check_name,
    )
    epochs: int = option(3, help="passes over the training examples", check=POSITIVE_INT)
    max_steps: int | None = option(
        None,
        help="stop after this many optimizer steps instead (default: --epochs)",
        check=POSITIVE_INT,
    )
    lr: float | None = inherit(
        TrainOptions,
        "lr",
        None,
        help="peak learning rate of AdamW (default: measured per model size: 1e-3 for the "
        "course's small models, 5e-5 for MiniLM and larger)",
    )
    batch_size: int = inherit(TrainOptions, "batch_size")
    max_length: int = option(
        128, help="tokens per example, [CLS]/[SEP] included", check=POSITIVE_INT
    )
    train_examples: int | None = option(
        None,
        help="train on a random subset of this many examples (default: all)",
        check=POSITIVE_INT,
    )
    freeze_encoder: bool = option(
        False, help="train only the classifier on frozen features (a linear probe)"
    )
    reinit_layers: int = option(
        0,
        help="re-initialise the pooler and the top N encoder layers first (Zhang et al., 2021)",
        check=COUNT,
    )
    dropout: float | None = option(
        None,
        help="dropout while fine-tuning (hidden and attention; default: the model's own, BERT's "
        "0.1); with 0, a run on N processes (torchrun) equals the run on one",
        check=FRACTION,
    )
    warmup_fraction: float = option(
        0.1, help="share of the steps spent warming the learning rate up", check=UNIT_INTERVAL
    )
    weight_decay: float = inherit(TrainOptions, "weight_decay")
    evaluations: int = option(
        MAX_EVALUATIONS,
        help="dev evaluations at most (after each epoch, or every few epochs on a small subset)",
        check=POSITIVE_INT,
    )
    overwrite: bool = inherit(PretrainOptions, "overwrite")
    seed: int = inherit(TrainOptions, "seed")
    device: str | None = inherit(TrainOptions, "device")
    threads: int | None = inherit(TrainOptions, "threads")
    precision: str = inherit(TrainOptions, "precision")

    def __post_init__(self) -> None:
        check_fields(self)


def finetune(
    out: str | Path, options: FinetuneOptions | None = None, *, progress: bool = True, **changes
) -> FinetuneResult:
    """Fine-tune a pretrained BERT folder (or a random one of its size) on a task; save it in out.

    options is a FinetuneOptions; keyword changes set or override its fields:
    ``finetune("runs/rt", model="course", train_examples=1024)``. Evaluates on dev after every
    epoch (at most `evaluations` times: a small subset trained for many epochs is evaluated every
    few epochs), keeps the best dev weights, then measures test and saves a Hugging Face folder
    (config with the label names, weights, tokenizer, results.json). Training batches hold texts
    of similar length (group_by_length), which halves the padding. freeze_encoder trains only
    the classifier (a linear probe); reinit_layers re-initialises the pooler and the top N
    encoder layers before training (Zhang et al., 2021). lr=None takes ``default_lr`` of the
    model's size (1e-3 for the course's small models, 5e-5 for MiniLM).
    """
    o = _options(FinetuneOptions, options, changes)
    spec = tasks.get(o.task)
    folder = OutputFolder(out, overwrite=o.overwrite, writer=distributed.is_main())
    source = model_folder(o.model)
    distributed.check_split(o.batch_size)
    with folder:
        return _finetune(o, spec, source, folder, progress)


def _finetune(o: FinetuneOptions, spec: tasks.Task, source: Path, folder: OutputFolder,
              progress: bool) -> FinetuneResult:  # fmt: skip
    """finetune's work, inside its locked output folder."""
    started = _start(o)
    tok = BertTokenizer.from_pretrained(source)
    config = BertConfig.from_hf_config(source).replace(
        num_labels=len(spec.labels), label_names=spec.labels
    )
    lr = default_lr(config) if o.lr is None else o.lr
    if not o.reinit_layers <= config.num_layers:
        raise ValueError(
            f"reinit_layers must be in [0, {config.num_layers}], got {o.reinit_layers}"
        )
    if o.max_length > config.max_position_embeddings:
        raise ValueError(
            f"max_length {o.max_length} exceeds the model's {config.max_position_embeddings} "
            "positions"
        )
    train_data, dev_data, test_data = spec.datasets(tok, o.max_length, o.train_examples, o.seed)
    if len(train_data) < o.batch_size:
        raise ValueError(
            f"{len(train_data)} training examples is fewer than one batch of {o.batch_size}"
        )
    net = _classifier(o, spec, source, config)
    steps_per_epoch = len(train_data) // o.batch_size
    steps = o.max_steps or o.epochs * steps_per_epoch
    best: dict[str, Any] = {"value": None}
    measure = spec.selection

    def keep_best(history: list[dict]) -> None:  # by the task's dev measure; a tie keeps the first
        value = measure.of(history[-1])
        if measure.better(value, best["value"]):
            best.update(
                value=value,
                step=history[-1]["step"],
                state={k: v.detach().clone() for k, v in net.state_dict().items()},
            )

    collate = lambda batch: finetuning.collate(batch, tok.pad_token_id)  # noqa: E731
    loop = TrainOptions(
        precision=o.precision,
        steps=steps,
        batch_size=o.batch_size,
        lr=lr,
        warmup_steps=round(o.warmup_fraction * steps),
        weight_decay=o.weight_decay,
        eval_every=min(max(steps_per_epoch, math.ceil(steps / o.evaluations)), steps),
        group_by_length=True,
        seed=o.seed,
        device=o.device or str(default_device()),
    )
    history = train(
        net,
        train_data,
        by_length(dev_data),  # the same measures; batches of similar length pad less
        loop,
        collate_fn=collate,
        metrics_fn=spec.metrics,
        progress=progress,
        on_eval=keep_best,
    )
    if not distributed.is_main():  # only process 0 evaluated and kept the best weights
        return FinetuneResult(folder.path, history, {}, {}, time.perf_counter() - started)
    net.load_state_dict(best["state"])
    dev = _measure(net, dev_data, collate, spec)
    test = _measure(net, test_data, collate, spec)
    values = [measure.of(h) for h in history if any(k.startswith("eval_") for k in h)]
    steps_seen = [h["step"] for h in history if any(k.startswith("eval_") for k in h)]
    selection = {
        "measure": measure.name, "higher_is_better": measure.higher_is_better,
        "step": best["step"], "value": best["value"], "values": values,
        "ties": [t for t, v in zip(steps_seen, values) if v == best["value"] and t != best["step"]],
    }  # fmt: skip
    results = {
        "task": o.task,
        "model": str(o.model),
        "scratch": o.scratch,
        "selection": selection,
        "dev": dev,
        "test": test,
        "options": saved(o) | {"steps": steps, "lr": lr},
        "train_size": len(train_data),
        "seconds": round(time.perf_counter() - started, 1),
    }
    files = {"history.json": history, "results.json": results}
    folder.put_in_place(_model_files(net, tok, files), by="minibert finetune")
    seconds = time.perf_counter() - started
    return FinetuneResult(folder.path, history, dev, test, seconds, selection)


def _classifier(o: FinetuneOptions, spec: tasks.Task, source: Path, config: BertConfig):
    """The task's model: the folder's weights with a new head (or random weights for scratch),
    its top layers re-initialised and its encoder frozen as the options say."""
    drop = (
        {} if o.dropout is None else {"hidden_dropout": o.dropout, "attention_dropout": o.dropout}
    )
    if o.scratch:
        net = spec.model_class(config.replace(**drop))  # the same size, random weights
    else:  # a new classifier of the task's size, unless the folder holds one already
        net = spec.model_class.from_pretrained(
            source, num_labels=len(spec.labels), label_names=spec.labels, **drop
        )
    if o.reinit_layers:
        parts = [*net.bert.encoder.layers[-o.reinit_layers :]]
        if getattr(net.bert, "pooler", None) is not None:
            parts.append(net.bert.pooler)
        for part in parts:
            net.init_weights(part)
    if o.freeze_encoder:
        for p in net.bert.parameters():
            p.requires_grad_(False)
    return net


def _measure(net, data, collate, spec: tasks.Task) -> dict[str, Any]:
    """The task's scores on a dataset (its unit counted) and each text's prediction."""
    order = sorted(range(len(data)), key=lambda i: -len(data[i]["input_ids"]))  # less padding
    labels, predictions, per_text = [], [], []

    def collect(batch: dict, out: Any) -> dict:
        guess = out.logits.argmax(-1)
        keep = batch["labels"] != IGNORE_INDEX
        labels.extend(batch["labels"][keep].tolist())
        predictions.extend(guess[keep].tolist())
        if guess.dim() == 1:  # a label per text
            per_text.extend(guess.tolist())
        return {}

    evaluate(net, [data[i] for i in order], 64, collate, metrics_fn=collect)
    measured = {**spec.scores(labels, predictions), "examples": len(labels)}
    if per_text:  # back in the data's order
        measured["predictions"] = [guess for _, guess in sorted(zip(order, per_text))]
    return measured


def by_length(data: Sequence) -> list:
    """The examples of a dataset, longest first: evaluation batches of similar length pad less."""
    return sorted((data[i] for i in range(len(data))), key=lambda item: -len(item["input_ids"]))
