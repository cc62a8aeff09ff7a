"""Load and save BERT checkpoints in Hugging Face's layout, with one explicit table of names.

A Hugging Face BERT folder holds ``config.json`` and ``model.safetensors`` (older ones:
``pytorch_model.bin``). minibert names its parameters its own way (``encoder.layers.0.ffn_in``
instead of ``encoder.layer.0.intermediate.dense``); ``NAMES`` below is the whole translation, and
reading it is a tour of BERT's parameters. Loading accepts the BertModel, BertForPreTraining,
BertForMaskedLM, classification and sentence-transformers layouts, float32, float16 or bfloat16
weights, and never touches the network. Saving writes a folder ``transformers`` loads with no
missing or unexpected keys; each file is written to a temporary name and then renamed, so an
interrupted save never leaves a broken checkpoint.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from minibert.config import SIZE_FIELDS, BertConfig
from minibert.utils import atomic_write, read_json_object

# minibert name -> Hugging Face name. "{i}" stands for the layer index. The encoder's names are
# BertModel's; inside the task models both sides carry the prefix "bert.". The heads' names are
# the same in every task model that has them.
NAMES: tuple[tuple[str, str], ...] = (
    # embeddings: three tables, summed, then LayerNorm
    ("embeddings.word_embeddings.weight", "embeddings.word_embeddings.weight"),
    ("embeddings.position_embeddings.weight", "embeddings.position_embeddings.weight"),
    ("embeddings.token_type_embeddings.weight", "embeddings.token_type_embeddings.weight"),
    ("embeddings.layer_norm.weight", "embeddings.LayerNorm.weight"),
    ("embeddings.layer_norm.bias", "embeddings.LayerNorm.bias"),
    # one encoder layer: self-attention ...
    ("encoder.layers.{i}.attention.query.weight", "encoder.layer.{i}.attention.self.query.weight"),
    ("encoder.layers.{i}.attention.query.bias", "encoder.layer.{i}.attention.self.query.bias"),
    ("encoder.layers.{i}.attention.key.weight", "encoder.layer.{i}.attention.self.key.weight"),
    ("encoder.layers.{i}.attention.key.bias", "encoder.layer.{i}.attention.self.key.bias"),
    ("encoder.layers.{i}.attention.value.weight", "encoder.layer.{i}.attention.self.value.weight"),
    ("encoder.layers.{i}.attention.value.bias", "encoder.layer.{i}.attention.self.value.bias"),
    (
        "encoder.layers.{i}.attention.output.weight",
        "encoder.layer.{i}.attention.output.dense.weight",
    ),
    ("encoder.layers.{i}.attention.output.bias", "encoder.layer.{i}.attention.output.dense.bias"),
    # ... add & norm ...
    (
        "encoder.layers.{i}.attention_norm.weight",
        "encoder.layer.{i}.attention.output.LayerNorm.weight",
    ),
    ("encoder.layers.{i}.attention_norm.bias", "encoder.layer.{i}.attention.output.LayerNorm.bias"),
    # ... feed-forward ...
    ("encoder.layers.{i}.ffn_in.weight", "encoder.layer.{i}.intermediate.dense.weight"),
    ("encoder.layers.{i}.ffn_in.bias", "encoder.layer.{i}.intermediate.dense.bias"),
    ("encoder.layers.{i}.ffn_out.weight", "encoder.layer.{i}.output.dense.weight"),
    ("encoder.layers.{i}.ffn_out.bias", "encoder.layer.{i}.output.dense.bias"),
    # ... add & norm
    ("encoder.layers.{i}.ffn_norm.weight", "encoder.layer.{i}.output.LayerNorm.weight"),
    ("encoder.layers.{i}.ffn_norm.bias", "encoder.layer.{i}.output.LayerNorm.bias"),
    # pooler: dense + tanh on [CLS]
    ("pooler.dense.weight", "pooler.dense.weight"),
    ("pooler.dense.bias", "pooler.dense.bias"),
    # masked language model head (its decoder matrix is the word embeddings, tied)
    ("mlm.dense.weight", "cls.predictions.transform.dense.weight"),
    ("mlm.dense.bias", "cls.predictions.transform.dense.bias"),
    ("mlm.layer_norm.weight", "cls.predictions.transform.LayerNorm.weight"),
    ("mlm.layer_norm.bias", "cls.predictions.transform.LayerNorm.bias"),
    ("mlm.decoder.bias", "cls.predictions.bias"),
    # next sentence prediction head
    ("nsp.classifier.weight", "cls.seq_relationship.weight"),
    ("nsp.classifier.bias", "cls.seq_relationship.bias"),
    # fine-tuning classifier (sequence or token classification)
    ("classifier.weight", "classifier.weight"),
    ("classifier.bias", "classifier.bias"),
    # extractive question answering: a start and an end score per token
    ("qa_outputs.weight", "qa_outputs.weight"),
    ("qa_outputs.bias", "qa_outputs.bias"),
)
# minibert prefixes of the names outside the encoder
HEADS = ("mlm.", "nsp.", "classifier.", "qa_outputs.")
TIED = {"mlm.decoder.weight": "embeddings.word_embeddings.weight"}  # one matrix, stored once
# Hugging Face entries that are not parameters of ours: a buffer, and copies of tied parameters
HF_COPIES = {
    "embeddings.position_ids": None,
    "cls.predictions.decoder.weight": "embeddings.word_embeddings.weight",
    "cls.predictions.decoder.bias": "cls.predictions.bias",
}
NEW_HEADS_OK = ("classifier.", "qa_outputs.")  # a fine-tuning head may start from random weights
WEIGHT_FILES = (  # in the order they are looked for; an index names the shards of a sharded model
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
ST_TRANSFORMER = "sentence_transformers.models.Transformer"


def _expand(pattern: str, num_layers: int) -> list[str]:
    """One pattern of NAMES -> its names, one per layer when it contains {i}."""
    if "{i}" not in pattern:
        return [pattern]
    return [pattern.format(i=i) for i in range(num_layers)]


def name_table(num_layers: int) -> dict[str, str]:
    """Every minibert name of a num_layers model (BertModel naming) -> its Hugging Face name."""
    table = {}
    for ours, theirs in NAMES:
        table.update(zip(_expand(ours, num_layers), _expand(theirs, num_layers), strict=True))
    return table


def _split(name: str) -> tuple[str, str]:
    """A task model's name -> ("bert.", encoder name) or ("", head name); BertModel: ("", name)."""
    if name.startswith("bert."):
        return "bert.", name[len("bert.") :]
    return "", name


