"""The passage index: saved beside its folder, reloaded, rebuilt when stale; faiss and torch find the
same passages; search and `minibert search` on a small fixture, and bad input in one line; the
approximate indexes (HNSW, IVF) keep the exact top 10 on well-separated vectors, and leave the
exact path as it was."""

from pathlib import Path

import pytest
import torch
from conftest import cli, tiny_encoder_folder

import minibert
from minibert.retrieval import Passage, corpus, retriever_of
from minibert.retrieval import index as retrieval_index
from minibert.retrieval.encoders import load_encoder
from minibert.retrieval.index import PassageIndex, Searcher, index_path, passage_index

PASSAGES = [
    Passage("Cats", 0, "the cat sat on the mat"),
    Passage("Dogs", 0, "a dog sat on a log and the dog slept on the log all day"),
    Passage("Pets", 0, "cats and dogs"),
    Passage("Paris", 0, "the tower is in paris"),
    Passage("Paris", 1, "paris"),
]


@pytest.fixture
def folder(tmp_path):
    return tiny_encoder_folder(tmp_path / "tiny")


def test_the_index_is_saved_beside_the_folder_and_read_back(folder, monkeypatch):
    encoder = load_encoder(folder)
    built = passage_index(encoder, "mean", PASSAGES)
    path = index_path(folder, "mean")
    assert path.parent == folder.parent and path.name == ".tiny.wiki-search-mean.safetensors"
    assert built.vectors.shape == (5, 32)
    torch.testing.assert_close(built.vectors.norm(dim=1), torch.ones(5))

    def no_encoding(*args, **kwargs):
        raise AssertionError("a fresh index is read, not built again")

    monkeypatch.setattr(retrieval_index, "encode", no_encoding)
    again = passage_index(load_encoder(folder), "mean", PASSAGES)
    assert torch.equal(again.vectors, built.vectors)
    assert (again.corpus, again.encoder, again.pooling) == (built.corpus, built.encoder, "mean")


def test_a_stale_index_is_built_again(folder, tmp_path):
    encoder = load_encoder(folder)
    first = passage_index(encoder, "mean", PASSAGES)
    other_corpus = passage_index(encoder, "mean", PASSAGES[:4])  # another corpus version
    assert other_corpus.vectors.shape[0] == 4 and other_corpus.corpus != first.corpus
    assert PassageIndex.load(index_path(folder, "mean")).vectors.shape[0] == 4  # replaced
    retrained = tiny_encoder_folder(folder, seed=1)  # other weights in the same folder
    rebuilt = passage_index(load_encoder(retrained), "mean", PASSAGES[:4])
    assert rebuilt.encoder != other_corpus.encoder
    assert not torch.allclose(rebuilt.vectors, other_corpus.vectors)
    index_path(folder, "mean").write_bytes(b"not safetensors")  # unreadable: built again
    assert passage_index(load_encoder(folder), "mean", PASSAGES[:4]).vectors.shape == (4, 32)


def test_a_file_that_is_not_an_index_is_refused(tmp_path):
    (tmp_path / "x.safetensors").write_bytes(b"\x00" * 16)
    with pytest.raises(ValueError, match="is not an index"):
        PassageIndex.load(tmp_path / "x.safetensors")


def test_faiss_and_torch_find_the_same_passages():
    pytest.importorskip("faiss", reason="faiss-cpu is not installed (pip install -e '.[search]')")
    g = torch.Generator().manual_seed(0)
    index = PassageIndex.of(torch.randn(300, 16, generator=g), "corpus", "encoder", "mean")
    queries = torch.randn(20, 16, generator=g)
    faiss_scores, faiss_ids = index.search(queries, 10, backend="faiss")
    torch_scores, torch_ids = index.search(queries, 10, backend="torch")
    assert torch.equal(faiss_ids, torch_ids)
    torch.testing.assert_close(faiss_scores, torch_scores, atol=1e-5, rtol=0)
    assert retrieval_index.backends()[0] == "faiss"


def test_search_finds_a_passage_by_its_own_text(folder):
    searcher = Searcher(folder, "mean", PASSAGES)
    for backend in retrieval_index.backends():
        hits = searcher("the tower is in paris", top_k=3, backend=backend)
        assert [h.rank for h in hits] == [1, 2, 3]
        assert hits[0].passage == PASSAGES[3] and hits[0].score == pytest.approx(1.0, abs=1e-5)
        assert hits[0].score >= hits[1].score >= hits[2].score
    with pytest.raises(ValueError, match="the query is empty"):
        searcher("   ")


