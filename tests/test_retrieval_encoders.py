"""Sentence vectors: pooling as defined, batching that changes nothing, the encoders' folders and
fingerprints, whitening's mean and covariance, anisotropy per layer, and MiniLM's vectors equal to
sentence-transformers'."""

import pytest
import torch
from conftest import TEXTS, tiny_encoder_folder

import minibert
from minibert.retrieval.encoders import (
    Whitening,
    anisotropy,
    encode,
    encoder_folder,
    layer_vectors,
    load_encoder,
    random_encoder,
)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return load_encoder(tiny_encoder_folder(tmp_path_factory.mktemp("tiny")))


def test_pooling_is_the_cls_vector_or_the_mean_of_the_real_tokens(tiny):
    batch = tiny.tokenizer.encode_batch(TEXTS)
    with torch.no_grad():
        hidden = tiny.model(**batch).last_hidden_state  # (texts, seq, hidden)
    mask = batch["attention_mask"].unsqueeze(-1).float()
    torch.testing.assert_close(encode(tiny, TEXTS, "cls"), hidden[:, 0])
    torch.testing.assert_close(encode(tiny, TEXTS, "mean"), (hidden * mask).sum(1) / mask.sum(1))


def test_pooler_pooling_is_berts_pooler_on_the_cls_vector(tiny):
    batch = tiny.tokenizer.encode_batch(TEXTS)
    with torch.no_grad():
        pooled = tiny.model(**batch).pooler_output  # dense + tanh on [CLS]
    torch.testing.assert_close(encode(tiny, TEXTS, "pooler"), pooled, atol=1e-6, rtol=0)


def test_an_old_pooling_name_is_refused_naming_the_new_one(tiny):
    """'first' was the raw [CLS] vector where 'cls' meant BERT's pooler; now 'cls' is the raw
    vector and 'pooler' the pooler, in every module."""
    from minibert.config import BertConfig
    from minibert.frozen_features import sentence_features
    from minibert.retrieval.bi_encoder import BiEncoder
    from minibert.retrieval.index import passage_index

    refused = r"pooling 'first' is now 'cls' \(the raw \[CLS\] vector; 'pooler' is BERT's pooler"
    with pytest.raises(ValueError, match=refused):
        encode(tiny, TEXTS, "first")
    with pytest.raises(ValueError, match=refused):
        passage_index(tiny, "first")
    with pytest.raises(ValueError, match=refused):
        BiEncoder(BertConfig(**tiny.model.config.to_dict()), pooling="first")
    with pytest.raises(ValueError, match=refused):
        sentence_features(tiny.model, tiny.tokenizer, TEXTS, "first")
    with pytest.raises(ValueError, match=refused):
        sentence_features(tiny.model, tiny.tokenizer, TEXTS, ("mean", "first"))


def test_cached_vectors_are_read_back_and_damaged_ones_computed_again(tiny, tmp_path, capsys):
    from safetensors.torch import save_file

    first = encode(tiny, TEXTS, "cls", cache=tmp_path)
    (file,) = tmp_path.glob("vectors-*.safetensors")
    save_file({"vectors": torch.zeros(5, 32)}, str(file))  # a kept file is read, not computed
    assert encode(tiny, TEXTS, "cls", cache=tmp_path).abs().sum() == 0
    encode(tiny, TEXTS, "mean", cache=tmp_path)  # another pooling: another file
    assert len(list(tmp_path.glob("vectors-*.safetensors"))) == 2
    capsys.readouterr()
    file.write_bytes(b"not a tensor")
    torch.testing.assert_close(encode(tiny, TEXTS, "cls", cache=tmp_path), first)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the file of vectors {file} is damaged" in err
    with pytest.raises(ValueError, match="is a file; give a folder"):
        encode(tiny, TEXTS, cache=file)