def to_hf_names(state: dict[str, Tensor], num_layers: int) -> dict[str, Tensor]:
    """A minibert state dict -> Hugging Face names, the tied decoder matrix left out."""
    table = name_table(num_layers)
    out = {}
    for name, tensor in state.items():
        prefix, rest = _split(name)
        if rest in TIED:
            continue
        if rest not in table:
            raise KeyError(f"no Hugging Face name for minibert parameter {name!r}; extend NAMES.")
        out[prefix + table[rest]] = tensor
    return out


def from_hf_names(state: dict[str, Tensor], num_layers: int) -> tuple[dict[str, Tensor], list[str]]:
    """Hugging Face state dict -> (minibert names with "bert." on encoder names, unknown keys).

    Accepts both layouts (with and without "bert."), old LayerNorm names (gamma, beta), and
    drops the entries of HF_COPIES after checking that each copy equals its original.
    """
    reverse = {theirs: ours for ours, theirs in name_table(num_layers).items()}
    renamed = {}
    for name, tensor in state.items():
        if name.endswith(("LayerNorm.gamma", "LayerNorm.beta")):  # TF-era checkpoints
            name = name.replace("LayerNorm.gamma", "LayerNorm.weight")
            name = name.replace("LayerNorm.beta", "LayerNorm.bias")
        prefix, rest = _split(name)
        renamed[rest] = (prefix, tensor)
    out, unknown = {}, []
    for rest, (prefix, tensor) in renamed.items():
        if rest in HF_COPIES:
            original = renamed.get(HF_COPIES[rest]) if HF_COPIES[rest] else None
            if original is not None and not torch.equal(original[1].float(), tensor.float()):
                raise ValueError(
                    f"checkpoint entry {prefix + rest!r} differs from {HF_COPIES[rest]!r}; minibert "
                    f"ties them (one matrix), so this checkpoint cannot be represented."
                )
            continue
        if rest not in reverse:
            unknown.append(prefix + rest)
            continue
        ours = reverse[rest]
        out[ours if ours.startswith(HEADS) else "bert." + ours] = tensor
    return out, sorted(unknown)


# --- reading a folder --------------------------------------------------------------------------


