"""BERT, top to bottom: embeddings, post-LN encoder layers, pooler, and the heads of the paper.

Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding". Reading order follows the data: token ids become vectors (Embeddings), a stack of
identical layers mixes them (EncoderLayer = attention, add & norm, feed-forward, add & norm), the
[CLS] vector is pooled (Pooler), and small heads turn vectors into predictions (MaskedLMHead,
NSPHead, classifiers). Outputs equal Hugging Face ``transformers.BertModel`` to 1e-5; parameter
names are our own, and ``minibert.checkpoint`` maps them to Hugging Face's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from minibert import checkpoint
from minibert.attention import MultiHeadSelfAttention, padding_mask
from minibert.config import ACTIVATIONS, IGNORE_INDEX, BertConfig

# Dimensions in the shape comments: batch, seq (tokens per input), hidden (hidden_size),
# heads (num_heads), vocab (vocab_size).


# --- the encoder -------------------------------------------------------------------------------


class Embeddings(nn.Module):
    """Token + segment + learned position embeddings, then LayerNorm and dropout (paper fig. 2)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor) -> Tensor:
        """input_ids, token_type_ids (batch, seq) -> (batch, seq, hidden)."""
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)  # (seq,)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(positions)  # (batch, seq, hidden), positions broadcast
        return self.dropout(self.layer_norm(x))