def test_mb_search_and_the_command_print_rank_score_and_article(folder, monkeypatch):
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    hits = minibert.search(folder, "a dog sat on a log and the dog slept on the log all day", 2)
    assert hits[0].title == "Dogs" and len(hits) == 2
    done = cli("search", str(folder), "the cat sat on the mat", "--top-k", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("1\t1.000\tCats, paragraph 1")
    assert lines[1] == "    the cat sat on the mat"
    assert lines[2].startswith("2\t")


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_one_line(folder, query):
    done = cli("search", str(folder), query)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("minibert search: error: the query is empty")


def test_a_folder_that_is_not_an_encoder_is_one_line(tmp_path):
    done = cli("search", str(tmp_path), "who built the tower?")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "is not an encoder" in done.stderr
    (tmp_path / "config.json").write_text('{"hidden_size": "big"}')
    (tmp_path / "model.safetensors").write_bytes(b"\x00" * 16)
    done = cli("search", str(tmp_path), "who built the tower?")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"minibert search: error: cannot search with {tmp_path}")


def test_top_k_is_at_most_the_paragraphs_searched_said_in_one_line(folder, monkeypatch):
    monkeypatch.setattr(corpus, "wiki_passages", lambda: PASSAGES)
    assert len(minibert.search(folder, "the cat", top_k=5)) == 5
    with pytest.raises(ValueError, match=r"top_k must be at most 5 \(the paragraphs searched\)"):
        minibert.search(folder, "the cat", top_k=10**20)
    done = cli("search", str(folder), "the cat", "--top-k", str(10**20))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "top_k must be at most 5 (the paragraphs searched)" in done.stderr


def test_a_damaged_index_is_built_again_with_one_line_naming_the_file(folder, capsys):
    """NaN rows, zero rows, 100 rows of 7,396, an extra row, the wrong width, behind intact
    headers: each was searched (nan scores, every score 0, a fraction of the corpus, an
    IndexError) or failed on every run without naming the hidden file."""
    from safetensors.torch import save_file

    encoder = load_encoder(folder)
    good = passage_index(encoder, "mean", PASSAGES)
    path = index_path(folder, "mean")
    meta = {"corpus": good.corpus, "encoder": good.encoder, "pooling": "mean"}
    nan = good.vectors.clone()
    nan[2] = float("nan")
    damaged = {
        "NaN": nan,
        "zeros": torch.zeros(5, 32),
        "too few rows": good.vectors[:3].clone(),
        "an extra row": torch.cat([good.vectors, good.vectors[:1]]),
        "the wrong width": torch.nn.functional.normalize(torch.randn(5, 16), dim=-1),
    }
    capsys.readouterr()
    for what, vectors in damaged.items():
        save_file({"vectors": vectors.contiguous()}, str(path), meta)
        again = passage_index(load_encoder(folder), "mean", PASSAGES)
        torch.testing.assert_close(again.vectors, good.vectors, atol=1e-6, rtol=0)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"the index {path} is damaged" in err, (what, err)
        assert "building it again" in err
        assert PassageIndex.load(path).problem(5, 32) is None, what  # the file is mended
    assert passage_index(load_encoder(folder), "mean", PASSAGES) is not None
    assert capsys.readouterr().err == ""  # a sound index is read, silently


def test_a_partial_index_left_by_a_kill_is_removed_by_the_next_run_and_ignored_by_git(folder):
    """kill -9 while the index was written left `.NAME.XXXX.partial` beside the folder for good,
    and `git status` showed it."""
    import os
    import subprocess
    import time

    path = index_path(folder, "mean")
    old = path.parent / f".{path.name}.k9x2.partial"
    old.write_bytes(b"half an index")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    young = path.parent / f".{path.name}.live.partial"  # another process's build, being written
    young.write_bytes(b"being written")
    passage_index(load_encoder(folder), "mean", PASSAGES)  # built, then read on the next run
    assert not old.exists() and young.exists()
    old.write_bytes(b"half an index")
    os.utime(old, (hour_ago, hour_ago))
    passage_index(load_encoder(folder), "mean", PASSAGES)  # read: its leftovers cleaned too
    assert not old.exists()
    root = Path(__file__).resolve().parent.parent
    ignored = root / "data" / f".{path.name}.k9x2.partial"
    done = subprocess.run(["git", "check-ignore", "-q", str(ignored)], cwd=root)
    assert done.returncode == 0  # ignored


def test_a_read_only_folder_never_claims_the_index_is_kept(folder, monkeypatch, capsys):
    """In a read-only folder `search` said the index was "kept" where nothing was kept, and
    built it again (45-55 s) on every run without a word."""

    def read_only(self, path):
        raise OSError(f"cannot write {path}: PermissionError: [Errno 13] Permission denied")

    monkeypatch.setattr(PassageIndex, "save", read_only)
    passage_index(load_encoder(folder), "mean", PASSAGES, quiet=False)
    err = capsys.readouterr().err
    assert "kept in" not in err and "not kept" in err and "built again on every run" in err
    assert not index_path(folder, "mean").exists()


