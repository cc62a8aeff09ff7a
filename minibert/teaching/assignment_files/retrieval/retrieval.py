"""Assignment: judging, combining and training retrievers. Fill in every function that raises
NotImplementedError.

Use Python and torch (not minibert). Grade it with: minibert assignment grade .
"""

import torch
import torch.nn.functional as F


def recall_at_k(rankings, relevant, k):
    """rankings (list of lists of passage ids, best first), relevant (list of ids), k -> float.

    The share of queries whose relevant passage is among the first k of their ranking. A query's
    relevant passage may be missing from its ranking altogether: that query is not found.
    """
    raise NotImplementedError("your code here")


def mrr_at_10(rankings, relevant):
    """rankings, relevant as in recall_at_k -> float: MS MARCO's MRR@10.

    The mean over queries of 1 / rank, the relevant passage's rank counted from 1, and 0 for a
    query whose relevant passage is not among the first 10 (or not in its ranking at all).
    """
    raise NotImplementedError("your code here")


def hybrid_scores(lexical, dense, weight):
    """lexical, dense (queries, passages) score tensors of two retrievers, weight in [0, 1] ->
    (queries, passages) tensor.

    Each retriever's scores standardised per query (each row minus its mean over the passages,
    divided by its standard deviation), then (1 - weight) * lexical + weight * dense.
    """
    raise NotImplementedError("your code here")


def in_batch_loss(queries, passages, temperature):
    """queries, passages (batch, hidden) tensors, row i of each a pair -> a 0-d tensor.

    The contrastive loss with in-batch negatives (sentence-transformers'
    MultipleNegativesRankingLoss): the cosine similarity of every query with every passage of the
    batch, divided by temperature, and the cross-entropy of each query's row with its own passage
    as the right answer; the mean over the batch.
    """
    raise NotImplementedError("your code here")


_ = torch, F
