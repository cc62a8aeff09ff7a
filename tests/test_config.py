"""BertConfig: presets, validation, plain-dict and Hugging Face config.json round trips."""

import json

import pytest
import transformers

from minibert.assets import path as asset_path
from minibert.config import BertConfig


@pytest.mark.parametrize(
    ("name", "layers", "hidden", "heads"),
    [
        ("tiny", 2, 128, 2),
        ("mini", 4, 256, 4),
        ("small", 4, 512, 8),
        ("medium", 8, 512, 8),
        ("base", 12, 768, 12),
    ],
)
def test_presets_follow_googles_small_berts_and_base(name, layers, hidden, heads):
    cfg = BertConfig.preset(name)
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads) == (layers, hidden, heads)
    assert cfg.intermediate_size == 4 * hidden
    assert cfg.max_position_embeddings == 512
    assert cfg.type_vocab_size == 2
    assert cfg.head_dim == hidden // heads


def test_preset_overrides_and_unknown_preset():
    cfg = BertConfig.preset("mini", vocab_size=8000, hidden_dropout=0.0)
    assert (cfg.vocab_size, cfg.hidden_dropout, cfg.hidden_size) == (8000, 0.0, 256)
    with pytest.raises(ValueError, match=r"unknown preset 'huge'.*'base'"):
        BertConfig.preset("huge")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("vocab_size", 0),
        ("hidden_size", -8),
        ("num_layers", 0),
        ("num_heads", 0),
        ("intermediate_size", 2.5),
        ("max_position_embeddings", 0),
        ("type_vocab_size", 0),
        ("num_labels", 0),
        ("hidden_dropout", 1.0),
        ("attention_dropout", -0.1),
        ("layer_norm_eps", 0.0),
        ("initializer_range", -1.0),
        ("activation", "swish"),
        ("num_layers", True),
    ],
)
def test_invalid_values_raise_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        BertConfig(**{field: value})


def test_hidden_size_must_divide_into_heads():
    with pytest.raises(
        ValueError, match=r"hidden_size \(100\) must be divisible by num_heads \(3\)"
    ):
        BertConfig(hidden_size=100, num_heads=3)


def test_replace_validates_again():
    cfg = BertConfig.preset("tiny")
    assert cfg.replace(num_layers=3).num_layers == 3
    with pytest.raises(ValueError, match="num_heads"):
        cfg.replace(num_heads=3)


def test_dict_round_trip_and_unknown_fields():
    cfg = BertConfig.preset("small", vocab_size=777, num_labels=5, activation="relu")
    d = cfg.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert BertConfig.from_dict(d) == cfg
    with pytest.raises(ValueError, match=r"unknown BertConfig field\(s\) \['num_hidden_layers'\]"):
        BertConfig.from_dict({"num_hidden_layers": 2})


def test_hugging_face_round_trip_through_transformers():
    cfg = BertConfig.preset("mini", vocab_size=999, num_labels=3, layer_norm_eps=1e-7)
    hf = transformers.BertConfig(**cfg.to_hf_config())
    assert (hf.num_hidden_layers, hf.hidden_size, hf.num_attention_heads) == (4, 256, 4)
    assert (hf.intermediate_size, hf.vocab_size, hf.num_labels) == (1024, 999, 3)
    assert hf.hidden_act == "gelu" and hf.layer_norm_eps == 1e-7
    assert BertConfig.from_hf_config(hf.to_dict()) == cfg


def test_reads_the_real_minilm_config_json():
    cfg = BertConfig.from_hf_config(asset_path("minilm"))  # the folder or the file
    assert cfg == BertConfig.from_hf_config(asset_path("minilm") / "config.json")
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_heads) == (6, 384, 12)
    assert (cfg.intermediate_size, cfg.vocab_size, cfg.layer_norm_eps) == (1536, 30522, 1e-12)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "roberta"}, "model_type 'bert'"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type"),
        ({"is_decoder": True}, "is_decoder"),
        ({"hidden_act": "silu"}, "activation"),
    ],
)
def test_hugging_face_configs_minibert_cannot_represent_are_refused(change, message):
    d = BertConfig.preset("tiny").to_hf_config() | change
    with pytest.raises(ValueError, match=message):
        BertConfig.from_hf_config(d)


def test_missing_config_json_says_where(tmp_path):
    with pytest.raises(FileNotFoundError, match="no config.json"):
        BertConfig.from_hf_config(tmp_path)


@pytest.mark.parametrize(
    "id2label",
    [{"a": "neg", "b": "pos"}, {"0": "neg", "2": "pos"}, {"0": "neg", "00": "pos"}, ["neg", "pos"]],
)
def test_id2label_keys_that_are_not_the_label_ids_name_the_file(tmp_path, id2label):
    config = BertConfig.preset("tiny").to_hf_config() | {"id2label": id2label}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=r"id2label must map each label id 0, 1, \.\.\. to") as e:
        BertConfig.from_hf_config(tmp_path)
    assert str(tmp_path / "config.json") in str(e.value)
    unordered = config | {"id2label": {"1": "pos", "0": "neg"}}
    assert BertConfig.from_hf_config(unordered).label_names == ("neg", "pos")


def test_sizes_beyond_the_machines_memory_are_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"intermediate_size=1,000,000,000 makes a model of"):
        BertConfig.preset("tiny", intermediate_size=10**9)
    with pytest.raises(ValueError, match=r"num_layers=100,000,000 makes a model of"):
        BertConfig.preset("tiny", num_layers=10**8)
    with pytest.raises(ValueError, match=r"vocab_size=.* than this machine's .* GB of memory"):
        BertConfig(vocab_size=10**12)
    assert BertConfig(num_layers=24, hidden_size=1024, num_heads=16, intermediate_size=4096)
