"""BERT as a sentence encoder: one vector per text, by one of the POOLINGS: "cls" (the last
layer's raw [CLS] vector), "pooler" (BERT's pooler: dense + tanh on it) or "mean" (of the real
tokens). The one way the package turns texts into vectors: one padding (``pad``), one pooling
(``pool``), one fingerprint of the weights, one vector cache.

    encoder = load_encoder("minilm")                 # 'minilm', 'course' or a model folder
    vectors = encode(encoder, texts, pooling="mean")  # (texts, hidden), as MiniLM's card pools
    encode(encoder, texts, cache="runs/cache")       # kept by fingerprint, pooling and texts
    white = Whitening.fit(vectors); white(vectors)   # Su et al., 2021: mean 0, covariance I
    anisotropy(encoder, texts)                       # mean cosine of random pairs, per layer

A raw BERT's vectors crowd into a narrow cone (Ethayarajh, 2019): two unrelated sentences have a
high cosine, so cosine says little. Whitening removes the shared mean and evens out the
directions; contrastive training (all-MiniLM-L6-v2's billion pairs) spreads them out by learning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from minibert import assets
from minibert.config import POOLINGS, RENAMED_POOLINGS  # the package's one pooling vocabulary
from minibert.model import BertModel, mean_pool
from minibert.tokenization import BertTokenizer
from minibert.utils import (
    atomic_write,
    check_text,
    folder_problem,
    read_kept,
    set_seed,
    vectors_problem,
)

__all__ = [
    "POOLINGS",
    "Encoder",
    "Whitening",
    "anisotropy",
    "batches",
    "check_pooling",
    "encode",
    "encode_pieces",
    "encoder_folder",
    "fingerprint",
    "layer_vectors",
    "load_encoder",
    "pad",
    "pool",
    "random_encoder",
]

MAX_LENGTH = (
    256  # pieces a text is cut to (all-MiniLM-L6-v2's max_seq_length), at most the positions
)


@dataclass
class Encoder:
    """A BertModel and its tokenizer, named (for tables and saved indexes), with a fingerprint of
    its weights and configuration: an index built by other weights is stale."""

    model: BertModel
    tokenizer: BertTokenizer
    name: str
    folder: Path | None = None  # where it was loaded from (None: built in memory)

    @property
    def max_length(self) -> int:
        """The pieces a text is cut to: MAX_LENGTH, or fewer where the model has fewer positions."""
        return min(MAX_LENGTH, self.model.config.max_position_embeddings)

    def fingerprint(self) -> str:
        """A short hash of the weights, the configuration and the vocabulary."""
        config = json.dumps(self.model.config.to_dict(), sort_keys=True)
        return fingerprint(self.model, config, "\n".join(self.tokenizer.vocab))


def fingerprint(module: torch.nn.Module, *more: str) -> str:
    """A short hash of a module's weights (and of any more text): vectors of other weights are
    stale. The one hash of weights: an index, a vector cache and a task's kept vectors use it."""
    digest = hashlib.sha256()
    for text in more:
        digest.update(text.encode())
    for name, tensor in sorted(module.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


def check_pooling(pooling: object) -> str:
    """pooling, when it is one of POOLINGS; an old name is refused in one line naming the new one
    (the raw [CLS] vector was once "first" where "cls" meant BERT's pooler)."""
    if pooling in RENAMED_POOLINGS:
        raise ValueError(
            f"pooling {pooling!r} is now {RENAMED_POOLINGS[pooling]!r} (the raw [CLS] vector; "
            "'pooler' is BERT's pooler on it)"
        )
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    return pooling


def pool(output, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """(batch, hidden) vectors of a BertModel's output: its last layer's [CLS] vector ('cls'), its
    pooler_output ('pooler') or the mean of its real tokens ('mean')."""
    if pooling == "pooler":
        return output.pooler_output
    hidden = output.last_hidden_state  # (batch, seq, hidden)
    return hidden[:, 0] if pooling == "cls" else mean_pool(hidden, attention_mask)


def pad(pieces: Sequence[Sequence[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The one padding: lists of piece ids -> input_ids and attention_mask, (batch, longest),
    padded on the right with pad_id (mask 0)."""
    width = max(len(ids) for ids in pieces)
    input_ids = torch.full((len(pieces), width), pad_id)
    attention_mask = torch.zeros(len(pieces), width, dtype=torch.long)  # (batch, seq)
    for row, ids in enumerate(pieces):
        input_ids[row, : len(ids)] = torch.as_tensor(ids)
        attention_mask[row, : len(ids)] = 1
    return input_ids, attention_mask


def by_length(pieces: Sequence[Sequence[int]], batch_size: int) -> Iterator[list[int]]:
    """Indices of pieces in batches of batch_size, longest first, so that a batch pads little."""
    order = sorted(range(len(pieces)), key=lambda i: -len(pieces[i]))
    for start in range(0, len(order), batch_size):
        yield order[start : start + batch_size]


def encode_pieces(
    model: BertModel,
    pieces: Sequence[Sequence[int]],
    pad_id: int,
    pooling: str | tuple[str, ...] = "mean",
    batch_size: int = 64,
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """(texts, hidden) float32 vectors of texts already cut into pieces, batched by length, in
    inference mode, on the model's device (the caller chooses its mode: eval for no dropout). A
    tuple of poolings gives a tuple of vectors from one pass."""
    poolings = (pooling,) if isinstance(pooling, str) else tuple(pooling)
    if not poolings:
        raise ValueError(f"pooling must be one of {POOLINGS} or a tuple of them, got {pooling!r}")
    for one in poolings:
        check_pooling(one)
    device = next(model.parameters()).device
    vectors = [torch.empty(len(pieces), model.config.hidden_size) for _ in poolings]
    with torch.inference_mode():
        for rows in by_length(pieces, batch_size):
            input_ids, attention_mask = pad([pieces[i] for i in rows], pad_id)
            mask = attention_mask.to(device)
            output = model(input_ids.to(device), attention_mask=mask)
            for kept, one in zip(vectors, poolings):
                kept[rows] = pool(output, mask, one).float().cpu()
    return vectors[0] if isinstance(pooling, str) else tuple(vectors)


def encoder_folder(name: str | Path) -> Path:
    """The folder of an encoder: a course checkpoint by name ('course'), 'minilm', or a folder
    of a BERT (config.json and weights); anything else is a FileNotFoundError saying so."""
    if str(name) in assets.COURSE_CHECKPOINTS:
        return assets.course_checkpoint(str(name))
    if str(name) == "minilm":
        return assets.path("minilm")
    folder = Path(name)
    weights = ("model.safetensors", "pytorch_model.bin")
    if not folder.is_dir() or not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"{name} is not an encoder: expected 'minilm', "
            f"{', '.join(map(repr, assets.COURSE_CHECKPOINTS))} or a BERT folder with config.json "
            "and model.safetensors (as `minibert pretrain` or `finetune` writes)"
        )
    if not any((folder / w).is_file() for w in weights):
        raise FileNotFoundError(
            f"{name} is not an encoder: it has a config.json but no weights ({' or '.join(weights)})"
        )
    return folder


def load_encoder(name: str | Path) -> Encoder:
    """An encoder from a folder or a name ('minilm', 'course'), in evaluation mode (no dropout)."""
    folder = encoder_folder(name)
    model = BertModel.from_pretrained(folder).eval()  # a task model's folder: its encoder
    label = str(name) if str(name) in ("minilm", *assets.COURSE_CHECKPOINTS) else folder.name
    return Encoder(model, BertTokenizer.from_pretrained(folder), label, folder)


def random_encoder(like: Encoder, seed: int = 0) -> Encoder:
    """An encoder of the same size and vocabulary as like, with freshly initialised weights."""
    set_seed(seed)
    model = BertModel(like.model.config).eval()
    return Encoder(model, like.tokenizer, f"random {like.name}-size (seed {seed})")


def _as_encoder(encoder: Encoder | str | Path) -> Encoder:
    return encoder if isinstance(encoder, Encoder) else load_encoder(encoder)


def _check_texts(texts: Sequence[str]) -> None:
    """A list (or tuple) of texts, each with something to read (utils.check_text); else the error
    names what came (a str alone, an array, a dict, an empty list)."""
    if isinstance(texts, str):
        raise TypeError("texts must be a list of texts; for one text, encode([text])")
    if not isinstance(texts, list | tuple):
        raise TypeError(f"texts must be a list of str, got {type(texts).__name__}")
    if not texts:
        raise ValueError("no texts to encode")
    for i, text in enumerate(texts):
        check_text(text, f"text {i + 1}")


def batches(
    encoder: Encoder, texts: Sequence[str], batch_size: int = 64, max_length: int | None = None
) -> Iterator[tuple[list[int], dict[str, torch.Tensor]]]:
    """(indices of the texts, model inputs) batches: every text cut to max_length pieces (the
    encoder's by default), sorted by its number of pieces, longest first, so that a batch pads
    little; each batch's input_ids and attention_mask are (batch, its longest)."""
    _check_texts(texts)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    encodings = encoder.tokenizer.encode_batch(
        list(texts),
        max_length=max_length or encoder.max_length,
        truncation=True,
        padding=False,
        return_tensors=None,
    )
    ids = [e.input_ids for e in encodings]
    for chunk in by_length(ids, batch_size):
        input_ids, attention_mask = pad([ids[i] for i in chunk], encoder.tokenizer.pad_token_id)
        yield chunk, {"input_ids": input_ids, "attention_mask": attention_mask}


def encode(
    encoder: Encoder | str | Path,
    texts: Sequence[str],
    pooling: str = "mean",
    batch_size: int = 64,
    cache: str | Path | None = None,
    cache_name: str = "vectors",
) -> torch.Tensor:
    """(texts, hidden) float32 sentence vectors (pooling: one of POOLINGS), texts cut to the
    encoder's max_length pieces; texts of similar length are batched together, in inference mode.
    encoder: an Encoder, a folder or a name. cache: a folder where the vectors are kept, in
    CACHE_NAME-KEY.safetensors (KEY: the encoder's fingerprint, the pooling and the texts), and
    read back, checked on load as every cache is (utils.read_kept); a cache that cannot be a
    folder is a ValueError before the encoder runs."""
    check_pooling(pooling)
    _check_texts(texts)  # before loading the encoder
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    encoder = _as_encoder(encoder)
    file = None
    if cache is not None:
        file = Path(cache) / f"{cache_name}-{_texts_key(encoder, texts, pooling)}.safetensors"
        shape = (len(texts), encoder.model.config.hidden_size)
        read = lambda f: _read_vectors(f, shape)  # noqa: E731
        if (kept := read_kept(file, read, "file of vectors", "computing them again")) is not None:
            return kept
        if problem := folder_problem(cache):  # before the encoder runs, not after
            raise ValueError(f"cache must be a folder for the vectors: {problem}")
    cut = {"max_length": encoder.max_length, "truncation": True, "padding": False}
    encodings = encoder.tokenizer.encode_batch(list(texts), **cut, return_tensors=None)
    pieces = [e.input_ids for e in encodings]
    vectors = encode_pieces(
        encoder.model, pieces, encoder.tokenizer.pad_token_id, pooling, batch_size
    )
    if file is not None:
        from safetensors.torch import save_file

        atomic_write(file, lambda path: save_file({"vectors": vectors.contiguous()}, path))
    return vectors


def _texts_key(encoder: Encoder, texts: Sequence[str], pooling: str = "mean") -> str:
    """A hash of the encoder's fingerprint, the pooling and the texts: cached vectors of others
    are stale (the mean's key leaves the pooling out: the key teacher vectors were kept by)."""
    digest = hashlib.sha256(encoder.fingerprint().encode())
    if pooling != "mean":
        digest.update(f"pooling={pooling}\0".encode())
    for text in texts:
        digest.update(text.encode() + b"\0")
    return digest.hexdigest()[:16]


def _read_vectors(file: Path, shape: tuple[int, int]) -> torch.Tensor:
    """The (texts, hidden) vectors kept in file; a ValueError saying why when the file is damaged
    (not safetensors, no vectors, or vectors utils.vectors_problem refuses)."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), framework="pt") as f:
            vectors = f.get_tensor("vectors")
    except SafetensorError as exc:
        raise ValueError(f"not a file of vectors: {exc}") from None
    if problem := vectors_problem(vectors, *shape, of="texts"):
        raise ValueError(problem)
    return vectors


def layer_vectors(
    encoder: Encoder, texts: Sequence[str], batch_size: int = 64, max_length: int | None = None
) -> torch.Tensor:
    """(layers + 1, texts, hidden): each text's mean-pooled vector after the embeddings (0) and
    after each layer, in inference mode."""
    config = encoder.model.config
    vectors = torch.empty(config.num_layers + 1, len(texts), config.hidden_size)
    with torch.inference_mode():
        for rows, inputs in batches(encoder, texts, batch_size, max_length):
            out = encoder.model(**inputs, output_hidden_states=True)
            mask = inputs["attention_mask"]
            vectors[:, rows] = torch.stack([mean_pool(h, mask) for h in out.hidden_states])
    return vectors


def anisotropy(
    encoder: Encoder, texts: Sequence[str], pairs: int = 2000, seed: int = 0
) -> list[float]:
    """The mean cosine of random pairs of different texts' mean-pooled vectors, after the
    embeddings and after each layer (layers + 1 values): near 0 for directions spread evenly,
    near 1 for vectors in a narrow cone."""
    if len(texts) < 2 or pairs < 1:
        raise ValueError(f"need at least 2 texts and 1 pair, got {len(texts)} and {pairs}")
    vectors = torch.nn.functional.normalize(layer_vectors(encoder, texts), dim=-1)
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(len(texts), (pairs,), generator=g)
    b = (a + torch.randint(1, len(texts), (pairs,), generator=g)) % len(texts)  # b != a
    return [float(c) for c in (vectors[:, a] * vectors[:, b]).sum(-1).mean(1)]


@dataclass(frozen=True)
class Whitening:
    """BERT-whitening (Su et al., 2021): x -> (x - mean) @ W, with W = U diag(1 / sqrt(s)) from the
    SVD of the covariance of the vectors it was fitted on, so that they have mean 0 and identity
    covariance; dims keeps the first (largest) directions only."""

    mean: torch.Tensor  # (hidden,)
    transform: torch.Tensor  # (hidden, dims)

    @classmethod
    def fit(cls, vectors: torch.Tensor, dims: int | None = None) -> Whitening:
        """Fit on (n, hidden) vectors, e.g. every passage's; dims: directions kept (all: None)."""
        if vectors.dim() != 2 or vectors.shape[0] < 2:
            raise ValueError(f"vectors must be (n, hidden) with n >= 2, got {tuple(vectors.shape)}")
        x = vectors.double()
        mean = x.mean(0)
        covariance = (x - mean).T @ (x - mean) / len(x)  # (hidden, hidden)
        u, s, _ = torch.linalg.svd(covariance)
        transform = u / s.clamp(min=1e-12).sqrt()  # (hidden, hidden): column j scaled by s_j^-1/2
        return cls(mean.float(), transform[:, :dims].float())

    def __call__(self, vectors: torch.Tensor) -> torch.Tensor:
        """(n, hidden) -> (n, dims) whitened vectors."""
        return (vectors - self.mean) @ self.transform