class EncoderLayer(nn.Module):
    """Post-LN Transformer layer: x = LN(x + drop(attn(x))); x = LN(x + drop(ffn(x)))."""

    def __init__(self, config: BertConfig):
        super().__init__()
        h = config.hidden_size
        self.attention = MultiHeadSelfAttention(h, config.num_heads, config.attention_dropout)
        self.attention_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.ffn_in = nn.Linear(h, config.intermediate_size)  # expand, usually 4 x hidden
        self.ffn_out = nn.Linear(config.intermediate_size, h)  # project back
        self.ffn_norm = nn.LayerNorm(h, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.activation = ACTIVATIONS[config.activation]

    def forward(
        self, x: Tensor, mask: Tensor | None = None, output_attentions: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """x (batch, seq, hidden), additive mask (batch, 1, 1, seq) -> (batch, seq, hidden), weights."""
        a, weights = self.attention(x, mask, output_attentions)  # (batch, seq, hidden)
        x = self.attention_norm(x + self.dropout(a))  # add & norm
        f = self.ffn_out(self.activation(self.ffn_in(x)))  # (batch, seq, hidden)
        x = self.ffn_norm(x + self.dropout(f))  # add & norm
        return x, weights


class Encoder(nn.Module):
    """A stack of num_layers EncoderLayers; optionally keeps every layer's output and weights."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_layers))

    def forward(
        self,
        x: Tensor,
        mask: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> tuple[Tensor, tuple[Tensor, ...] | None, tuple[Tensor, ...] | None]:
        """x (batch, seq, hidden), additive mask -> last, (input and each layer's output), weights."""
        hidden_states, attentions = [x], []
        for layer in self.layers:
            x, weights = layer(x, mask, output_attentions)  # (batch, seq, hidden)
            hidden_states.append(x)
            attentions.append(weights)
        hidden_states = tuple(hidden_states) if output_hidden_states else None
        return x, hidden_states, tuple(attentions) if output_attentions else None


class Pooler(nn.Module):
    """dense + tanh on the [CLS] vector: one vector for the whole input (used by NSP)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden: Tensor) -> Tensor:
        """hidden (batch, seq, hidden) -> (batch, hidden), from position 0, the [CLS] token."""
        return torch.tanh(self.dense(hidden[:, 0]))


# --- the model, and loading and saving ---------------------------------------------------------


def check_inputs(
    config: BertConfig,
    input_ids: Tensor,
    token_type_ids: Tensor | None = None,
    attention_mask: Tensor | None = None,
) -> None:
    """Raise unless these (batch, seq) inputs fit a model of this config (mask values: padding_mask)."""
    if not isinstance(input_ids, Tensor) or input_ids.dim() != 2 or not input_ids.numel():
        got = tuple(input_ids.shape) if isinstance(input_ids, Tensor) else type(input_ids).__name__
        raise ValueError(
            f"input_ids must be a tensor of shape (batch, seq) with batch >= 1 and seq >= 1, got "
            f"{got}; for a single sequence use input_ids.unsqueeze(0)."
        )
    if input_ids.shape[1] > config.max_position_embeddings:
        raise ValueError(
            f"sequences of at most max_position_embeddings={config.max_position_embeddings} "
            f"tokens fit this model, got {input_ids.shape[1]}; truncate them (truncation=True)."
        )
    for name, t, size in (
        ("input_ids", input_ids, config.vocab_size),
        ("token_type_ids", token_type_ids, config.type_vocab_size),
        ("attention_mask", attention_mask, None),
    ):
        if t is None:
            continue
        if not isinstance(t, Tensor) or t.shape != input_ids.shape:
            got = tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(
                f"{name} must have the shape of input_ids {tuple(input_ids.shape)}, got {got}."
            )
        if size is None:
            continue
        if t.dtype not in (torch.int64, torch.int32):  # what nn.Embedding takes
            raise ValueError(
                f"{name} must hold integer ids (torch.long), got {t.dtype}; "
                f"convert with {name}.long()."
            )
        if not on_host(t) or torch.compiler.is_compiling():  # a read back stalls a GPU and
            continue  # breaks a compiled graph: the training loop runs check_batch beforehand
        low, high = int(t.min()), int(t.max())
        if low < 0 or high >= size:
            raise ValueError(
                f"{name} must lie in [0, {size}) for this config, got values from {low} to "
                f"{high}; check that the tokenizer's vocabulary matches the model."
            )


@dataclass
class BertModelOutput:
    """What BertModel returns; the task models' outputs add their logits and losses to it."""

    last_hidden_state: Tensor  # (batch, seq, hidden)
    pooler_output: Tensor | None = None  # (batch, hidden); None without a pooler
    hidden_states: tuple[Tensor, ...] | None = None  # embeddings, then each layer's output
    attentions: tuple[Tensor, ...] | None = None  # one per layer, (batch, heads, seq, seq)


Model = TypeVar("Model", bound="BertPreTrainedModel")


class BertPreTrainedModel(nn.Module):
    """What every model shares: BERT's initialisation, from_pretrained and save_pretrained."""

    # each label argument of forward -> the loss (an output field) that is its mean: the training
    # loop weights every label once across micro-batches and processes with it, knowing no task
    label_losses: ClassVar[dict[str, str]] = {}

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = config

    def init_weights(self, part: nn.Module | None = None) -> None:
        """Normal(0, initializer_range) weights, zero biases, unit LayerNorm, as BERT and HF.

        ``part`` (a submodule, e.g. the top layer) re-initialises only that part.
        """
        std = self.config.initializer_range
        for module in (part if part is not None else self).modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, mean=0.0, std=std)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.LayerNorm):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)

    @classmethod
    def from_pretrained(cls: type[Model], path: str | Path, **config_changes: Any) -> Model:
        """Load a Hugging Face BERT folder (or one saved by save_pretrained), offline.

        config_changes edit the folder's config before the model is built (dropout, or the
        number of labels of a new classifier head): ``from_pretrained(path, hidden_dropout=0.0)``.
        """
        return checkpoint.load_pretrained(cls, path, **config_changes)  # knows no model class

    def save_pretrained(self, path: str | Path) -> None:
        """Write config.json + model.safetensors that transformers' from_pretrained loads."""
        checkpoint.save_pretrained(self, path)

    def check_batch(self, batch: dict[str, Any]) -> None:
        """The value checks forward skips on a device (ids and labels in range), on host tensors."""
        check_inputs(
            self.config,
            batch["input_ids"],
            batch.get("token_type_ids"),
            batch.get("attention_mask"),
        )
        classes = {
            "labels": getattr(self.config, "num_labels", None),
            "mlm_labels": self.config.vocab_size,
            "next_sentence_label": 2,
        }
        if isinstance(self, BertForMaskedLM):
            classes["labels"] = self.config.vocab_size
        for name, size in classes.items():
            labels = batch.get(name)
            if isinstance(labels, Tensor) and size is not None:
                bad = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= size))
                if bool(bad.any()):
                    raise ValueError(
                        f"{name} must lie in [0, {size}) or be {IGNORE_INDEX} (ignored), got "
                        f"{labels[bad].unique().tolist()[:10]}."
                    )


def on_host(t: Tensor) -> bool:
    """True for a CPU tensor, whose values can be read without stalling a device's queue."""
    return t.device.type == "cpu"


