"""Recipes: text in, a saved model folder out. The CLI, the notebooks and the benchmarks call these.

    from minibert.recipes import pretrain
    result = pretrain("runs/mini", steps=2000, preset="mini")   # corpus -> vocabulary -> examples
    result.history[-1]                                          #   -> model -> loop -> folder

``pretrain`` composes the package's pieces in order: read the corpus and split it into training
and held-out documents, train a WordPiece vocabulary (or load one), cut the documents into
NSP pairs and mask them (``pretraining``), build a ``BertForPreTraining`` (``model``), run the
loop (``training``) and save the folder (``checkpoint``): config.json, model.safetensors,
vocab.txt, tokenizer files and history.json, which ``from_pretrained`` and transformers load.

Nothing is written until every argument has been checked. A folder that already holds another
model is refused unless ``overwrite=True``; while training, the run's files (its vocabulary and
resumable state) live in a hidden ``.run`` subfolder, and the model's files are put in place only
when training has finished, so a failed or interrupted run never changes the model already there.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from minibert import corpora, finetuning, pretraining, tasks
from minibert.config import IGNORE_INDEX, OBJECTIVES, PRESETS, BertConfig
from minibert.curriculum import NeighbourCurriculum
from minibert.model import BertForPreTraining
from minibert.tokenization import BertTokenizer
from minibert.training import train
from minibert.utils import atomic_write, default_device, set_seed
from minibert.wordpiece_trainer import train_wordpiece

__all__ = [
    "FinetuneResult",
    "PretrainResult",
    "check_output_folder",
    "finetune",
    "load_corpus",
    "model_folder",
    "pretrain",
]

MAX_POSITIONS = 512  # the longest max_len of a new model: BERT's position table
RUN_FOLDER = ".run"  # inside the output folder: the run's vocabulary and resumable state
MODEL_FILES = ("config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json")
# what a model folder written here (or by transformers) may hold: --overwrite replaces these only
MODEL_OUTPUTS = frozenset(
    {*MODEL_FILES, "special_tokens_map.json", "tokenizer.json", "history.json", "recipe.json",
     "results.json", "card.json", "curves.png", "README.md", "pytorch_model.bin", RUN_FOLDER}
)  # fmt: skip
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


def check_output_folder(out: Path, overwrite: bool, resume: bool) -> None:
    """Refuse an output folder that holds another model (unless overwrite) or no run to resume."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder")
    run = out / RUN_FOLDER
    if resume:
        if not (run / "training_state.pt").is_file():
            found = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
            raise ValueError(
                f"--resume: {out} holds no interrupted run to continue (no {RUN_FOLDER}/"
                f"training_state.pt; the folder holds: {', '.join(found) or 'nothing'})"
            )
        return
    holds_model = out.is_dir() and any((out / f).exists() for f in (*MODEL_FILES, RUN_FOLDER))
    resumable = (run / "training_state.pt").is_file()
    if holds_model and not overwrite and run.is_dir() and not resumable:
        raise ValueError(
            f"--out {out} holds a run that stopped before its first checkpoint, so there is "
            "nothing to resume; pass --overwrite to start again, or choose another folder"
        )
    if holds_model and not overwrite:
        raise ValueError(
            f"--out {out} already holds a model (or a run); pass --overwrite to replace it, "
            "--resume to continue its interrupted run, or choose another folder"
        )
    check_replaceable(out, overwrite)


