"""BertConfig: the sizes of a BERT model, checked when made, with the presets of Google's BERTs.

The BERT paper (Devlin et al. 2019, section 3) names a model by L (layers), H (hidden size) and
A (attention heads), with a feed-forward size of 4H. Google later released smaller BERTs (Turc et
al. 2019, "Well-Read Students Learn Better"): tiny 2/128, mini 4/256, small 4/512, medium 8/512.

A config converts to and from a Hugging Face ``config.json`` dict, so any BERT checkpoint's
sizes can be read and a minibert model saved in a form ``transformers`` loads.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

import torch.nn.functional as F
from torch import Tensor

from minibert.utils import read_json_object

# Label conventions, in one place (Google's BERT and Hugging Face; d2l uses 1 = IsNext instead)
IGNORE_INDEX = -100  # a label that takes no part in a loss, as in PyTorch and Hugging Face
IS_NEXT, NOT_NEXT = 0, 1  # next_sentence_label: 0 = B follows A, 1 = B is from elsewhere
# the sentence-level pretraining objective: next sentence prediction (BERT; 1 = B random),
# sentence order prediction (ALBERT; 1 = A and B swapped) or none (RoBERTa: MLM only)
OBJECTIVES = ("nsp", "sop", "none")

# name -> (num_layers, hidden_size, num_heads); intermediate_size is 4 * hidden_size
PRESETS: dict[str, tuple[int, int, int]] = {
    "tiny": (2, 128, 2),
    "mini": (4, 256, 4),
    "small": (4, 512, 8),
    "medium": (8, 512, 8),
    "base": (12, 768, 12),
}

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {  # the feed-forward nonlinearity
    "gelu": F.gelu,  # BERT's exact GELU, x * Phi(x)
    "gelu_new": partial(F.gelu, approximate="tanh"),  # GPT-2's tanh approximation
    "relu": F.relu,  # the original Transformer's (and d2l's BERT)
}

# a sentence classifier's input, in the package's one pooling vocabulary: "pooler" (BERT's pooler,
# dense + tanh on [CLS]: BERT's head), "cls" (the last layer's raw [CLS] vector, no pooler) or
# "mean" (the tokens' mean); "first" was the raw [CLS] vector's name when "cls" meant the pooler
POOLINGS = ("pooler", "cls", "mean")
RENAMED_POOLINGS = {"first": "cls"}

# minibert field -> Hugging Face config.json key; read both ways by to_hf_config/from_hf_config
HF_CONFIG_KEYS: dict[str, str] = {
    "vocab_size": "vocab_size",
    "hidden_size": "hidden_size",
    "num_layers": "num_hidden_layers",
    "num_heads": "num_attention_heads",
    "intermediate_size": "intermediate_size",
    "max_position_embeddings": "max_position_embeddings",
    "type_vocab_size": "type_vocab_size",
    "hidden_dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "layer_norm_eps": "layer_norm_eps",
    "activation": "hidden_act",
    "initializer_range": "initializer_range",
}


# the fields whose values fix the shapes of the encoder's weights (dropout and the like do not)
SIZE_FIELDS = (
    "vocab_size",
    "hidden_size",
    "num_layers",
    "num_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


@dataclass
class BertConfig:
    """Sizes and regularisation of a BERT model; the defaults are bert-base-uncased's."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    hidden_dropout: float = 0.1
    attention_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    activation: str = "gelu"
    initializer_range: float = 0.02
    num_labels: int = 2  # outputs of the classification heads (fine-tuning)
    label_names: tuple[str, ...] | None = None  # index = label id; config.json's id2label
    # what a sentence classifier reads: "pooler", the pooler on [CLS] (BERT's and transformers'
    # head), or "mean", the mean of the last layer's vectors over the real tokens (how MiniLM's
    # sentence training pooled), or "cls", the last layer's [CLS] vector with no pooler dense +
    # tanh. transformers ignores the key: a "mean" or "cls" folder's logits are minibert's only.
    classifier_pooling: str = "pooler"

    def __post_init__(self) -> None:
        for name in (*SIZE_FIELDS, "num_labels"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")
        if self.hidden_size % self.num_heads != 0:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_heads "
                f"({self.num_heads}), so that every head gets hidden_size / num_heads dimensions; "
                f"choose num_heads among the divisors of {self.hidden_size}."
            )
        for name in ("hidden_dropout", "attention_dropout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
                raise ValueError(f"{name} must be a probability in [0, 1), got {value!r}.")
        for name in ("layer_norm_eps", "initializer_range"):
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 < value < math.inf
            ):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}.")
        if self.label_names is not None:
            names = self.label_names = tuple(self.label_names)
            if len(names) != self.num_labels or not all(isinstance(n, str) and n for n in names):
                raise ValueError(
                    f"label_names must be {self.num_labels} non-empty strings (one per label), "
                    f"got {names!r}."
                )
            if len(set(names)) != len(names):
                raise ValueError(f"label_names must differ from each other, got {names!r}.")
        if self.classifier_pooling in RENAMED_POOLINGS:
            raise ValueError(
                f"classifier_pooling {self.classifier_pooling!r} is now "
                f"{RENAMED_POOLINGS[self.classifier_pooling]!r} (the raw [CLS] vector; 'pooler' "
                "is BERT's pooler on it)."
            )
        if self.classifier_pooling not in POOLINGS:
            raise ValueError(
                f"classifier_pooling must be one of {POOLINGS}, got {self.classifier_pooling!r}."
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {tuple(ACTIVATIONS)} ('gelu' is BERT's exact GELU), "
                f"got {self.activation!r}."
            )
        _check_fits_in_memory(self)

    @property
    def head_dim(self) -> int:
        """Dimensions per attention head: hidden_size / num_heads."""
        return self.hidden_size // self.num_heads

    def names(self) -> tuple[str, ...]:
        """The labels' names: label_names, or Hugging Face's defaults LABEL_0, LABEL_1, ..."""
        return self.label_names or tuple(f"LABEL_{i}" for i in range(self.num_labels))

    @classmethod
    def preset(cls, name: str, **overrides: Any) -> BertConfig:
        """A named size (tiny, mini, small, medium, base); keyword arguments override fields."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}.")
        layers, hidden, heads = PRESETS[name]
        sizes = dict(
            num_layers=layers, hidden_size=hidden, num_heads=heads, intermediate_size=4 * hidden
        )
        return cls.from_dict({**sizes, **overrides})

    def replace(self, **changes: Any) -> BertConfig:
        """A copy with some fields changed (validated again)."""
        return replace(self, **changes)

    # --- plain dicts (minibert's own names) ----------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """All fields as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> BertConfig:
        """The inverse of to_dict; unknown keys raise a ValueError naming them."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(
                f"unknown BertConfig field(s) {unknown}; the fields are {sorted(known)}. "
                f"For a Hugging Face config.json use BertConfig.from_hf_config."
            )
        return cls(**d)

    # --- Hugging Face config.json --------------------------------------------------------------

    def to_hf_config(self) -> dict[str, Any]:
        """This config as the dict of a Hugging Face BERT ``config.json``."""
        return {
            "architectures": ["BertModel"],
            "model_type": "bert",
            **{theirs: getattr(self, ours) for ours, theirs in HF_CONFIG_KEYS.items()},
            "id2label": {str(i): name for i, name in enumerate(self.names())},
            "label2id": {name: i for i, name in enumerate(self.names())},
            "pad_token_id": 0,
            "position_embedding_type": "absolute",
            "is_decoder": False,
            **(
                {}
                if self.classifier_pooling == "pooler"
                else {"classifier_pooling": self.classifier_pooling}
            ),
        }

    @classmethod
    def from_hf_config(cls, source: dict[str, Any] | str | Path) -> BertConfig:
        """Read a Hugging Face BERT ``config.json`` (a dict, the file, or its folder); a refused
        file raises a ValueError naming it."""
        if isinstance(source, dict):
            return cls._from_hf_dict(source)
        path = Path(source)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise FileNotFoundError(
                f"no config.json at {path}; pass a Hugging Face BERT folder or its config.json."
            )
        try:
            return cls._from_hf_dict(read_json_object(path))
        except ValueError as exc:
            if str(path) in str(exc):
                raise
            raise ValueError(f"{path}: {exc}") from None

    @classmethod
    def _from_hf_dict(cls, d: dict[str, Any]) -> BertConfig:
        """A config.json's dict -> BertConfig, refusing what minibert cannot represent."""
        if d.get("model_type", "bert") != "bert":
            raise ValueError(
                f"expected a BERT config (model_type 'bert'), got model_type {d['model_type']!r}."
            )
        if d.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                "minibert implements BERT's learned absolute positions, got "
                f"position_embedding_type {d['position_embedding_type']!r}."
            )
        if d.get("is_decoder", False):
            raise ValueError("minibert is an encoder; this config has is_decoder=True.")
        ours = {mine: d[theirs] for mine, theirs in HF_CONFIG_KEYS.items() if theirs in d}
        if "id2label" in d:
            names = _label_names(d["id2label"])
            ours["num_labels"] = len(names)
            if names != tuple(f"LABEL_{i}" for i in range(len(names))):
                ours["label_names"] = names
        elif "num_labels" in d:
            ours["num_labels"] = d["num_labels"]
        if "classifier_pooling" in d:  # minibert's own key (a mean-pooled sentence classifier)
            saved = d["classifier_pooling"]  # a folder saved before the rename: its old name
            ours["classifier_pooling"] = RENAMED_POOLINGS.get(saved, saved)
        return cls(**ours)


