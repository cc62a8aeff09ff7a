"""Assignment: the fine-tuning loop. Fill in every function that raises NotImplementedError.

Use Python and torch (not minibert). Grade it with: minibert assignment grade .
"""

import torch


def evaluate(labels, predictions):
    """Two labels (0, 1): lists of ints, the same length -> (accuracy, f1, confusion).

    accuracy: the fraction right, in [0, 1]; f1: the F1 of label 1 (0.0 when nothing is predicted
    or labelled 1); confusion: [[n00, n01], [n10, n11]], confusion[true][predicted].
    """
    raise NotImplementedError("your code here")


def lr_multiplier(step, warmup_steps, total_steps):
    """The learning-rate multiplier at step (counted from 0) -> a float.

    (step + 1) / warmup_steps during the warm-up (step < warmup_steps), then falling linearly:
    (total_steps - step) / (total_steps - warmup_steps), never below 0.
    """
    raise NotImplementedError("your code here")


def fine_tune(model, batches, evaluate, lr, warmup_steps, eval_every):
    """Fine-tune model on batches -> the best evaluation's weights (a state dict of copies).

    model(**batch).loss is a batch's loss; one optimizer step per batch, in order. AdamW with
    betas (0.9, 0.999), eps 1e-6, weight decay 0.01 on parameters with two or more dimensions and
    none on the others (biases, LayerNorm); the rate lr * lr_multiplier(step, warmup_steps,
    len(batches)) (torch.optim.lr_scheduler.LambdaLR); the gradients zeroed before each step and
    their norm clipped to 1.0. Every eval_every steps and after the last, evaluate(model) (a
    float, higher is better) with the model in eval mode, then back in train mode; keep a copy of
    the weights of the best evaluation (on a tie, the earlier).
    """
    raise NotImplementedError("your code here")


# Silence "imported but unused" until you use it.
_ = torch
