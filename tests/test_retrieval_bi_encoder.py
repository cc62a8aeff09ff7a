"""The bi-encoder: its default loss is the in-batch loss of the vectors encode gives, any other loss
module plugs in (one that reads a batch of texts alone and their targets too), its batches are
padded as stated, every used weight learns, a short run teaches a tiny encoder to find each toy
query's passage, and a hard negative per pair is encoded and joins the loss (DPR's)."""

import pytest
import torch
from conftest import TEXTS, tiny_encoder_folder

from minibert.retrieval import in_batch_loss
from minibert.retrieval.bi_encoder import BiEncoder, collate_pairs, pair_examples, train_encoder
from minibert.retrieval.encoders import encode, load_encoder

PAIRS = [(text.split()[-1] + " " + text.split()[0], text) for text in TEXTS]


@pytest.fixture
def tiny(tmp_path):
    return load_encoder(tiny_encoder_folder(tmp_path / "tiny"))


def test_the_bi_encoders_loss_is_the_in_batch_loss_of_the_encoded_vectors(tiny):
    batch = collate_pairs(pair_examples(tiny, PAIRS), tiny.tokenizer.pad_token_id)
    model = BiEncoder.around(tiny.model, "mean", temperature=0.1).eval()
    with torch.no_grad():
        out = model(**batch)
    queries = encode(tiny, [q for q, _ in PAIRS])
    passages = encode(tiny, [p for _, p in PAIRS])
    torch.testing.assert_close(out.query_vectors, queries, atol=1e-5, rtol=0)
    torch.testing.assert_close(out.passage_vectors, passages, atol=1e-5, rtol=0)
    torch.testing.assert_close(out.loss, in_batch_loss(queries, passages, 0.1), atol=1e-5, rtol=0)


class SquaredDistance(torch.nn.Module):
    """A loss that is not the in-batch one: the summed squared distance of each pair's vectors,
    or of each text's vector to its target when the batch has texts alone."""

    def forward(self, query_vectors, passage_vectors, targets=None):
        other = query_vectors if targets is None else targets
        return (other - passage_vectors).square().sum()


def test_another_loss_plugs_into_the_bi_encoder(tiny):
    batch = collate_pairs(pair_examples(tiny, PAIRS), tiny.tokenizer.pad_token_id)
    model = BiEncoder.around(tiny.model, "cls", loss=SquaredDistance()).eval()
    with torch.no_grad():
        out = model(**batch)
    queries = encode(tiny, [q for q, _ in PAIRS], "cls")
    passages = encode(tiny, [p for _, p in PAIRS], "cls")
    want = (queries - passages).square().sum()
    torch.testing.assert_close(out.loss, want, atol=1e-4, rtol=1e-5)
    targets = torch.ones(len(PAIRS), 32)  # texts alone, each with a target vector
    examples = [{"input_ids": e["input_ids"], "targets": t} for e, t in zip(pair_examples(tiny, PAIRS), targets)]  # fmt: skip
    alone = collate_pairs(examples, tiny.tokenizer.pad_token_id)
    assert set(alone) == {"passage_ids", "passage_mask", "targets"}
    with torch.no_grad():
        out = model(**alone)
    assert out.query_vectors is None
    torch.testing.assert_close(out.loss, (1 - passages).square().sum(), atol=1e-4, rtol=1e-5)


def test_pairs_are_padded_to_each_sides_longest(tiny):
    examples = pair_examples(tiny, PAIRS[:2])
    batch = collate_pairs(examples, pad_id=0)
    lengths = [len(e["input_ids"]) for e in examples]
    assert batch["passage_ids"].shape == (2, max(lengths))
    assert batch["passage_mask"].sum(1).tolist() == lengths
    assert batch["query_mask"].sum(1).tolist() == [len(e["query_ids"]) for e in examples]
    assert (batch["passage_ids"][batch["passage_mask"] == 0] == 0).all()
    with pytest.raises(ValueError, match="no pairs"):
        pair_examples(tiny, [])


def test_every_weight_the_vectors_use_gets_a_gradient(tiny):
    model = BiEncoder.around(tiny.model, "mean")
    batch = collate_pairs(pair_examples(tiny, PAIRS), tiny.tokenizer.pad_token_id)
    model(**batch).loss.backward()
    for name, parameter in model.named_parameters():
        if ".pooler." in name:  # the pooler (dense + tanh on [CLS]) is not part of the vectors
            assert parameter.grad is None, name
            continue
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_a_short_run_teaches_a_tiny_encoder_each_querys_passage(tiny):
    def found() -> int:
        q = torch.nn.functional.normalize(encode(tiny, [q for q, _ in PAIRS]), dim=-1)
        p = torch.nn.functional.normalize(encode(tiny, [p for _, p in PAIRS]), dim=-1)
        return int(((q @ p.T).argmax(1) == torch.arange(len(PAIRS))).sum())

    assert found() < len(PAIRS)  # random weights miss some
    history = train_encoder(
        tiny, PAIRS, steps=40, lr=3e-3, batch_size=5, eval_every=40, progress=False, seed=0
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"] / 2
    assert not tiny.model.training  # left in evaluation mode
    assert found() == len(PAIRS)


def test_a_hard_negative_per_pair_is_encoded_and_scored_against_every_query(tiny):
    negatives = [PAIRS[(i + 1) % len(PAIRS)][1] for i in range(len(PAIRS))]  # the next passage
    examples = pair_examples(tiny, PAIRS, negatives)
    batch = collate_pairs(examples, tiny.tokenizer.pad_token_id)
    assert batch["negative_mask"].sum(1).tolist() == [len(e["negative_ids"]) for e in examples]
    model = BiEncoder.around(tiny.model, "mean", temperature=0.1).eval()
    with torch.no_grad():
        out = model(**batch)
    queries = encode(tiny, [q for q, _ in PAIRS])
    passages = encode(tiny, [p for _, p in PAIRS])
    hard = encode(tiny, negatives)
    torch.testing.assert_close(out.negative_vectors, hard, atol=1e-5, rtol=0)
    want = in_batch_loss(queries, passages, 0.1, negatives=hard)
    torch.testing.assert_close(out.loss, want, atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="one negative passage per pair"):
        pair_examples(tiny, PAIRS, negatives[:2])
    history = train_encoder(
        tiny, PAIRS, negatives=negatives, steps=3, batch_size=5, progress=False, seed=0
    )
    assert len(history) == 3 and all(h["train_loss"] > 0 for h in history)
