"""The contrastive loss with in-batch negatives, one module: its value against a hand computation,
with hard negatives too, and as the bi-encoder's loss module (a held-out batch of one pair has
nothing to learn from)."""

import math

import pytest
import torch

from minibert.retrieval.in_batch import InBatchLoss, in_batch_loss


def test_in_batch_loss_against_a_hand_computation():
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    p = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    c = 1 / math.sqrt(2)
    # cosines: q0.p0 = 1, q0.p1 = c, q1.p0 = 0, q1.p1 = c; temperature 0.5 doubles them
    row0 = -math.log(math.exp(2) / (math.exp(2) + math.exp(2 * c)))
    row1 = -math.log(math.exp(2 * c) / (math.exp(0) + math.exp(2 * c)))
    assert in_batch_loss(q, p, temperature=0.5).item() == pytest.approx((row0 + row1) / 2)
    with pytest.raises(ValueError, match="batch >= 2"):
        in_batch_loss(q[:1], p[:1])
    with pytest.raises(ValueError, match="temperature"):
        in_batch_loss(q, p, temperature=0.0)


def test_the_loss_module_is_the_function_and_a_single_pair_in_evaluation_is_none():
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    p = torch.tensor([[3.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    loss = InBatchLoss(temperature=0.5)
    assert loss(q, p).item() == pytest.approx(in_batch_loss(q, p, 0.5).item())
    # three pairs, temperature 1, identical directions on the diagonal only: by hand
    eye = torch.eye(3)
    by_hand = -math.log(math.e / (math.e + 2))  # each row: cosine 1 once, 0 twice
    assert InBatchLoss(1.0)(eye, eye).item() == pytest.approx(by_hand)
    assert loss.eval()(q[:1], p[:1]) is None  # a held-out set's last batch of one pair
    with pytest.raises(ValueError, match="batch >= 2"):
        loss.train()(q[:1], p[:1])
    with pytest.raises(ValueError, match="needs \\(query, passage\\) pairs"):
        loss(None, p)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        InBatchLoss(float("inf"))


def test_hard_negatives_join_the_batchs_passages_as_negatives_of_every_query():
    q = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    p = torch.tensor([[3.0, 0.0], [1.0, 1.0]])
    n = torch.tensor([[0.0, 5.0]])  # one hard negative, shared by both queries
    c = 1 / math.sqrt(2)
    # cosines with n: q0.n = 0, q1.n = 1; temperature 0.5 doubles every cosine
    row0 = -math.log(math.exp(2) / (math.exp(2) + math.exp(2 * c) + math.exp(0)))
    row1 = -math.log(math.exp(2 * c) / (math.exp(0) + math.exp(2 * c) + math.exp(2)))
    loss = in_batch_loss(q, p, temperature=0.5, negatives=n)
    assert loss.item() == pytest.approx((row0 + row1) / 2)
    assert loss.item() > in_batch_loss(q, p, temperature=0.5).item()  # harder with n
    module = InBatchLoss(0.5)
    assert module(q, p, negative_vectors=n).item() == pytest.approx(loss.item())
    with pytest.raises(ValueError, match="negatives must be \\(negatives, 2\\)"):
        in_batch_loss(q, p, negatives=torch.ones(2, 3))
