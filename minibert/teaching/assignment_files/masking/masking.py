"""Assignment: pretraining data. Fill in every function that raises NotImplementedError.

Use Python, numpy and torch (not minibert). Grade it with: minibert assignment grade .
"""

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # the label of a position the loss skips


def mask_tokens(input_ids, special_tokens_mask, mask_token_id, random_token_ids, rng):
    """BERT's masking of one sequence -> (masked_ids, labels), two lists as long as input_ids.

    input_ids: list of ints; special_tokens_mask: list of 1 ([CLS], [SEP]) / 0; rng: a
    numpy.random.Generator (use it for every random choice). Choose 15% of the non-special
    positions (max(1, round(0.15 * n)) of the n candidates); of those, 80% become
    mask_token_id, 10% a token drawn from random_token_ids, 10% stay as they are. labels hold the
    original id at the chosen positions and IGNORE_INDEX everywhere else.
    """
    raise NotImplementedError("your code here")


def mlm_loss(logits, labels):
    """logits (batch, seq, vocab), labels (batch, seq) -> the mean cross-entropy (a 0-dim tensor).

    Only positions whose label is not IGNORE_INDEX count, each once; padding must not change it.
    """
    raise NotImplementedError("your code here")


def mask_accuracy(logits, labels, input_ids, mask_token_id):
    """logits (batch, seq, vocab), labels, input_ids (batch, seq) -> a float in [0, 1].

    Top-1 accuracy at the [MASK] positions only: positions with a label whose input is
    mask_token_id. (The chosen positions kept as they are can be copied; they do not count.)
    """
    raise NotImplementedError("your code here")


# Silence "imported but unused" until you use them.
_ = torch, F