class BertModel(BertPreTrainedModel):
    """The encoder: embeddings, num_layers encoder layers and (by default) the pooler."""

    def __init__(
        self, config: BertConfig, add_pooling_layer: bool = True, init_weights: bool = True
    ):
        super().__init__(config)
        self.embeddings = Embeddings(config)
        self.encoder = Encoder(config)
        self.pooler = Pooler(config) if add_pooling_layer else None
        if init_weights:  # a task model initialises the encoder with its head, once
            self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> BertModelOutput:
        """input_ids, token_type_ids (0/1 segments), attention_mask (1 real, 0 pad): (batch, seq)."""
        check_inputs(self.config, input_ids, token_type_ids, attention_mask)  # once, here
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # one segment, A
        x = self.embeddings(input_ids, token_type_ids)  # (batch, seq, hidden)
        mask = None  # no padding: the same result, and the faster unmasked kernel
        if attention_mask is not None:
            mask = padding_mask(attention_mask.to(x.device), dtype=x.dtype)  # (batch, 1, 1, seq)
            readable = on_host(attention_mask) and not torch.compiler.is_compiling()
            if readable and bool(attention_mask.all()):  # no padding at all
                mask = None  # (on a device or compiled, the mask is kept rather than read back)
        x, hidden_states, attentions = self.encoder(
            x, mask, output_attentions, output_hidden_states
        )
        pooled = self.pooler(x) if self.pooler is not None else None  # (batch, hidden)
        return BertModelOutput(x, pooled, hidden_states, attentions)


# --- heads and losses --------------------------------------------------------------------------


class MaskedLMHead(nn.Module):
    """dense + activation + LayerNorm, then scores over the vocabulary with the tied embeddings."""

    def __init__(self, config: BertConfig, word_embeddings: nn.Embedding):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size)
        self.decoder.weight = word_embeddings.weight  # tied: input and output share one matrix
        self.activation = ACTIVATIONS[config.activation]

    def forward(self, hidden: Tensor) -> Tensor:
        """hidden (batch, seq, hidden) -> logits (batch, seq, vocab)."""
        return self.decoder(self.layer_norm(self.activation(self.dense(hidden))))


