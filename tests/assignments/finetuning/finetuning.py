"""The reference solution of the finetuning assignment (graded 10/10 by the tests).

Use Python and torch (not minibert). Grade it with: minibert assignment grade .
"""

import torch


def evaluate(labels, predictions):
    """Two labels (0, 1): lists of ints, the same length -> (accuracy, f1, confusion).

    accuracy: the fraction right, in [0, 1]; f1: the F1 of label 1 (0.0 when nothing is predicted
    or labelled 1); confusion: [[n00, n01], [n10, n11]], confusion[true][predicted].
    """
    confusion = [[0, 0], [0, 0]]
    for truth, guess in zip(labels, predictions):
        confusion[truth][guess] += 1
    accuracy = (confusion[0][0] + confusion[1][1]) / len(labels)
    predicted, actual = confusion[0][1] + confusion[1][1], confusion[1][0] + confusion[1][1]
    precision = confusion[1][1] / predicted if predicted else 0.0
    recall = confusion[1][1] / actual if actual else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return accuracy, f1, confusion


def lr_multiplier(step, warmup_steps, total_steps):
    """The learning-rate multiplier at step (counted from 0) -> a float.

    (step + 1) / warmup_steps during the warm-up (step < warmup_steps), then falling linearly:
    (total_steps - step) / (total_steps - warmup_steps), never below 0.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


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
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.999), eps=1e-6,
    )  # fmt: skip
    steps = len(batches)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_multiplier(s, warmup_steps, steps)
    )
    best, best_state = None, None
    model.train()
    for step, batch in enumerate(batches, start=1):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % eval_every == 0 or step == steps:
            model.eval()
            measure = evaluate(model)
            model.train()
            if best is None or measure > best:
                best = measure
                best_state = {k: v.clone() for k, v in model.state_dict().items()}
    return best_state
