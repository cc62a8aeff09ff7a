"""The passage index and the dense retriever: every paragraph's vector, built once, saved beside the
encoder's folder, and searched by inner product (cosine: the vectors have length 1).

    searcher = Searcher("minilm")                 # loads the encoder and its index (builds it once)
    searcher.search(["who wrote the declaration?"], k=5)   # Ranking(ids, scores): the interface
    for hit in searcher("who wrote the declaration of independence?", top_k=5):
        print(hit.rank, round(hit.score, 3), hit.title, hit.text[:80])
    search("minilm", "who wrote ...")            # the same, in one call (mb.search)

The saved index is a safetensors file beside the folder (``.FOLDER.wiki-search-POOLING
.safetensors``, as the corpus reader keeps its parse beside the dump) that records the corpus
version and the encoder's fingerprint; when either differs, the index is built again. Searching
goes through faiss' flat inner-product index (``faiss.IndexFlatIP``) when faiss-cpu is installed,
as a corpus past memory would need, and through a plain matrix product and top-k otherwise: the
two give the same passages.

Both are exact: every passage is scored. An approximate index scores a few and may miss a passage
of the exact top k, for speed on a large corpus (faiss, ``APPROXIMATE``): 'hnsw' walks a graph of
near neighbours (Malkov & Yashunin, 2018), 'ivf' clusters the vectors and searches the clusters
nearest the query (an inverted file). ``recall_of_exact`` says how much of the exact top k it kept.

    index.search(queries, 10, backend="hnsw")        # the same call; or Searcher(..., backend="ivf")
    approximate = ApproximateIndex(vectors, "ivf", probes=16)   # its settings, by hand
    recall_of_exact(approximate.search(queries, 10)[1], index.search(queries, 10)[1])   # in [0, 1]
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from minibert.retrieval import corpus
from minibert.retrieval.corpus import Passage, corpus_version
from minibert.retrieval.encoders import Encoder, check_pooling, encode, load_encoder
from minibert.retrieval.measures import Hit, Ranking, hits_of
from minibert.utils import atomic_write, check_text, check_top_k, read_kept, vectors_problem

__all__ = [
    "APPROXIMATE",
    "ApproximateIndex",
    "PassageIndex",
    "Searcher",
    "backends",
    "index_path",
    "passage_index",
    "recall_of_exact",
    "search",
]

INDEX_KIND = "wiki-search"
PARTIAL_SECONDS = 60  # a save's temporary file older than this was left by a killed process
APPROXIMATE = ("hnsw", "ivf")  # faiss' approximate indexes: a graph, or clusters (inverted file)
HNSW_NEIGHBOURS = 32  # HNSW's M: the links of each vector in the graph
HNSW_EF_SEARCH = 64  # HNSW's efSearch: the candidates kept while walking the graph (at least k)
IVF_TRAINING_PER_LIST = 39  # faiss' k-means asks for 39 training vectors per cluster at least


def backends() -> tuple[str, ...]:
    """The exact search backends this environment has: 'torch' always, 'faiss' with faiss-cpu
    (with faiss, search also takes an approximate backend: APPROXIMATE)."""
    return ("faiss", "torch") if importlib.util.find_spec("faiss") else ("torch",)


def _check_backend(backend: str) -> str:
    """backend, when this environment has it (an approximate one needs faiss)."""
    known = (*backends(), *APPROXIMATE) if "faiss" in backends() else backends()
    if backend in APPROXIMATE and backend not in known:
        raise ValueError(f"backend {backend!r} is faiss' approximate index: pip install faiss-cpu")
    if backend not in known:
        raise ValueError(f"backend must be one of {known} here, got {backend!r}")
    return backend


class ApproximateIndex:
    """faiss' approximate inner-product search over (passages, hidden) unit vectors: 'hnsw' (a
    graph, neighbours links a vector, ef_search candidates kept while searching) or 'ivf' (lists
    k-means clusters, the probes nearest the query searched; by default lists = sqrt(passages),
    at most one per IVF_TRAINING_PER_LIST vectors, and probes = lists // 8). ef_search and probes
    may be changed after building: each search reads them."""

    def __init__(
        self,
        vectors: torch.Tensor,
        kind: str = "hnsw",
        neighbours: int = HNSW_NEIGHBOURS,
        lists: int | None = None,
    ):
        import faiss

        if kind not in APPROXIMATE:
            raise ValueError(f"kind must be one of {APPROXIMATE}, got {kind!r}")
        if vectors.dim() != 2 or len(vectors) < 1:
            raise ValueError(f"vectors must be (passages, hidden), got {tuple(vectors.shape)}")
        unit = torch.nn.functional.normalize(vectors.float(), dim=-1).contiguous().numpy()
        n, hidden = unit.shape
        if lists is not None and not 1 <= lists <= n:
            raise ValueError(f"lists must be in [1, {n}] (the vectors), got {lists!r}")
        self.kind, self.passages = kind, n
        self.ef_search, self.probes, self.lists = HNSW_EF_SEARCH, None, None
        if kind == "hnsw":
            self.index = faiss.IndexHNSWFlat(hidden, neighbours, faiss.METRIC_INNER_PRODUCT)
        else:
            self.lists = lists or max(1, min(round(n**0.5), n // IVF_TRAINING_PER_LIST))
            self.probes = max(1, self.lists // 8)
            quantizer = faiss.IndexFlatIP(hidden)
            self.index = faiss.IndexIVFFlat(
                quantizer, hidden, self.lists, faiss.METRIC_INNER_PRODUCT
            )
            self.index.train(unit)  # k-means: the lists' centroids
            self.quantizer = quantizer  # kept alive beside the index that points at it
        self.index.add(unit)

    def search(self, queries: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, hidden) -> (queries, top_k) cosines and passage indices, best first, as
        PassageIndex.search; an IVF search whose probed lists hold fewer than top_k passages is
        refused (probe more lists)."""
        top_k = min(top_k, self.passages)
        if self.kind == "hnsw":
            self.index.hnsw.efSearch = max(self.ef_search, top_k)
        else:
            self.index.nprobe = min(self.probes, self.lists)
        unit = torch.nn.functional.normalize(queries.float(), dim=-1).contiguous().numpy()
        scores, ids = self.index.search(unit, top_k)
        if (ids < 0).any():
            raise ValueError(
                f"the {self.kind} index found fewer than {top_k} passages for a query (its "
                f"{self.probes} probed lists of {self.lists} hold fewer): raise probes"
            )
        return torch.from_numpy(scores), torch.from_numpy(ids).long()


def recall_of_exact(found: torch.Tensor, exact: torch.Tensor) -> float:
    """The share of the exact top k that a search found: (queries, k) passage ids of each, the
    mean over queries of ``|found_i & exact_i| / k`` (1.0: every exact passage found)."""
    if found.dim() != 2 or found.shape != exact.shape or found.numel() == 0:
        raise ValueError(
            f"found and exact must both be (queries, k) ids, got {tuple(found.shape)} and "
            f"{tuple(exact.shape)}"
        )
    kept = (found[:, :, None] == exact[:, None, :]).any(1)  # (queries, k): exact j found
    return float(kept.double().mean())


@dataclass
class PassageIndex:
    """The passages' unit vectors (passages, hidden), with what made them: the corpus version, the
    encoder's fingerprint and the pooling."""

    vectors: torch.Tensor  # (passages, hidden) float32, each row of length 1
    corpus: str
    encoder: str
    pooling: str
    _faiss: Any = field(default=None, repr=False)
    _approximate: dict[str, ApproximateIndex] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, vectors: torch.Tensor, corpus: str, encoder: str, pooling: str) -> PassageIndex:
        """An index of (passages, hidden) vectors, scaled to length 1 (inner product = cosine)."""
        unit = torch.nn.functional.normalize(vectors.float(), dim=-1).contiguous()
        return cls(unit, corpus, encoder, pooling)

    def search(
        self, queries: torch.Tensor, top_k: int = 5, backend: str | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(queries, hidden) vectors -> (queries, top_k) cosines and passage indices, best first;
        backend 'faiss' (the default where installed) or 'torch', both exact, or an approximate
        one ('hnsw', 'ivf': APPROXIMATE, with faiss; built with its defaults on first use)."""
        backend = _check_backend(backend or backends()[0])
        if queries.dim() != 2 or queries.shape[1] != self.vectors.shape[1]:
            raise ValueError(
                f"queries must be (queries, {self.vectors.shape[1]}), got {tuple(queries.shape)}"
            )
        top_k = min(top_k, len(self.vectors))
        if backend in APPROXIMATE:  # built the first time it is asked for, then kept
            if backend not in self._approximate:
                self._approximate[backend] = ApproximateIndex(self.vectors, backend)
            return self._approximate[backend].search(queries, top_k)
        unit = torch.nn.functional.normalize(queries.float(), dim=-1)
        if backend == "torch":
            return (unit @ self.vectors.T).topk(top_k, dim=1)  # (queries, passages) -> top k
        if self._faiss is None:
            import faiss

            self._faiss = faiss.IndexFlatIP(self.vectors.shape[1])
            self._faiss.add(self.vectors.numpy())
        scores, ids = self._faiss.search(unit.contiguous().numpy(), top_k)
        return torch.from_numpy(scores), torch.from_numpy(ids).long()

    def problem(self, passages: int, hidden: int) -> str | None:
        """Why these vectors cannot be the index of passages paragraphs by an encoder of hidden
        width (the shape, a NaN or inf, a row not of length 1: a damaged file), or None."""
        return vectors_problem(self.vectors, passages, hidden, of="passages", unit=True)

    def save(self, path: str | Path) -> Path:
        """Write the vectors and what made them to a safetensors file, atomically."""
        from safetensors.torch import save_file

        metadata = {"corpus": self.corpus, "encoder": self.encoder, "pooling": self.pooling}
        return atomic_write(path, lambda tmp: save_file({"vectors": self.vectors}, tmp, metadata))

    @classmethod
    def load(cls, path: str | Path) -> PassageIndex:
        """Read an index written by save (a missing or unreadable file: OSError or ValueError)."""
        from safetensors import SafetensorError, safe_open

        try:
            with safe_open(str(path), framework="pt") as f:
                meta = f.metadata() or {}
                vectors = f.get_tensor("vectors")
        except SafetensorError as exc:
            raise ValueError(f"{path} is not an index: {exc}") from None
        if not {"corpus", "encoder", "pooling"} <= set(meta):
            raise ValueError(f"{path} is not an index of ours: its metadata lacks what made it")
        return cls(vectors, meta["corpus"], meta["encoder"], meta["pooling"])


def index_path(folder: str | Path, pooling: str) -> Path:
    """Where an encoder folder's index is kept: beside it, a hidden file named after it."""
    folder = Path(folder).resolve()
    return folder.parent / f".{folder.name}.{INDEX_KIND}-{pooling}.safetensors"


def passage_index(
    encoder: Encoder,
    pooling: str = "mean",
    passages: Sequence[Passage] | None = None,
    quiet: bool = True,
) -> PassageIndex:
    """The index of the passages (wiki_passages() when not given) by this encoder and pooling:
    read from beside the encoder's folder when its corpus version and encoder fingerprint are
    these, else built (each passage encoded) and saved there (kept in memory only where the
    folder is read-only, or for an encoder built in memory)."""
    check_pooling(pooling)
    passages = corpus.wiki_passages() if passages is None else passages
    version, fingerprint = corpus_version(passages), encoder.fingerprint()
    path = index_path(encoder.folder, pooling) if encoder.folder is not None else None
    if path is not None:
        _remove_stale_partials(path)  # a hard-killed save's, on every run
    if path is not None and path.is_file():
        shape = (len(passages), encoder.model.config.hidden_size)
        if (kept := _kept(path, (version, fingerprint, pooling), shape)) is not None:
            return kept
    if not quiet:
        print(
            f"building the index of {len(passages):,} passages with {encoder.name} "
            f"({pooling} pooling)",
            file=sys.stderr,
        )
    vectors = encode(encoder, [p.text for p in passages], pooling)
    index = PassageIndex.of(vectors, version, fingerprint, pooling)
    if path is not None:
        try:
            index.save(path)
            kept = f"kept in {path}: later searches read it"
        except OSError as exc:  # a read-only folder: the index stays in memory, this run only
            kept = f"not kept ({exc}): it is built again on every run; copy the folder somewhere writable"
        if not quiet:
            print(kept, file=sys.stderr)
    return index


def _remove_stale_partials(path: Path) -> None:
    """Delete what a hard-killed save of the index at path left beside it (atomic_write's hidden
    `.NAME.*.partial`), when older than PARTIAL_SECONDS: a younger one may be another process's
    build, being written now."""
    now = time.time()
    for partial in path.parent.glob(f".{glob.escape(path.name)}.*.partial"):
        with contextlib.suppress(OSError):  # gone already, or a read-only folder
            if now - partial.stat().st_mtime > PARTIAL_SECONDS:
                partial.unlink()


def _kept(path: Path, made_by: tuple[str, str, str], shape: tuple[int, int]) -> PassageIndex | None:
    """The index kept at path, when made_by (corpus version, encoder fingerprint, pooling) made it
    and its vectors pass the one check on load (PassageIndex.problem); else None, to build it
    again: silently when stale, with one line naming the file when damaged (utils.read_kept, the
    rule of every cache)."""

    def load(file: Path) -> PassageIndex | None:
        kept = PassageIndex.load(file)
        if (kept.corpus, kept.encoder, kept.pooling) != made_by:
            return None  # another corpus or encoder: stale, not damaged
        if damage := kept.problem(*shape):
            raise ValueError(damage)
        return kept

    return read_kept(path, load, "index", "building it again")


class Searcher:
    """The dense retriever: an encoder, its passage index and the passages. ``search(queries, k)``
    is the retrievers' one interface; call it with one query for its top hits. backend: how the
    index is searched (None: exactly; 'hnsw' or 'ivf': approximately, APPROXIMATE)."""

    measure = "cosine"

    def __init__(
        self,
        encoder: Encoder | str | Path,
        pooling: str = "mean",
        passages: Sequence[Passage] | None = None,
        quiet: bool = True,
        backend: str | None = None,
    ):
        self.backend = None if backend is None else _check_backend(backend)
        self.encoder = encoder if isinstance(encoder, Encoder) else load_encoder(encoder)
        self.passages = corpus.wiki_passages() if passages is None else list(passages)
        self.pooling = pooling
        self.index = passage_index(self.encoder, pooling, self.passages, quiet)

    def search(self, queries: Sequence[str], k: int, backend: str | None = None) -> Ranking:
        """Each query's k best passages by cosine, best first: Ranking (queries, k); backend: the
        index's (default: the Searcher's, else exact search: faiss' flat index or torch)."""
        check_top_k(k, len(self.passages), "paragraphs searched")
        vectors = encode(self.encoder, list(queries), self.pooling)  # (queries, hidden)
        scores, ids = self.index.search(vectors, k, backend or self.backend)
        return Ranking(ids, scores)

    def __call__(self, query: str, top_k: int = 5, backend: str | None = None) -> list[Hit]:
        """The top_k passages for a query, best first."""
        check_text(query, "the query")
        return hits_of(self.search([query], top_k, backend), self.passages)[0]


def search(
    encoder: Encoder | str | Path, query: str, top_k: int = 5, pooling: str = "mean"
) -> list[Hit]:
    """The top_k paragraphs of the course's Wikipedia for a query, by an encoder (a folder, or
    'minilm' or 'course'), best first; the index is built the first time, then read."""
    check_text(query, "the query")  # before loading the encoder and its index
    return Searcher(encoder, pooling)(query, top_k)