class NSPHead(nn.Module):
    """Next sentence prediction: the pooled [CLS] vector -> 2 logits (0 IsNext, 1 NotNext)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, pooled: Tensor) -> Tensor:
        """pooled (batch, hidden) -> logits (batch, 2)."""
        return self.classifier(pooled)


def labelled_loss(logits: Tensor, labels: Tensor, name: str = "labels") -> Tensor:
    """Mean cross-entropy over the labels that are not IGNORE_INDEX (-100); 0 if all are ignored.

    logits (..., num_classes), labels (...) of class ids; a wrong shape or id raises ValueError.
    """
    num_classes = logits.shape[-1]
    if not isinstance(labels, Tensor) or labels.is_floating_point() or labels.is_complex():
        raise TypeError(f"{name} must be a tensor of integer class ids, got {labels!r:.80}.")
    if labels.shape != logits.shape[:-1]:
        raise ValueError(
            f"{name} must have shape {tuple(logits.shape[:-1])}, got {tuple(labels.shape)}."
        )
    if not on_host(labels) or torch.compiler.is_compiling():  # no read back (check_batch)
        count = (labels != IGNORE_INDEX).sum().clamp(min=1)  # all ignored: 0 / 1, not NaN
        loss = F.cross_entropy(
            logits.flatten(0, -2).float(),
            labels.flatten(),
            reduction="sum",
            ignore_index=IGNORE_INDEX,
        )
        return loss / count
    bad = (labels != IGNORE_INDEX) & ((labels < 0) | (labels >= num_classes))
    if bool(bad.any()):
        raise ValueError(
            f"{name} must lie in [0, {num_classes}) or be {IGNORE_INDEX} (ignored), got "
            f"{labels[bad].unique().tolist()[:10]}."
        )
    if not bool((labels != IGNORE_INDEX).any()):
        return logits.sum() * 0.0  # keeps the graph; PyTorch's mean would be 0 / 0 = NaN
    logits, labels = logits.flatten(0, -2).float(), labels.flatten()  # (n, classes), (n,)
    return F.cross_entropy(logits, labels, ignore_index=IGNORE_INDEX)


@dataclass
class BertForPreTrainingOutput(BertModelOutput):
    """The encoder's outputs, both tasks' logits, and their losses when labels were given."""

    mlm_logits: Tensor | None = None  # (batch, seq, vocab)
    nsp_logits: Tensor | None = None  # (batch, 2)
    loss: Tensor | None = None  # mlm_loss + nsp_loss (of those given labels)
    mlm_loss: Tensor | None = None
    nsp_loss: Tensor | None = None


@dataclass
class TaskOutput(BertModelOutput):
    """The encoder's outputs, the head's logits, and the loss when labels were given.

    logits: MLM (batch, seq, vocab); sequence (batch, num_labels); token (batch, seq, num_labels).
    """

    logits: Tensor | None = None
    loss: Tensor | None = None


# --- task models -------------------------------------------------------------------------------


class BertForPreTraining(BertPreTrainedModel):
    """BERT as pretrained: masked language model (MLM) + next sentence prediction (NSP)."""

    label_losses = {"mlm_labels": "mlm_loss", "next_sentence_label": "nsp_loss"}

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, init_weights=False)
        self.mlm = MaskedLMHead(config, self.bert.embeddings.word_embeddings)
        self.nsp = NSPHead(config)
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        mlm_labels: Tensor | None = None,
        next_sentence_label: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
        sparse_mlm: bool = False,
    ) -> BertForPreTrainingOutput:
        """mlm_labels (batch, seq): the original id where masked, else -100; NSP labels (batch,).

        sparse_mlm scores only the labelled positions: mlm_logits is then (n_labelled, vocab),
        the loss is the same, and pretraining is faster (the vocabulary projection is costly).
        """
        out = self.bert(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states
        )
        hidden, labels = out.last_hidden_state, mlm_labels  # (batch, seq, hidden), (batch, seq)
        if sparse_mlm and mlm_labels is not None:
            keep = mlm_labels != IGNORE_INDEX
            hidden, labels = hidden[keep], mlm_labels[keep]  # (n_labelled, hidden), (n_labelled,)
        mlm_logits = self.mlm(hidden)  # (batch, seq, vocab), or (n_labelled, vocab)
        nsp_logits = self.nsp(out.pooler_output)  # (batch, 2)
        result = BertForPreTrainingOutput(**vars(out), mlm_logits=mlm_logits, nsp_logits=nsp_logits)
        if mlm_labels is not None:
            result.mlm_loss = labelled_loss(mlm_logits, labels, "mlm_labels")
        if next_sentence_label is not None:
            result.nsp_loss = labelled_loss(nsp_logits, next_sentence_label, "next_sentence_label")
        losses = [x for x in (result.mlm_loss, result.nsp_loss) if x is not None]
        result.loss = sum(losses[1:], losses[0]) if losses else None  # MLM + NSP, as in the paper
        return result


class BertForMaskedLM(BertPreTrainedModel):
    """The encoder (no pooler) and the masked language model head only."""

    label_losses = {"labels": "loss"}

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False, init_weights=False)
        self.mlm = MaskedLMHead(config, self.bert.embeddings.word_embeddings)
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> TaskOutput:
        """labels (batch, seq): the original id where masked, else -100 -> logits (batch, seq, vocab)."""
        out = self.bert(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states
        )
        logits = self.mlm(out.last_hidden_state)  # (batch, seq, vocab)
        loss = None if labels is None else labelled_loss(logits, labels)
        return TaskOutput(**vars(out), logits=logits, loss=loss)


def mean_pool(hidden: Tensor, attention_mask: Tensor | None = None) -> Tensor:
    """(batch, seq, hidden) -> (batch, hidden): the mean over the real tokens (mask 1)."""
    if attention_mask is None:
        return hidden.mean(1)
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (batch, seq, 1)
    return (hidden * mask).sum(1) / mask.sum(1)


class BertForSequenceClassification(BertPreTrainedModel):
    """Fine-tuning for a label per input (sentiment, entailment): dropout + linear on the pooler
    (config.classifier_pooling "pooler", BERT's head), on the tokens' mean ("mean") or on the raw
    [CLS] vector without the pooler ("cls")."""

    label_losses = {"labels": "loss"}

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, init_weights=False)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> TaskOutput:
        """labels (batch,) in [0, num_labels) -> logits (batch, num_labels) and the loss."""
        out = self.bert(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states
        )
        if self.config.classifier_pooling == "mean":
            pooled = mean_pool(out.last_hidden_state, attention_mask)  # (batch, hidden)
        elif self.config.classifier_pooling == "cls":
            pooled = out.last_hidden_state[:, 0]  # h_[CLS] with no pooler, (batch, hidden)
        else:
            pooled = out.pooler_output  # tanh(dense(h_[CLS])), (batch, hidden)
        logits = self.classifier(self.dropout(pooled))  # (batch, num_labels)
        loss = None if labels is None else labelled_loss(logits, labels)
        return TaskOutput(**vars(out), logits=logits, loss=loss)


class BertForTokenClassification(BertPreTrainedModel):
    """Fine-tuning for a label per token (tagging): dropout + linear on every hidden vector."""

    label_losses = {"labels": "loss"}

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False, init_weights=False)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> TaskOutput:
        """labels (batch, seq) in [0, num_labels), -100 where ignored -> logits (batch, seq, labels)."""
        out = self.bert(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states
        )
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (batch, seq, num_labels)
        loss = None if labels is None else labelled_loss(logits, labels)
        return TaskOutput(**vars(out), logits=logits, loss=loss)


@dataclass
class QuestionAnsweringOutput(BertModelOutput):
    """The encoder's outputs, a start and an end score per token, and the loss when given spans."""

    start_logits: Tensor | None = None  # (batch, seq)
    end_logits: Tensor | None = None  # (batch, seq)
    loss: Tensor | None = None  # (start cross-entropy + end cross-entropy) / 2


class BertForQuestionAnswering(BertPreTrainedModel):
    """Extractive question answering (SQuAD): a linear layer gives each token a start and an end
    score; the answer is the best span of the context. No pooler, as in Hugging Face."""

    label_losses = {"start_positions": "loss"}  # one start (and one end) per window

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False, init_weights=False)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)  # start, end
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        start_positions: Tensor | None = None,
        end_positions: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> QuestionAnsweringOutput:
        """start/end_positions (batch,): the answer's first and last token (0, [CLS], if the
        window holds no answer) -> start_logits, end_logits (batch, seq) and the loss."""
        out = self.bert(
            input_ids, token_type_ids, attention_mask, output_attentions, output_hidden_states
        )
        logits = self.qa_outputs(out.last_hidden_state)  # (batch, seq, 2)
        start_logits, end_logits = logits[..., 0], logits[..., 1]  # (batch, seq) each
        loss = None
        if (start_positions is None) != (end_positions is None):
            raise ValueError("give both start_positions and end_positions, or neither")
        if start_positions is not None:
            start = labelled_loss(start_logits, start_positions, "start_positions")
            loss = (start + labelled_loss(end_logits, end_positions, "end_positions")) / 2
        return QuestionAnsweringOutput(
            **vars(out), start_logits=start_logits, end_logits=end_logits, loss=loss
        )


