"""minibert's train_wordpiece vs the tokenizers library's WordPieceTrainer on the same articles.

Both learn a vocabulary of the same size from the Wikipedia training articles (97 articles, about
395k words) with the same normalisation (BERT's: lower-case, strip accents, split punctuation),
the same special tokens and min_frequency=2. We report, for each vocabulary size:

- training time (one run each, same process, one after the other);
- vocabulary overlap: tokens in both vocabularies / vocabulary size;
- pieces per word on the held-out articles (9 articles, about 52k words, never seen in training),
  tokenized by the same greedy WordPiece (minibert's BertTokenizer) with each vocabulary; fewer is
  better: shorter sequences for the same text. bert-base-uncased's 30,522-token vocabulary,
  trained on far more text, is listed for scale;
- [UNK] pieces on the held-out articles.

The tokenizers trainer ranks pairs by frequency (it is its BPE trainer with "##" prefixes);
minibert's default ranks them by the gain in corpus likelihood; criterion="ratio" is the
count(ab) / (count(a) count(b)) ranking of Hugging Face's course, shown for comparison.

    python benchmarks/wordpiece_training.py      # writes benchmarks/results/wordpiece_training.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import time
from pathlib import Path

import tokenizers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

from minibert import assets, corpora
from minibert.tokenization import SPECIAL_TOKENS, BertTokenizer, load_vocab
from minibert.wordpiece_trainer import train_wordpiece

RESULTS = Path(__file__).resolve().parent / "results" / "wordpiece_training.json"
MIN_FREQUENCY = 2


def train_theirs(texts: list[str], vocab_size: int) -> list[str]:
    """The tokenizers library's WordPieceTrainer with BERT's normaliser and pre-tokenizer."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=MIN_FREQUENCY,
        special_tokens=list(SPECIAL_TOKENS),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.__getitem__)


def evaluate(vocab: list[str], heldout: list[str]) -> dict[str, float]:
    """Pieces per word and [UNK] pieces on the held-out texts, greedy WordPiece."""
    tok = BertTokenizer(vocab)
    words = sum(len(tok.basic_tokenizer.tokenize(t)) for t in heldout)
    pieces = [p for t in heldout for p in tok.tokenize(t)]
    return {
        "pieces_per_word": round(len(pieces) / words, 4),
        "unk_pieces": pieces.count("[UNK]"),
        "words": words,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 8000])
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()

    train = [p for a in corpora.wikipedia_articles("train") for p in a.paragraphs]
    heldout = [p for a in corpora.wikipedia_articles("heldout") for p in a.paragraphs]
    bert = load_vocab(assets.path("minilm") / "vocab.txt")
    bert_eval = evaluate(bert, heldout)
    print(f"bert-base-uncased ({len(bert)} tokens): {bert_eval['pieces_per_word']} pieces/word")

    results = []
    for size in args.sizes:
        row: dict[str, object] = {"vocab_size": size}
        vocabs = {}
        for name, train_fn in [
            ("minibert", lambda s: train_wordpiece(train, s, progress=False)),
            (
                "minibert_ratio",
                lambda s: train_wordpiece(train, s, criterion="ratio", progress=False),
            ),
            ("tokenizers", lambda s: train_theirs(train, s)),
        ]:
            start = time.perf_counter()
            vocabs[name] = train_fn(size)
            seconds = time.perf_counter() - start
            row[name] = {"train_s": round(seconds, 1), "tokens": len(vocabs[name])}
            row[name].update(evaluate(vocabs[name], heldout))
        ours, theirs = set(vocabs["minibert"]), set(vocabs["tokenizers"])
        row["overlap"] = round(len(ours & theirs) / size, 3)
        row["overlap_ratio_criterion"] = round(
            len(set(vocabs["minibert_ratio"]) & theirs) / size, 3
        )
        row["overlap_with_bert_base_uncased"] = {
            "minibert": round(len(ours & set(bert)) / size, 3),
            "tokenizers": round(len(theirs & set(bert)) / size, 3),
        }
        ppw = {k: row[k]["pieces_per_word"] for k in ("minibert", "minibert_ratio", "tokenizers")}
        row["pieces_per_word_vs_tokenizers"] = round(ppw["minibert"] / ppw["tokenizers"] - 1, 4)
        results.append(row)
        print(
            f"vocab {size}: pieces/word minibert {ppw['minibert']} ({row['minibert']['train_s']} s), "
            f"ratio criterion {ppw['minibert_ratio']}, tokenizers {ppw['tokenizers']} "
            f"({row['tokenizers']['train_s']} s); minibert is "
            f"{100 * row['pieces_per_word_vs_tokenizers']:+.1f}%; overlap {row['overlap']}"
        )

    report = {
        "what": "WordPiece vocabularies trained on the Wikipedia training articles; pieces per "
        "word on the held-out articles (lower is better); pieces_per_word_vs_tokenizers = "
        "minibert / tokenizers - 1",
        "train_articles": len(corpora.wikipedia_articles("train")),
        "heldout_articles": len(corpora.wikipedia_articles("heldout")),
        "min_frequency": MIN_FREQUENCY,
        "bert_base_uncased": {"tokens": len(bert), **bert_eval},
        "machine": {
            "processor": platform.machine(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "tokenizers": tokenizers.__version__,
        },
        "date": datetime.date.today().isoformat(),
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out.name}")


if __name__ == "__main__":
    main()