def resolve_folder(path: str | Path) -> Path:
    """The folder holding config.json and the weights (a sentence-transformers folder: its module 0)."""
    folder, passed = Path(path), []
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no checkpoint folder at {folder}; pass a folder with config.json and "
            f"model.safetensors (for the course's MiniLM: minibert.assets.path('minilm'))."
        )
    while not (folder / "config.json").is_file():
        modules = folder / "modules.json"
        inner = _transformer_module(modules) if modules.is_file() else None
        if inner is None:
            raise FileNotFoundError(
                f"{folder} holds no config.json (nor a sentence-transformers modules.json pointing "
                f"to one); it is not a Hugging Face BERT checkpoint."
            )
        passed.append(folder.resolve())
        if inner.resolve() in passed:
            raise ValueError(
                f"{modules} points its Transformer module to {inner}, a folder already passed "
                "through (a loop); point it to the folder that holds config.json"
            )
        if not inner.is_dir():
            raise FileNotFoundError(f"{modules} points to {inner}, which is not a folder")
        folder = inner
    return folder


def _transformer_module(modules: Path) -> Path | None:
    """The folder of the Transformer module that a sentence-transformers modules.json lists."""
    try:
        entries = json.loads(modules.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{modules} is not valid JSON ({exc}); fix it or save it again") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(
            f"{modules} must hold a list of modules (objects with a type and a path), got "
            f"{entries!r:.100}"
        )
    for module in entries:
        if module.get("type") == ST_TRANSFORMER:
            inner = module.get("path", "")
            if not isinstance(inner, str):
                raise ValueError(f"{modules}: a module's path must be a string, got {inner!r:.100}")
            return modules.parent / inner
    return None


def _read_file(file: Path) -> dict[str, Tensor]:
    """The tensors of one weights file; a damaged file raises a ValueError naming it."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        if file.suffix == ".safetensors":
            return load_file(str(file))
        return torch.load(file, map_location="cpu", weights_only=True)  # never unpickle code
    except (SafetensorError, RuntimeError, OSError, EOFError) as exc:
        raise ValueError(
            f"{file} cannot be read as weights ({exc}); it is damaged or not a checkpoint file"
        ) from None


def read_weights(folder: Path) -> dict[str, Tensor]:
    """All tensors of a checkpoint folder: safetensors (one file or sharded) or a .bin."""
    for name in WEIGHT_FILES:
        file = folder / name
        if not file.is_file():
            continue
        if name.endswith(".index.json"):
            state = {}
            for shard in _shards(file):
                state.update(_read_file(folder / shard))
            return state
        return _read_file(file)
    raise FileNotFoundError(f"{folder} holds none of {list(WEIGHT_FILES)}; nothing to load.")


def _shards(index: Path) -> list[str]:
    """The shard files a model.safetensors.index.json names (its weight_map: tensor -> file)."""
    weight_map = read_json_object(index).get("weight_map")
    if (
        not isinstance(weight_map, dict)
        or not weight_map
        or not all(isinstance(f, str) and f and Path(f).name == f for f in weight_map.values())
    ):
        raise ValueError(
            f"{index}: weight_map must map each tensor's name to the file name of its shard "
            f"beside it, got {weight_map!r:.100}; fix it or save the model again"
        )
    shards = sorted(set(weight_map.values()))
    for shard in shards:
        if not (index.parent / shard).is_file():
            raise FileNotFoundError(f"{index} names the shard {shard}, which is not beside it")
    return shards


def _list(keys: list[str], limit: int = 20) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


Model = TypeVar("Model", bound=nn.Module)
CONFIG_METADATA = "minibert_config"  # the config.json a weights file was saved with


def load_pretrained(cls: type[Model], path: str | Path, **config_changes: Any) -> Model:
    """Build `cls` (a model class taking a BertConfig) from a Hugging Face BERT folder.

    config_changes replace fields of the folder's config before the model is built (dropout,
    num_labels and label_names for a new classifier); a change to a size the weights fix
    (hidden_size, vocab_size, ...) raises. Mismatched keys or shapes raise, listing them. Heads that the checkpoint has and `cls` does
    not (a pretraining checkpoint loaded into BertModel) are left out; a fine-tuning classifier
    missing from the checkpoint starts from random weights. Both lists are kept in
    ``model.loading_info``.
    """
    folder = resolve_folder(path)
    config = BertConfig.from_hf_config(folder / "config.json")
    saved_with = _saved_config(folder)
    if saved_with is not None and _sizes(_metadata_config(folder, saved_with)) != _sizes(config):
        warnings.warn(
            f"{folder}: the sizes in config.json do not match the weights, which were saved with "
            "other sizes (a save_pretrained interrupted between its two files?); loading the "
            "weights with the config they were saved with. Save the model again to repair it.",
            stacklevel=3,
        )
        config = _metadata_config(folder, saved_with)
    fixed = set(config_changes) & set(SIZE_FIELDS)
    if fixed:
        raise ValueError(
            f"cannot change {', '.join(sorted(fixed))} when loading {folder.name}: the weights fix "
            "them; only fields such as dropout or the labels of a new classifier may change"
        )
    config = config.replace(**config_changes)
    _check_vocab_size(folder, config.vocab_size)
    theirs, unknown = from_hf_names(read_weights(folder), config.num_layers)
    if unknown:
        raise ValueError(
            f"unexpected keys in {folder.name}, not part of a BERT with {config.num_layers} layers "
            f"(does config.json match the weights?): {_list(unknown)}"
        )
    model = cls(config)
    own = {n: p for n, p in model.state_dict().items() if _split(n)[1] not in TIED}
    bare = not any(n.startswith("bert.") for n in own)  # BertModel's names have no "bert."
    if bare:
        theirs = {n.removeprefix("bert."): t for n, t in theirs.items()}
    ignored = sorted(n for n in theirs if n not in own)
    missing = sorted(n for n in own if n not in theirs)
    new_heads = [n for n in missing if n.startswith(NEW_HEADS_OK)]
    missing = [n for n in missing if not n.startswith(NEW_HEADS_OK)]
    if missing:
        raise ValueError(
            f"missing keys: {cls.__name__} needs parameters that {folder.name} does not hold: "
            f"{_list(missing)}"
        )
    misfits = [
        f"{n} (model {tuple(own[n].shape)}, checkpoint {tuple(theirs[n].shape)})"
        for n in own
        if n in theirs and own[n].shape != theirs[n].shape
    ]
    if misfits:
        raise ValueError(
            f"config.json does not match the weights in {folder.name}; shapes differ for: "
            f"{_list(misfits)}"
        )
    kept = {n: theirs[n].to(own[n].dtype) for n in own if n in theirs}  # fp16/bf16 -> fp32
    model.load_state_dict(kept, strict=False)  # the tied decoder follows the embeddings
    model.loading_info = {"ignored": ignored, "newly_initialized": new_heads}
    return model


def _metadata_config(folder: Path, saved_with: dict) -> BertConfig:
    """The config stored in model.safetensors' metadata; refused, a ValueError naming the file."""
    try:
        return BertConfig.from_hf_config(saved_with)
    except ValueError as exc:
        raise ValueError(f"{folder / 'model.safetensors'} (its config metadata): {exc}") from None


