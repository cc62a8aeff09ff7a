"""Checkers for the notebooks' exercises, one module per lesson; the assignments use them too.

Each ``check_*`` function calls the learner's function (or takes their answer) on random inputs,
compares the result with minibert's reference implementation, prints one line (PASS, or NOT YET
and a hint saying what differs) and returns a ``Result(name, passed, message)``. ``bool(result)``
is whether it passed, so a grader can ``assert check_attention(student_fn)``; the assignments
score ``result.passed`` and show ``result.message``.

- ``tokens`` (lesson 1): ``check_wordpiece``, ``check_tokens_and_segments``, ``check_pad_batch``;
- ``attention`` (2): ``check_attention``, ``check_padding_mask``, ``check_split_heads``,
  ``check_merge_heads``, ``check_equal_keys``;
- ``encoder`` (3): ``check_embeddings``, ``check_encoder_layer``, ``check_parameter_count``,
  ``check_previous_token_head``;
- ``masking`` (4): ``check_masking``, ``check_mlm_loss``, ``check_mask_accuracy``;
- ``nsp`` (5): ``check_nsp_pairs``, ``check_sop_pairs``, ``check_nsp_loss``;
- ``classifier`` (6, fine-tuning): ``check_classification_head``, ``check_evaluation``,
  ``check_fine_tuning_loop``; ``check_lr_schedule`` (the finetuning assignment's);
- ``spans_and_tags`` (7): ``check_best_span``, ``check_repair_bio``, ``check_answer_over_windows``,
  ``check_answer_or_null``, ``check_squad_f1``;
- ``what_pretraining_buys`` (8): ``check_opinion_scores``;
- ``search`` (9): ``check_bm25``, ``check_recall_at_k``, ``check_mrr``, ``check_whitening``,
  ``check_whitening_for_search``; ``check_hybrid_scores`` (the retrieval assignment's);
- ``retriever_training`` (10): ``check_in_batch_loss``, ``check_loss_with_hard_negatives``,
  ``check_hard_negatives``;
- ``common``: ``Result``, ``report``, ``quietly`` (checkers that print nothing, for a grader),
  ``call_safely`` (a learner's call, its exception as a hint) and ``attention_problem`` (a
  tensor against the reference, as a hint).
"""

from __future__ import annotations

from minibert.teaching.exercises.attention import (
    check_attention,
    check_equal_keys,
    check_merge_heads,
    check_padding_mask,
    check_split_heads,
)
from minibert.teaching.exercises.classifier import (
    check_classification_head,
    check_evaluation,
    check_fine_tuning_loop,
    check_lr_schedule,
)
from minibert.teaching.exercises.common import (
    Result,
    attention_problem,
    call_safely,
    quietly,
    report,
)
from minibert.teaching.exercises.encoder import (
    check_embeddings,
    check_encoder_layer,
    check_parameter_count,
    check_previous_token_head,
)
from minibert.teaching.exercises.masking import check_mask_accuracy, check_masking, check_mlm_loss
from minibert.teaching.exercises.nsp import check_nsp_loss, check_nsp_pairs, check_sop_pairs
from minibert.teaching.exercises.retriever_training import (
    check_hard_negatives,
    check_in_batch_loss,
    check_loss_with_hard_negatives,
)
from minibert.teaching.exercises.search import (
    check_bm25,
    check_hybrid_scores,
    check_mrr,
    check_recall_at_k,
    check_whitening,
    check_whitening_for_search,
)
from minibert.teaching.exercises.spans_and_tags import (
    check_answer_or_null,
    check_answer_over_windows,
    check_best_span,
    check_repair_bio,
    check_squad_f1,
)
from minibert.teaching.exercises.tokens import (
    check_pad_batch,
    check_tokens_and_segments,
    check_wordpiece,
)
from minibert.teaching.exercises.what_pretraining_buys import check_opinion_scores

__all__ = [
    "check_bm25",
    "check_hard_negatives",
    "check_hybrid_scores",
    "check_in_batch_loss",
    "check_loss_with_hard_negatives",
    "check_mrr",
    "check_recall_at_k",
    "check_whitening",
    "check_whitening_for_search",
    "Result",
    "attention_problem",
    "call_safely",
    "check_answer_or_null",
    "check_answer_over_windows",
    "check_attention",
    "check_best_span",
    "check_classification_head",
    "check_embeddings",
    "check_encoder_layer",
    "check_equal_keys",
    "check_evaluation",
    "check_fine_tuning_loop",
    "check_lr_schedule",
    "check_mask_accuracy",
    "check_masking",
    "check_merge_heads",
    "check_mlm_loss",
    "check_nsp_loss",
    "check_nsp_pairs",
    "check_opinion_scores",
    "check_pad_batch",
    "check_padding_mask",
    "check_parameter_count",
    "check_previous_token_head",
    "check_repair_bio",
    "check_sop_pairs",
    "check_squad_f1",
    "check_split_heads",
    "check_tokens_and_segments",
    "check_wordpiece",
    "quietly",
    "report",
]