def _label_names(id2label: Any) -> tuple[str, ...]:
    """config.json's id2label ({"0": "negative", "1": "positive"}) -> the names in id order."""
    keys = list(id2label) if isinstance(id2label, dict) else None
    ids = [_label_id(k) for k in keys or []]
    if keys is None or None in ids or sorted(ids) != list(range(len(ids))):
        shown = keys if keys is not None else id2label
        raise ValueError(
            f"id2label must map each label id 0, 1, ... to its name, got "
            f"{shown!r:.200}; fix config.json or save the model again"
        )
    return tuple(id2label[k] for _, k in sorted(zip(ids, keys)))


def _label_id(key: Any) -> int | None:
    """An id2label key as its label id: "3" in a config.json, 3 in a dict made in Python."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    return int(key) if isinstance(key, str) and key.isdecimal() else None


def _parameters(sizes: dict[str, int]) -> int:
    """The parameters of the largest model of these sizes: BertForPreTraining (or a classifier)."""
    V, P, T = sizes["vocab_size"], sizes["max_position_embeddings"], sizes["type_vocab_size"]
    H, I, L = sizes["hidden_size"], sizes["intermediate_size"], sizes["num_layers"]  # noqa: E741
    embeddings = (V + P + T) * H + 2 * H
    layer = 4 * (H * H + H) + 2 * H * I + I + H + 4 * H  # attention, feed-forward, 2 LayerNorms
    heads = (H * H + H) + (H * H + 3 * H + V) + max(2, sizes["num_labels"]) * (H + 1)
    return embeddings + L * layer + heads


def _memory_bytes() -> int:
    """This machine's memory in bytes (1 TiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows)
        return 2**40


def _check_fits_in_memory(config: BertConfig) -> None:
    """Refuse sizes whose float32 weights alone exceed this machine's memory, before any tensor is
    made, naming the size that makes them so large (the one whose BERT-base value shrinks most)."""
    sizes = {name: getattr(config, name) for name in (*SIZE_FIELDS, "num_labels")}
    needed, memory = 4 * _parameters(sizes), _memory_bytes()
    if needed <= memory:
        return
    base = BertConfig.__dataclass_fields__
    culprit = min(sizes, key=lambda name: _parameters(sizes | {name: base[name].default}))
    raise ValueError(
        f"{culprit}={sizes[culprit]:,} makes a model of {needed / 1e9:,.1f} GB of float32 weights, "
        f"more than this machine's {memory / 1e9:,.1f} GB of memory (BERT-base has "
        f"{culprit}={base[culprit].default:,}); choose a smaller {culprit}."
    )