def _check_vocab_size(folder: Path, vocab_size: int) -> None:
    """A folder's vocab.txt must have one line per row of the embedding table (if it has one)."""
    vocab = folder / "vocab.txt"
    if vocab.is_file():
        with vocab.open("rb") as f:
            lines = sum(1 for _ in f)
        if lines != vocab_size:
            raise ValueError(
                f"{vocab} has {lines:,} lines but the model's vocab_size is {vocab_size:,}: every "
                "token id would name another word; restore the vocabulary saved with the weights"
            )


# --- writing a folder --------------------------------------------------------------------------


def _sizes(config: BertConfig) -> tuple[int, ...]:
    """The fields that fix the weights' shapes, the classifier's number of labels included."""
    return (*(getattr(config, name) for name in SIZE_FIELDS), config.num_labels)


def _saved_config(folder: Path) -> dict | None:
    """The config.json dict stored in model.safetensors' metadata by save_pretrained, if any."""
    file = folder / "model.safetensors"
    if not file.is_file():
        return None
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(file), framework="pt") as f:
            saved = (f.metadata() or {}).get(CONFIG_METADATA)
        config = json.loads(saved) if saved else None
    except (SafetensorError, OSError, ValueError):  # a damaged file: read_weights names it
        return None
    return config if isinstance(config, dict) else None


def save_pretrained(model: nn.Module, path: str | Path) -> None:
    """Write config.json and model.safetensors with Hugging Face names into the folder `path`.

    Each file is written atomically, and the weights carry their config in their metadata, so a
    save interrupted between the two files still loads (as the new model, with a warning).
    """
    from safetensors.torch import save_file

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    state = to_hf_names(model.state_dict(), model.config.num_layers)
    tensors = {n: t.detach().to("cpu").contiguous() for n, t in state.items()}
    config = model.config.to_hf_config()
    config["architectures"] = [type(model).__name__]
    config["tie_word_embeddings"] = True

    text = json.dumps(config, indent=2) + "\n"
    metadata = {"format": "pt", CONFIG_METADATA: text}
    atomic_write(folder / "model.safetensors", lambda tmp: save_file(tensors, tmp, metadata))
    atomic_write(folder / "config.json", text)
