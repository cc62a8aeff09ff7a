"""``pretrain``: corpus -> vocabulary -> examples -> model -> loop -> a saved folder (see the
package's docstring)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minibert import distributed, pretraining
from minibert.config import OBJECTIVES, PRESETS, BertConfig
from minibert.guidance import NeighbourGuidance
from minibert.model import BertForPreTraining
from minibert.options import (
    COUNT,
    FRACTION,
    NON_NEGATIVE,
    OPEN_FRACTION,
    POSITIVE_INT,
    REQUIRED,
    Check,
    check_fields,
    nested,
    one_of,
    option,
    replace,
    saved,
)
from minibert.recipes.outputs import RUN_FOLDER, OutputFolder
from minibert.recipes.shared import (
    CORPORA,
    SOURCE,
    check_resume,
    load_corpus,
    model_files,
    model_folder,
    options_of,
    say,
    start,
)
from minibert.tokenization import BertTokenizer
from minibert.training import TrainOptions, train
from minibert.utils import atomic_write, default_device
from minibert.wordpiece_trainer import train_wordpiece

__all__ = ["PretrainOptions", "PretrainResult", "pretrain"]

MAX_POSITIONS = 512  # the longest max_len of a new model: BERT's position table


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


# named recipes: `minibert pretrain --recipe NAME --out DIR` is these flags, then any the user gives
# (theirs win). "wikipedia": how the first course checkpoint trained on the extract's 0.39M words;
# "english": the same schedule on english_corpus's 5.5M words, with 30% masking (the one change the
# recipe search in benchmarks/english_recipes.py found to help beyond its interval).
RECIPES: dict[str, tuple[str, ...]] = {
    "wikipedia": (
        "--corpus", "wikipedia", "--preset", "tiny", "--steps", "30000", "--warmup-steps", "1000",
        "--lr", "2e-3", "--dropout", "0", "--neighbour-steps", "3000", "--eval-every", "500",
        "--checkpoint-every", "500", "--seed", "0",
    ),
    "english": (
        "--corpus", "english", "--preset", "tiny", "--steps", "30000", "--warmup-steps", "1000",
        "--lr", "2e-3", "--dropout", "0", "--neighbour-steps", "3000", "--mask-rate", "0.3",
        "--eval-every", "500", "--checkpoint-every", "500", "--seed", "0",
    ),
}  # fmt: skip

MIN_VOCAB, MIN_LEN = 100, 8  # the smallest vocabulary and example length a run accepts
MAX_VOCAB = 2**20  # the largest vocabulary a run trains (BERT's are 30,522; multilingual 119,547)
VOCAB_SIZE = 8000  # the vocabulary trained when none is given


@dataclass(kw_only=True)
class PretrainOptions:
    """``pretrain``'s options: the corpus, the model, the examples and masking, and the loop's
    (``train``: a whole TrainOptions, pretraining's defaults; steps required)."""

    train: TrainOptions = nested(
        TrainOptions,
        hide=("group_by_length",),
        steps=REQUIRED,
        lr=1e-3,
        eval_every=200,
        checkpoint_every=500,
    )
    preset: str | None = option(
        None,
        help="size of a new model (layers/hidden: 2/128, 4/256, 4/512, 8/512, 12/768); "
        "default: mini, or the --init model's size",
        check=one_of(*PRESETS),
    )
    corpus: str | Path = option(
        "wikipedia",
        help="'wikipedia' (the course extract), 'english' (the extract and about 5M more words "
        "of English from registry packages: english_corpus; 'english-modern' without its "
        "archaic Gutenberg texts), 'reviews' (the review text of the Rotten Tomatoes training movies, one document per movie, no labels; needs --objective none), "
        "a MediaWiki dump (.xml/.xml.bz2), a folder of .txt files or a .json file of articles "
        "(corpora.write_articles: the course extract, read where gensim is missing)",
        check=SOURCE,
    )
    text_fraction: float = option(
        1.0,
        help="pretrain on this share of the training documents' words (whole documents in a "
        "fixed shuffled order, so 1/8 lies inside 1/4; the vocabulary is trained on the same "
        "share, the held-out documents are unchanged): for a data-scale curve",
        check=Check("in (0, 1]", lambda v: isinstance(v, (int, float)) and 0 < v <= 1),
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
        check=Check(
            f"an int in [{MIN_VOCAB}, {MAX_VOCAB:,}]",
            lambda v: POSITIVE_INT.test(v) and MIN_VOCAB <= v <= MAX_VOCAB,
        ),
    )
    max_len: int = option(
        128,
        help="tokens per example, [CLS] and [SEP] included",
        check=Check(f"an int >= {MIN_LEN}", lambda v: POSITIVE_INT.test(v) and v >= MIN_LEN),
    )
    dropout: float = option(
        BertConfig.hidden_dropout,
        help="dropout while pretraining (hidden and attention); 0 is faster on a CPU. The saved "
        f"config.json keeps the model's own ({BertConfig.hidden_dropout:g}) for fine-tuning",
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
    overwrite: bool = option(
        False,
        help="replace the model a run of ours wrote in --out (the files its manifest lists; any "
        "other file is refused, never deleted) once the new run has finished",
        save=False,
    )

    def __post_init__(self) -> None:
        check_fields(self)
        if self.train.steps is None:
            raise ValueError("steps is required: how many optimizer steps to pretrain for")
        if not self.neighbour_steps <= self.train.steps:
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
    say(f"training a WordPiece vocabulary of {vocab_size} on the training articles")
    vocab = train_wordpiece([p for a in train_articles for p in a.paragraphs], vocab_size)
    if len(vocab) < vocab_size:
        say(
            f"the training text gave {len(vocab):,} tokens, fewer than the {vocab_size:,} asked "
            "(no pair of symbols left that occurs twice): the model's vocabulary is that size"
        )
    return BertTokenizer(vocab)


def pretrain(
    out: str | Path, options: PretrainOptions | None = None, **changes: Any
) -> PretrainResult:
    """Pretrain a BERT with MLM (+ NSP, SOP or nothing: objective) and save it in `out`.

    options is a PretrainOptions; keyword changes set or override its fields:
    ``pretrain("runs/mini", steps=2000, preset="mini")``. preset is the size of a new model
    ('mini' when neither it nor init is given). init ('course' or a model folder) continues
    pretraining from that model instead: its weights, vocabulary and size, with its heads
    (continued pretraining, e.g. on the review text: corpus='reviews').

    dropout applies while pretraining only: the saved config.json keeps the model's own dropout
    for fine-tuning. mask_rate applies to the training examples; held-out examples are always masked
    at BERT's 15%, so runs compare. neighbour_steps > 0 guides layer 0's first two heads to the
    previous and next token for that many steps (``guidance.NeighbourGuidance``: a score bonus
    neighbour_bias and an auxiliary loss of weight neighbour_aux, both annealed to zero); the
    saved model is a standard BERT. Every option is described in ``minibert pretrain --help``.
    """
    o = options_of(PretrainOptions, options, changes)
    _check_sources(o)
    if o.init is None and o.preset is None:  # a new model: the recipe names its size
        o = replace(o, preset="mini")
    folder = OutputFolder(
        out, overwrite=o.overwrite, resume=o.train.resume, writer=distributed.is_main()
    )
    distributed.check_split(o.train.batch_size)
    recipe = saved(o)
    if o.train.resume:
        check_resume(folder, o)
    started = start(o.train)
    with folder:
        train_articles, heldout_articles = _pretraining_corpus(o)
        source = None if o.init is None else model_folder(o.init)
        tok = _tokenizer(
            source or o.vocab, o.vocab_size, train_articles, folder.run if o.train.resume else None
        )
        train_data, eval_data = _pretraining_data(o, tok, train_articles, heldout_articles)
        if len(train_data) < o.train.batch_size:  # before the run writes anything
            raise ValueError(
                f"batch_size {o.train.batch_size} is more than the {len(train_data):,} training "
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
            o.train,
            collate_fn=lambda batch: pretraining.collate(batch, tok.pad_token_id),
            metrics_fn=pretraining.metrics_for(tok),
            out_dir=folder.run,
            forward_kwargs={"sparse_mlm": True},  # score only masked positions: same loss, faster
            device=o.train.device or str(default_device()),
        )
        heldout = {k[len("eval_") :]: v for k, v in history[-1].items() if k.startswith("eval_")}
        paused = len(history) < o.train.steps  # by stop_after: the state stays in the run folder
        if paused or not distributed.is_main():  # or a process that writes nothing (torchrun)
            seconds = time.perf_counter() - started
            return PretrainResult(folder.path, history, heldout, seconds, paused, o.train.steps)
        if isinstance(model, NeighbourGuidance):
            model = model.finish()  # standard attention again: a plain BERT
        model.config = config  # saved with the preset's dropout, for fine-tuning
        files = {"history.json": history, "recipe.json": recipe}
        folder.put_in_place(model_files(model, tok, files), by="minibert pretrain")
    return PretrainResult(
        folder.path, history, heldout, time.perf_counter() - started, steps=o.train.steps
    )


def _pretraining_corpus(o: PretrainOptions) -> tuple[list, list]:
    """(training, held-out) documents of the run's corpus, refused if NSP cannot use them."""
    train_articles, heldout_articles = load_corpus(o.corpus)
    if o.text_fraction < 1:
        train_articles = share_of_documents(train_articles, o.text_fraction)
    if o.objective == "nsp":  # its negatives come from another document, in each part
        for part, docs in (("training", train_articles), ("held-out", heldout_articles)):
            if len(docs) < 2:
                raise ValueError(
                    f"corpus {o.corpus}: {len(docs)} {part} document(s), and next sentence "
                    "prediction needs at least two in each part (more documents, or "
                    "--objective sop or none)"
                )
    words = sum(len(s.split()) for a in train_articles for s in a.sentences)
    say(
        f"corpus: {len(train_articles)} training and {len(heldout_articles)} held-out documents "
        f"({words:,} training words)"
    )
    return train_articles, heldout_articles


def share_of_documents(documents: Sequence, fraction: float, seed: int = 0) -> list:
    """The first whole documents, in an order shuffled by seed, whose words come closest to
    fraction of all the documents' words (at least two): nested, a smaller share inside a larger."""
    order = sorted(range(len(documents)), key=lambda i: documents[i].title)  # any input order
    random.Random(seed).shuffle(order)
    counts = [sum(len(s.split()) for s in documents[i].sentences) for i in order]
    target, kept, total = fraction * sum(counts), [], 0
    for i, count in zip(order, counts):
        # the document that crosses the target is kept when that lands nearer to it
        if len(kept) >= 2 and total + count - target > target - total:
            break
        kept.append(i)
        total += count
    return [documents[i] for i in sorted(kept)]  # in the corpus's own order


def _pretraining_data(o: PretrainOptions, tok: BertTokenizer, train_articles, heldout_articles):
    """(training, held-out) masked examples: masked anew each epoch unless static_masking."""
    masking = dict(whole_word=o.whole_word, max_predictions=o.max_predictions)
    train_examples = pretraining.create_examples(
        pretraining.tokenize_documents(train_articles, tok),
        o.max_len,
        objective=o.objective,
        dupe_factor=o.dupe_factor,
        seed=o.train.seed,
    )
    train_data = pretraining.PretrainingDataset.from_tokenizer(
        train_examples,
        tok,
        dynamic=not o.static_masking,
        seed=o.train.seed,
        mlm_probability=o.mask_rate,
        **masking,
    )
    eval_data = pretraining.heldout_dataset(
        heldout_articles, tok, o.max_len, objective=o.objective, seed=o.train.seed + 1, **masking
    )
    say(
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
            model, o.neighbour_bias, o.neighbour_aux, o.neighbour_steps * o.train.grad_accum_steps
        )
    return config, model