def test_batches_of_similar_length_give_each_text_its_own_vector(tiny):
    one_by_one = torch.cat([encode(tiny, [t]) for t in TEXTS])
    torch.testing.assert_close(encode(tiny, TEXTS, batch_size=2), one_by_one, atol=1e-5, rtol=0)
    assert encode(tiny, TEXTS).shape == (5, 32)
    with pytest.raises(ValueError, match="pooling must be one of"):
        encode(tiny, TEXTS, "max")
    with pytest.raises(TypeError, match="encode\\(\\[text\\]\\)"):
        encode(tiny, "one text")


def test_encode_takes_a_folder_and_the_public_name(tiny):
    torch.testing.assert_close(minibert.encode(tiny.folder, TEXTS[:2]), encode(tiny, TEXTS[:2]))


def test_a_folder_that_is_not_an_encoder_is_refused_saying_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match="is not an encoder: expected 'minilm'"):
        encoder_folder(tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="has a config.json but no weights"):
        encoder_folder(tmp_path)
    assert encoder_folder("course").name == "course_checkpoint"


def test_the_fingerprint_follows_the_weights(tiny, tmp_path):
    again = load_encoder(tiny.folder)
    assert again.fingerprint() == tiny.fingerprint()
    other = load_encoder(tiny_encoder_folder(tmp_path, seed=1))
    assert other.fingerprint() != tiny.fingerprint()
    fresh = random_encoder(tiny, seed=3)
    assert fresh.model.config == tiny.model.config and fresh.folder is None
    assert fresh.fingerprint() not in (tiny.fingerprint(), other.fingerprint())


def test_whitening_gives_mean_zero_and_identity_covariance():
    g = torch.Generator().manual_seed(0)
    mixing = torch.randn(6, 6, generator=g)
    vectors = torch.randn(500, 6, generator=g) @ mixing + 3.0  # correlated, off-centre
    white = Whitening.fit(vectors)
    out = white(vectors).double()
    torch.testing.assert_close(out.mean(0), torch.zeros(6, dtype=torch.float64), atol=1e-4, rtol=0)
    covariance = (out - out.mean(0)).T @ (out - out.mean(0)) / len(out)
    torch.testing.assert_close(covariance, torch.eye(6, dtype=torch.float64), atol=1e-3, rtol=0)
    assert Whitening.fit(vectors, dims=2)(vectors).shape == (500, 2)
    with pytest.raises(ValueError, match="n >= 2"):
        Whitening.fit(vectors[:1])


def test_anisotropy_is_the_mean_cosine_of_random_pairs_at_every_layer(tiny):
    layers = layer_vectors(tiny, TEXTS)
    assert layers.shape == (3, 5, 32)  # embeddings + 2 layers
    torch.testing.assert_close(layers[-1], encode(tiny, TEXTS), atol=1e-5, rtol=0)
    found = anisotropy(tiny, TEXTS, pairs=50, seed=1)
    g = torch.Generator().manual_seed(1)
    a = torch.randint(5, (50,), generator=g)
    b = (a + torch.randint(1, 5, (50,), generator=g)) % 5
    assert (a != b).all()
    unit = torch.nn.functional.normalize(layers, dim=-1)
    expected = (unit[:, a] * unit[:, b]).sum(-1).mean(1)
    assert found == pytest.approx(expected.tolist(), abs=1e-6)
    with pytest.raises(ValueError, match="at least 2 texts"):
        anisotropy(tiny, TEXTS[:1])


def test_minilm_mean_pooled_vectors_equal_sentence_transformers():
    from sentence_transformers import SentenceTransformer

    texts = ["who built the eiffel tower?", "a tower of iron " * 120, "paris"]  # one past 256
    minilm = load_encoder("minilm")
    reference = SentenceTransformer(str(minilm.folder), device="cpu", local_files_only=True)
    expected = torch.as_tensor(reference.encode(texts))  # (3, 384), unit length
    ours = torch.nn.functional.normalize(encode(minilm, texts, "mean"), dim=-1)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=0)