def _clusters(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """1,000 unit vectors in 32 dimensions, 25 around each of 40 random directions (well
    separated), and 50 queries near 50 of those directions."""
    g = torch.Generator().manual_seed(seed)
    centres = torch.nn.functional.normalize(torch.randn(40, 32, generator=g), dim=-1)
    vectors = centres.repeat_interleave(25, 0) + 0.1 * torch.randn(1000, 32, generator=g)
    queries = centres[torch.randint(40, (50,), generator=g)] + 0.1 * torch.randn(
        50, 32, generator=g
    )
    return vectors, queries


@pytest.mark.parametrize("backend", ["hnsw", "ivf"])
def test_approximate_search_keeps_the_exact_top_10_on_well_separated_clusters(backend):
    pytest.importorskip("faiss", reason="faiss-cpu is not installed (pip install -e '.[search]')")
    vectors, queries = _clusters()
    index = PassageIndex.of(vectors, "corpus", "encoder", "mean")
    exact_scores, exact = index.search(queries, 10, backend="torch")
    scores, found = index.search(queries, 10, backend=backend)
    assert found.shape == scores.shape == (50, 10) and found.dtype == torch.long
    assert retrieval_index.recall_of_exact(found, exact) >= 0.95
    assert (scores[:, :-1] >= scores[:, 1:] - 1e-6).all()  # best first
    own = (vectors[found] * torch.nn.functional.normalize(queries, dim=-1)[:, None]).sum(-1)
    torch.testing.assert_close(scores, own / vectors[found].norm(dim=-1), atol=1e-4, rtol=0)
    again_scores, again = index.search(queries, 10, backend="torch")  # the exact path unchanged
    assert torch.equal(again, exact) and torch.equal(again_scores, exact_scores)
    assert torch.equal(index.search(queries, 10, backend="faiss")[1], exact)


def test_recall_of_exact_is_the_share_of_the_exact_top_k_found():
    found = torch.tensor([[1, 2, 3], [4, 5, 6]])
    exact = torch.tensor([[3, 2, 9], [7, 8, 9]])
    assert retrieval_index.recall_of_exact(found, exact) == pytest.approx((2 / 3 + 0) / 2)
    assert retrieval_index.recall_of_exact(exact, exact) == 1.0
    with pytest.raises(ValueError, match="both be \\(queries, k\\) ids"):
        retrieval_index.recall_of_exact(found, exact[:, :2])


def test_an_ivf_search_whose_lists_hold_too_few_is_refused_and_a_bad_backend_named():
    pytest.importorskip("faiss", reason="faiss-cpu is not installed (pip install -e '.[search]')")
    vectors = torch.randn(20, 8, generator=torch.Generator().manual_seed(0))
    ivf = retrieval_index.ApproximateIndex(vectors, "ivf", lists=10)  # one list probed of 10
    with pytest.raises(ValueError, match="raise probes"):
        ivf.search(vectors[:2], 15)
    ivf.probes = 10  # every list: every vector, exactly as the flat index ranks them
    exact = PassageIndex.of(vectors, "c", "e", "mean").search(vectors[:2], 15, backend="torch")
    assert torch.equal(ivf.search(vectors[:2], 15)[1], exact[1])
    with pytest.raises(ValueError, match="lists must be in \\[1, 20\\]"):
        retrieval_index.ApproximateIndex(vectors, "ivf", lists=21)
    with pytest.raises(ValueError, match="kind must be one of \\('hnsw', 'ivf'\\)"):
        retrieval_index.ApproximateIndex(vectors, "lsh")
    index = PassageIndex.of(vectors, "c", "e", "mean")
    with pytest.raises(ValueError, match="backend must be one of \\('faiss', 'torch', 'hnsw', 'ivf'\\)"):  # fmt: skip
        index.search(vectors[:2], 3, backend="annoy")


@pytest.mark.parametrize("backend", ["hnsw", "ivf"])
def test_a_searcher_and_the_registry_search_approximately_when_told(folder, backend):
    pytest.importorskip("faiss", reason="faiss-cpu is not installed (pip install -e '.[search]')")
    searcher = Searcher(folder, "mean", PASSAGES, backend=backend)
    hits = searcher("the tower is in paris", top_k=3)
    assert hits[0].passage == PASSAGES[3] and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert backend in searcher.index._approximate  # built on first use, then kept
    found = retriever_of(folder, PASSAGES, backend=backend).search(["the cat sat on the mat"], 2)
    assert found.ids[0, 0] == 0
    with pytest.raises(ValueError, match="backend must be one of"):
        Searcher(folder, "mean", PASSAGES, backend="annoy")
