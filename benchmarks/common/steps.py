"""One pretraining step's loss (MLM + NSP), as minibert and as transformers compute it on the same
batch, for the benchmarks that time the two side by side (cpu_levers.py, gpu_suite.py)."""

from __future__ import annotations

import torch


def pretraining_loss(
    impl: str, model, batch: dict, sparse_mlm: bool = True, explicit: bool = False
) -> torch.Tensor:
    """The loss of one pretraining step. impl "transformers": transformers.BertForPreTraining
    (labels and next_sentence_label under its names); otherwise minibert's BertForPreTraining,
    MLM logits only at the masked positions unless sparse_mlm is False (as `minibert pretrain`
    runs it), the attention weights returned where explicit (the explicit attention path)."""
    if impl == "transformers":
        return model(
            input_ids=batch["input_ids"],
            token_type_ids=batch["token_type_ids"],
            attention_mask=batch.get("attention_mask"),
            labels=batch["mlm_labels"],
            next_sentence_label=batch["next_sentence_label"],
        ).loss
    extra = {"output_attentions": True} if explicit else {}
    return model(**batch, sparse_mlm=sparse_mlm, **extra).loss
