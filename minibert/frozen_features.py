"""Frozen features of a BERT and a linear classifier on them (BERT's feature-based approach).

    x = sentence_features(model, tok, texts, pooling="cls")   # (texts, hidden), no gradients
    linear = fit_logistic_regression(x_train, labels, l2=1e-4)  # also a sparse bag of words
    predict(linear, x_test)                                     # (texts,) labels

The baselines (minibert.tasks.baselines) fit the same logistic regression on a bag of words. The
features are ``retrieval.encoders``' vectors (one padding, one pooling vocabulary: "cls" the raw
[CLS] vector, "pooler" BERT's pooler on it, "mean").
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from minibert.retrieval.encoders import encode_pieces

__all__ = ["fit_logistic_regression", "predict", "sentence_features"]


def fit_logistic_regression(
    x: torch.Tensor, y: Sequence[int], l2: float = 1e-4, steps: int = 300
) -> torch.nn.Linear:
    """Multinomial logistic regression with an L2 penalty, fitted with L-BFGS: (n, d) -> Linear(d, k).

    Dense features are standardised first (so one l2 suits every scale; the returned layer takes
    raw features); sparse ones (a bag of words, already unit rows) are used as they are.
    """
    y = torch.as_tensor(y, dtype=torch.long)
    if x.shape[0] != y.shape[0] or x.shape[0] == 0:
        raise ValueError(f"{x.shape[0]} rows of features but {y.shape[0]} labels")
    sparse = x.is_sparse
    values = x.coalesce().values() if sparse else x
    if not torch.isfinite(values).all():
        raise ValueError("the features hold NaN or infinite values (a model that diverged?)")
    if not sparse:
        mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
        x = (x - mean) / std
    linear = torch.nn.Linear(x.shape[1], int(y.max()) + 1)
    torch.nn.init.zeros_(linear.weight)
    torch.nn.init.zeros_(linear.bias)
    optimizer = torch.optim.LBFGS(
        linear.parameters(), max_iter=steps, line_search_fn="strong_wolfe"
    )

    def closure():
        optimizer.zero_grad()
        logits = x @ linear.weight.T + linear.bias  # (n, k); sparse @ dense works
        loss = torch.nn.functional.cross_entropy(logits, y) + l2 * linear.weight.square().sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    if not sparse:
        with torch.no_grad():  # fold the standardisation into the weights: raw features in
            linear.weight /= std
            linear.bias -= (linear.weight * mean).sum(1)
    return linear


def predict(linear: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """Labels (n,) from a fitted logistic regression on features x (dense or sparse)."""
    with torch.no_grad():
        return (x @ linear.weight.T + linear.bias).argmax(-1)


def sentence_features(
    model,
    tokenizer,
    texts: Sequence[str],
    pooling: str | tuple[str, ...] = "cls",
    max_length: int = 128,
    batch_size: int = 64,
) -> torch.Tensor | tuple[torch.Tensor, ...]:
    """Frozen features of a BertModel (or any model with .bert): (texts, hidden), pooled as
    ``retrieval.encoders.pool`` ('cls', 'pooler' or 'mean'), texts cut to max_length pieces.

    A tuple of poolings, e.g. ("cls", "mean"), gives a tuple of feature tensors from one pass.
    """
    if not texts:
        raise ValueError("no texts to encode")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    encoder = getattr(model, "bert", model).eval()
    cut = {"max_length": max_length, "truncation": True, "padding": False}
    pieces = [e.input_ids for e in tokenizer.encode_batch(list(texts), **cut, return_tensors=None)]
    return encode_pieces(encoder, pieces, tokenizer.pad_token_id, pooling, batch_size)