class BertForMultipleChoice(BertPreTrainedModel):
    """Multiple choice (the paper's SWAG, section 4.4): each choice is read with its context as
    [CLS] context [SEP] choice [SEP]; one linear unit scores the choice's pooled [CLS] vector, and
    a softmax over the choices gives their probabilities. Hugging Face's names and sizes."""

    label_losses = {"labels": "loss"}  # the right choice of each item

    def __init__(self, config: BertConfig):
        super().__init__(config)
        self.bert = BertModel(config, init_weights=False)
        self.dropout = nn.Dropout(config.hidden_dropout)
        self.classifier = nn.Linear(config.hidden_size, 1)  # one score per choice
        self.init_weights()

    def forward(
        self,
        input_ids: Tensor,
        token_type_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        labels: Tensor | None = None,
        output_attentions: bool = False,
        output_hidden_states: bool = False,
    ) -> TaskOutput:
        """input_ids, token_type_ids, attention_mask (batch, choices, seq); labels (batch,): the
        right choice -> logits (batch, choices) and the loss; the encoder's outputs are those of
        the (batch * choices) sequences."""
        if not isinstance(input_ids, Tensor) or input_ids.dim() != 3:
            got = tuple(input_ids.shape) if isinstance(input_ids, Tensor) else type(input_ids)
            raise ValueError(
                f"input_ids must be a tensor of shape (batch, choices, seq), got {got}; for one "
                "item use input_ids.unsqueeze(0)."
            )
        choices = input_ids.shape[1]
        flat = [None if t is None else t.flatten(0, 1) for t in (token_type_ids, attention_mask)]
        out = self.bert(  # (batch * choices, seq) each
            input_ids.flatten(0, 1), *flat, output_attentions, output_hidden_states
        )
        scores = self.classifier(self.dropout(out.pooler_output))  # (batch * choices, 1)
        logits = scores.view(-1, choices)  # (batch, choices)
        loss = None if labels is None else labelled_loss(logits, labels)
        return TaskOutput(**vars(out), logits=logits, loss=loss)

    def check_batch(self, batch: dict[str, Any]) -> None:
        """The value checks forward skips on a device, the choices read as sequences."""
        ids = batch["input_ids"]
        if not isinstance(ids, Tensor) or ids.dim() != 3:
            raise ValueError("input_ids must be a tensor of shape (batch, choices, seq)")
        flat = {k: v.flatten(0, 1) for k, v in batch.items() if k != "labels"}
        super().check_batch(flat)  # ids in range
        labels = batch.get("labels")
        if isinstance(labels, Tensor) and bool(((labels < 0) | (labels >= ids.shape[1])).any()):
            raise ValueError(f"labels must lie in [0, {ids.shape[1]}) (one of the choices).")