def check_replaceable(out: Path, overwrite: bool) -> None:
    """Refuse, before any work, an output folder that cannot be written or that --overwrite would
    empty of things that are not a model's (a project's src/, .git/, notes)."""
    existing = next(p for p in (out, *out.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: cannot write there ({existing} is not writable)")
    if overwrite and out.is_dir():
        foreign = sorted(p.name for p in out.iterdir() if p.name not in MODEL_OUTPUTS)
        if foreign:
            shown = ", ".join(foreign[:6]) + (
                f" and {len(foreign) - 6} more" if len(foreign) > 6 else ""
            )
            raise ValueError(
                f"--out {out} holds things that are not a model's ({shown}); --overwrite replaces "
                "a model's files only: choose another folder"
            )


def _check_arguments(args: dict[str, Any]) -> None:
    """Every argument of pretrain, checked before anything is read or written."""
    if args["objective"] not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {args['objective']!r}")
    if args["preset"] is not None and args["preset"] not in PRESETS:
        raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {args['preset']!r}")
    heads = PRESETS[args["preset"] or "mini"][2]
    if args["init"] is not None:
        for name in ("preset", "vocab"):
            if args[name] is not None:
                raise ValueError(
                    f"init and {name} conflict: a run started from {args['init']} keeps that "
                    f"model's size and vocabulary; leave out {name}"
                )
        init = BertConfig.from_hf_config(model_folder(args["init"]) / "config.json")
        heads = init.num_heads
        if args["max_len"] > init.max_position_embeddings:
            raise ValueError(
                f"max_len {args['max_len']} exceeds the {init.max_position_embeddings} positions "
                f"of the model in {args['init']}"
            )
    positive = ("steps", "batch_size", "grad_accum_steps", "eval_every", "dupe_factor")
    for name in (*positive, "vocab_size", "max_len", "checkpoint_every", "max_predictions"):
        value = args[name]
        if value is None and name not in positive:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if args["max_len"] < 8:
        raise ValueError(f"max_len must be at least 8 tokens, got {args['max_len']}")
    if args["init"] is None and args["max_len"] > MAX_POSITIONS:
        raise ValueError(
            f"max_len {args['max_len']} is more than BERT's {MAX_POSITIONS} positions: a new "
            "model's position table and attention grow with it (memory by its square)"
        )
    if args["vocab_size"] < 100:
        raise ValueError(f"vocab_size must be at least 100, got {args['vocab_size']}")
    if not (isinstance(args["lr"], int | float) and 0 < args["lr"] < math.inf):
        raise ValueError(f"lr must be a positive finite number, got {args['lr']!r}")
    if not 0 <= args["weight_decay"] < math.inf:
        raise ValueError(f"weight_decay must be >= 0, got {args['weight_decay']!r}")
    if not 0 < args["mask_rate"] < 1:
        raise ValueError(f"mask_rate must be in (0, 1), got {args['mask_rate']!r}")
    if isinstance(args["neighbour_steps"], bool) or not isinstance(args["neighbour_steps"], int):
        raise ValueError(f"neighbour_steps must be an int, got {args['neighbour_steps']!r}")
    if not 0 <= args["neighbour_steps"] <= args["steps"]:
        raise ValueError(f"neighbour_steps must be in [0, steps], got {args['neighbour_steps']}")
    for name in ("neighbour_bias", "neighbour_aux"):
        if not 0 <= args[name] < math.inf:
            raise ValueError(f"{name} must be a finite number >= 0, got {args[name]!r}")
    if args["neighbour_steps"] and heads < 2:
        raise ValueError("neighbour guidance needs a model with at least 2 heads")
    if not 0 <= args["dropout"] < 1:
        raise ValueError(f"dropout must be in [0, 1), got {args['dropout']!r}")
    if args["warmup_steps"] is not None and not 0 <= args["warmup_steps"] <= args["steps"]:
        raise ValueError(f"warmup_steps must be in [0, steps], got {args['warmup_steps']!r}")
    if args["stop_after"] is not None and not 1 <= args["stop_after"] <= args["steps"]:
        raise ValueError(f"stop_after must be in [1, steps], got {args['stop_after']!r}")
    if args["threads"] is not None and args["threads"] < 1:
        raise ValueError(f"threads must be a positive int, got {args['threads']!r}")
    device = args["device"]
    if device is not None:
        try:
            device = torch.device(device)
        except RuntimeError as exc:
            raise ValueError(f"device {args['device']!r} is not a device name: {exc}") from None
        if device.type == "cuda" and not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for, but this machine has no CUDA GPU")
        mps = getattr(torch.backends, "mps", None)
        if device.type == "mps" and not (mps is not None and mps.is_available()):
            raise ValueError("device 'mps' was asked for, but this machine has no Apple GPU")
    vocab = args["vocab"]
    if vocab is not None and not Path(vocab).exists():
        raise FileNotFoundError(f"vocab {vocab}: no such file or folder")
    corpus = args["corpus"]
    if str(corpus) not in CORPORA and not Path(corpus).exists():
        raise FileNotFoundError(
            f"corpus {corpus}: not {' or '.join(CORPORA)}, a dump file or a folder"
        )
    if str(corpus) == "reviews" and args["objective"] != "none":
        raise ValueError(
            "corpus 'reviews' holds snippets by different critics, one after another: there is "
            "no next sentence or sentence order to learn; use objective 'none' (MLM only)"
        )


def _tokenizer(vocab: str | Path | None, vocab_size: int, train_articles: Sequence, run: Path):
    """The run's tokenizer: the one saved in the run, a given vocabulary, or a new one trained."""
    if (run / "vocab.txt").is_file():
        return BertTokenizer.from_pretrained(run)
    if vocab is not None:
        path = Path(vocab)
        return (
            BertTokenizer.from_pretrained(path)
            if path.is_dir()
            else BertTokenizer.from_vocab_file(path)
        )
    print(f"training a WordPiece vocabulary of {vocab_size} on the training articles")
    return BertTokenizer(
        train_wordpiece([p for a in train_articles for p in a.paragraphs], vocab_size)
    )


def pretrain(
    out: str | Path,
    *,
    steps: int,
    preset: str | None = None,
    corpus: str | Path = "wikipedia",
    init: str | Path | None = None,
    vocab: str | Path | None = None,
    vocab_size: int = 8000,
    max_len: int = 128,
    batch_size: int = 32,
    grad_accum_steps: int = 1,
    lr: float = 1e-3,
    dropout: float = 0.1,
    warmup_steps: int | None = None,
    weight_decay: float = 0.01,
    dupe_factor: int = 5,
    max_predictions: int | None = None,
    mask_rate: float = 0.15,
    whole_word: bool = False,
    static_masking: bool = False,
    objective: str = "nsp",
    neighbour_steps: int = 0,
    neighbour_bias: float = 8.0,
    neighbour_aux: float = 1.0,
    eval_every: int = 200,
    eval_batches: int | None = None,
    checkpoint_every: int | None = 500,
    resume: bool = False,
    overwrite: bool = False,
    stop_after: int | None = None,
    seed: int = 0,
    device: str | None = None,
    threads: int | None = None,
    progress: bool = True,
) -> PretrainResult:
    """Pretrain a BERT with MLM (+ NSP, SOP or nothing: objective) and save it in `out`.

    preset is the size of a new model ('mini' when neither it nor init is given). init ('course'
    or a model folder) continues pretraining from that model instead: its weights, vocabulary and
    size, with its heads (continued pretraining, e.g. on the review text: corpus='reviews').

    dropout applies while pretraining only: the saved config.json keeps the preset's 0.1 for
    fine-tuning. mask_rate applies to the training examples; held-out examples are always masked
    at BERT's 15%, so runs compare. neighbour_steps > 0 guides layer 0's first two heads to the
    previous and next token for that many steps (``curriculum.NeighbourCurriculum``: a score
    bonus neighbour_bias and an auxiliary loss of weight neighbour_aux, both annealed to zero);
    the saved model is a standard BERT. Everything else is as in ``minibert pretrain --help``.
    """
    args = dict(locals())
    _check_arguments(args)
    if init is None:  # a new model: the recipe names its size, as runs before --init did
        preset = args["preset"] = preset or "mini"
    out = Path(out)
    check_output_folder(out, overwrite, resume)
    recipe = {
        k: v
        for k, v in args.items()
        if k not in ("out", "progress", "resume", "overwrite", "stop_after")
    }
    recipe.update(
        corpus=str(corpus),
        vocab=None if vocab is None else str(vocab),
        init=None if init is None else str(init),
    )
    run = out / RUN_FOLDER
    if resume:
        saved = json.loads((run / "recipe.json").read_text(encoding="utf-8"))
        changed = [
            f"{k} (saved {saved[k]!r}, now {v!r})"
            for k, v in recipe.items()
            if k not in ("steps", "device", "threads", "eval_batches", "checkpoint_every")
            and k in saved
            and saved[k] != v
        ]
        if changed:
            raise ValueError(
                f"--resume with options that differ from the run in {out}: {', '.join(changed)}; "
                "resume with the same options"
            )
    set_seed(seed)
    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    train_articles, heldout_articles = load_corpus(corpus)
    if objective == "nsp":  # its negatives come from another document, in each part
        for part, docs in (("training", train_articles), ("held-out", heldout_articles)):
            if len(docs) < 2:
                raise ValueError(
                    f"corpus {corpus}: {len(docs)} {part} document(s), and next sentence "
                    "prediction needs at least two in each part (more documents, or "
                    "--objective sop or none)"
                )
    print(f"corpus: {len(train_articles)} training and {len(heldout_articles)} held-out documents")
    source = None if init is None else model_folder(init)
    tok = _tokenizer(source or vocab, vocab_size, train_articles, run)
    data_kwargs = dict(whole_word=whole_word, max_predictions=max_predictions)
    train_examples = pretraining.create_examples(
        pretraining.tokenize_documents(train_articles, tok),
        max_len,
        objective=objective,
        dupe_factor=dupe_factor,
        seed=seed,
    )
    train_data = pretraining.PretrainingDataset.from_tokenizer(
        train_examples,
        tok,
        dynamic=not static_masking,
        seed=seed,
        mlm_probability=mask_rate,
        **data_kwargs,
    )
    eval_data = pretraining.heldout_dataset(
        heldout_articles, tok, max_len, objective=objective, seed=seed + 1, **data_kwargs
    )
    print(
        f"examples: {len(train_data):,} training, {len(eval_data):,} held-out (max_len {max_len})"
    )
    if source is None:
        config = BertConfig.preset(
            preset, vocab_size=len(tok.vocab), max_position_embeddings=max(max_len, 128)
        )
        model = BertForPreTraining(
            config.replace(hidden_dropout=dropout, attention_dropout=dropout)
        )
    else:  # continued pretraining: the folder's weights and heads, this run's dropout
        config = BertConfig.from_hf_config(source / "config.json")
        model = BertForPreTraining.from_pretrained(
            source, hidden_dropout=dropout, attention_dropout=dropout
        )
    if neighbour_steps:
        model = NeighbourCurriculum(
            model, neighbour_bias, neighbour_aux, neighbour_steps * grad_accum_steps
        )
    if overwrite and not resume and run.exists():
        shutil.rmtree(run)  # an abandoned run of the model being replaced
    run.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(run)
    atomic_write(run / "recipe.json", json.dumps(recipe, indent=1) + "\n")
    history = train(
        model,
        train_data,
        eval_data,
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=warmup_steps,
        weight_decay=weight_decay,
        grad_accum_steps=grad_accum_steps,
        eval_every=eval_every,
        eval_batches=eval_batches,
        collate_fn=lambda batch: pretraining.collate(batch, tok.pad_token_id),
        metrics_fn=pretraining.metrics_for(tok),
        out_dir=run,
        checkpoint_every=checkpoint_every,
        resume=resume,
        seed=seed,
        device=device or default_device(),
        progress=progress,
        forward_kwargs={"sparse_mlm": True},  # score only masked positions: same loss, faster
        stop_after=stop_after,
    )
    heldout = {k[len("eval_") :]: v for k, v in history[-1].items() if k.startswith("eval_")}
    if len(history) < steps:  # paused by stop_after: the state stays in the run folder
        return PretrainResult(out, history, heldout, time.perf_counter() - started, paused=True)
    if isinstance(model, NeighbourCurriculum):
        model = model.finish()  # standard attention again: a plain BERT
    model.config = config  # saved with the preset's dropout, for fine-tuning
    _put_in_place(out, model, tok, {"history.json": history, "recipe.json": recipe}, overwrite)
    return PretrainResult(out, history, heldout, time.perf_counter() - started)


def _put_in_place(out: Path, model, tok, files: dict[str, Any], overwrite: bool) -> None:
    """Write the finished model into out's run folder, then move it over the old model's files.

    Until the moves, the old model is whole; each move is an atomic rename, config.json last.
    Only a model's files are ever removed (check_replaceable refused anything else up front).
    """
    run = out / RUN_FOLDER
    staged = run / "final"
    model.save_pretrained(staged)
    tok.save_pretrained(staged)
    for name, content in files.items():
        atomic_write(staged / name, json.dumps(content, indent=1) + "\n")
    if overwrite:  # the old model's other files (card, curves) describe another model
        for old in out.iterdir():
            if old.name in MODEL_OUTPUTS and old.name != RUN_FOLDER and old.name not in files:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
    for file in sorted(staged.iterdir(), key=lambda f: f.name == "config.json"):
        file.replace(out / file.name)
    shutil.rmtree(run)


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


def finetune(
    out: str | Path,
    *,
    model: str | Path = "course",
    task: str = "rotten-tomatoes",
    scratch: bool = False,
    epochs: int = 3,
    max_steps: int | None = None,
    lr: float | None = None,
    batch_size: int = 32,
    max_length: int = 128,
    train_examples: int | None = None,
    freeze_encoder: bool = False,
    reinit_layers: int = 0,
    warmup_fraction: float = 0.1,
    weight_decay: float = 0.01,
    overwrite: bool = False,
    seed: int = 0,
    device: str | None = None,
    threads: int | None = None,
    progress: bool = True,
    evaluations: int = MAX_EVALUATIONS,
) -> FinetuneResult:
    """Fine-tune a pretrained BERT folder (or a random one of its size) on a task; save it in out.

    Evaluates on dev after every epoch (at most `evaluations` times: a small subset trained for
    many epochs is evaluated every few epochs), keeps the best dev weights, then measures test and saves
    a Hugging Face folder (config with the label names, weights, tokenizer, results.json).
    Training batches hold texts of similar length (group_by_length), which halves the padding.
    freeze_encoder trains only the classifier (a linear probe); reinit_layers re-initialises the
    pooler and the top N encoder layers before training (Zhang et al., 2021). lr=None takes
    ``default_lr`` of the model's size (1e-3 for the course's small models, 5e-5 for MiniLM).
    """
    spec = tasks.get(task)  # an unknown task is an error naming the known ones
    for name, value in (("epochs", epochs), ("batch_size", batch_size), ("max_length", max_length)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    for name, value in (
        ("max_steps", max_steps),
        ("train_examples", train_examples),
        ("evaluations", evaluations),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if lr is not None and not (isinstance(lr, int | float) and 0 < lr < math.inf):
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    if not 0 <= warmup_fraction <= 1:
        raise ValueError(f"warmup_fraction must be in [0, 1], got {warmup_fraction!r}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; give a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise ValueError(f"--out {out} is not empty; pass --overwrite to replace what is there")
    check_replaceable(out, overwrite)
    source = model_folder(model)
    set_seed(seed)
    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    tok = BertTokenizer.from_pretrained(source)
    names, cls = spec.labels, spec.model_class
    config = BertConfig.from_hf_config(source).replace(num_labels=len(names), label_names=names)
    lr = default_lr(config) if lr is None else lr
    if not 0 <= reinit_layers <= config.num_layers:
        raise ValueError(f"reinit_layers must be in [0, {config.num_layers}], got {reinit_layers}")
    if max_length > config.max_position_embeddings:
        raise ValueError(
            f"max_length {max_length} exceeds the model's {config.max_position_embeddings} positions"
        )
    train_data, dev_data, test_data = spec.datasets(tok, max_length, train_examples, seed)
    if len(train_data) < batch_size:
        raise ValueError(
            f"{len(train_data)} training examples is fewer than one batch of {batch_size}"
        )
    if scratch:
        net = cls(config)  # the same size and vocabulary, random weights
    else:  # a new classifier of the task's size, unless the folder holds one already
        net = cls.from_pretrained(source, num_labels=len(names), label_names=names)
    if reinit_layers:
        parts = [*net.bert.encoder.layers[-reinit_layers:]]
        if getattr(net.bert, "pooler", None) is not None:
            parts.append(net.bert.pooler)
        for part in parts:
            net.init_weights(part)
    if freeze_encoder:
        for p in net.bert.parameters():
            p.requires_grad_(False)
    steps_per_epoch = len(train_data) // batch_size
    steps = max_steps or epochs * steps_per_epoch
    metrics_fn = spec.metrics
    best: dict[str, Any] = {"accuracy": -1.0}

    def keep_best(history: list[dict]) -> None:
        accuracy = history[-1]["eval_accuracy"]
        if accuracy > best["accuracy"]:
            best.update(
                accuracy=accuracy,
                step=history[-1]["step"],
                state={k: v.detach().clone() for k, v in net.state_dict().items()},
            )

    collate = lambda batch: finetuning.collate(batch, tok.pad_token_id)  # noqa: E731
    history = train(
        net,
        train_data,
        by_length(dev_data),  # the same measures; batches of similar length pad less
        steps=steps,
        batch_size=batch_size,
        lr=lr,
        warmup_steps=round(warmup_fraction * steps),
        weight_decay=weight_decay,
        eval_every=min(max(steps_per_epoch, math.ceil(steps / evaluations)), steps),
        collate_fn=collate,
        metrics_fn=metrics_fn,
        seed=seed,
        device=device or default_device(),
        progress=progress,
        on_eval=keep_best,
        group_by_length=True,
    )
    net.load_state_dict(best["state"])
    dev = _measure(net, dev_data, collate, spec.unit)
    test = _measure(net, test_data, collate, spec.unit)
    results = {
        "task": task,
        "model": str(model),
        "scratch": scratch,
        "best_dev_step": best["step"],
        "dev": dev,
        "test": test,
        "options": dict(
            epochs=epochs,
            max_steps=max_steps,
            steps=steps,
            lr=lr,
            batch_size=batch_size,
            max_length=max_length,
            train_examples=train_examples,
            freeze_encoder=freeze_encoder,
            reinit_layers=reinit_layers,
            seed=seed,
            evaluations=evaluations,
        ),  # fmt: skip
        "train_size": len(train_data),
        "seconds": round(time.perf_counter() - started, 1),
    }
    _put_in_place(out, net, tok, {"history.json": history, "results.json": results}, overwrite)
    return FinetuneResult(out, history, dev, test, time.perf_counter() - started)


@torch.no_grad()
def _measure(net, data, collate, unit: str) -> dict[str, Any]:
    """Accuracy, F1 of label 1 and the confusion matrix of a model on a dataset."""
    net.eval()
    device = next(net.parameters()).device
    labels, predictions, per_example = [], [], {}
    order = sorted(range(len(data)), key=lambda i: -len(data[i]["input_ids"]))  # less padding
    for start in range(0, len(order), 64):
        rows = order[start : start + 64]
        batch = {k: v.to(device) for k, v in collate([data[i] for i in rows]).items()}
        guess = net(**{k: v for k, v in batch.items() if k != "labels"}).logits.argmax(-1)
        keep = batch["labels"] != IGNORE_INDEX
        labels += batch["labels"][keep].tolist()
        predictions += guess[keep].tolist()
        if guess.dim() == 1:  # a label per text: remember each text's, in the data's order
            per_example.update(zip(rows, guess.tolist()))
    measured = {
        **finetuning.scores(labels, predictions, net.config.num_labels),
        "examples": len(labels),
        "unit": unit,
    }
    if per_example:
        measured["predictions"] = [per_example[i] for i in range(len(data))]
    return measured


def by_length(data: Sequence) -> list:
    """The examples of a dataset, longest first: evaluation batches of similar length pad less."""
    return sorted((data[i] for i in range(len(data))), key=lambda item: -len(item["input_ids"]))
