"""minibert.checkpoint: the name table, Hugging Face folders both ways, dtypes, layouts, errors."""

import json
import shutil

import pytest
import safetensors.torch
import torch
import transformers

from minibert import checkpoint
from minibert.assets import path as asset_path
from minibert.checkpoint import from_hf_names, name_table, to_hf_names
from minibert.config import BertConfig
from minibert.model import (
    BertForMaskedLM,
    BertForPreTraining,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)

CFG = BertConfig(
    vocab_size=80,
    hidden_size=24,
    num_layers=2,
    num_heads=3,
    intermediate_size=40,
    max_position_embeddings=32,
    num_labels=3,
)
PAIRS = [  # minibert class, transformers class
    (BertModel, transformers.BertModel),
    (BertForPreTraining, transformers.BertForPreTraining),
    (BertForMaskedLM, transformers.BertForMaskedLM),
    (BertForSequenceClassification, transformers.BertForSequenceClassification),
    (BertForTokenClassification, transformers.BertForTokenClassification),
]
IDS = torch.tensor([[2, 14, 15, 9, 3, 20, 21, 3], [2, 40, 41, 3, 50, 3, 0, 0]])
TYPES = torch.tensor([[0, 0, 0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1, 0, 0]])
MASK = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 0, 0]])


def hf_model(hf_cls, seed=0):
    torch.manual_seed(seed)
    config = transformers.BertConfig(**CFG.to_hf_config())
    return hf_cls(config).eval()


def logits(out):
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out.logits


def ours_logits(out):
    for name in ("mlm_logits", "logits"):
        if getattr(out, name, None) is not None:
            return getattr(out, name)
    return out.last_hidden_state


def test_table_names_every_parameter_of_every_model_both_ways():
    table = name_table(CFG.num_layers)
    assert len(table) == len(set(table.values()))  # one to one
    for ours_cls, hf_cls in PAIRS:
        ours = ours_cls(CFG).state_dict()
        hf_keys = set(hf_model(hf_cls).state_dict())
        tied = {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}
        assert set(to_hf_names(ours, CFG.num_layers)) == hf_keys - tied, ours_cls.__name__
        back, unknown = from_hf_names(to_hf_names(ours, CFG.num_layers), CFG.num_layers)
        assert unknown == []
        if ours_cls is BertModel:
            back = {n.removeprefix("bert."): t for n, t in back.items()}
        assert set(back) == set(ours) - {"mlm.decoder.weight"}


@pytest.mark.parametrize(("ours_cls", "hf_cls"), PAIRS, ids=lambda c: c.__name__)
def test_transformers_folder_loads_into_minibert(ours_cls, hf_cls, tmp_path):
    hf = hf_model(hf_cls)
    hf.save_pretrained(tmp_path)
    ours = ours_cls.from_pretrained(tmp_path).eval()
    assert ours.loading_info == {"ignored": [], "newly_initialized": []}
    with torch.no_grad():
        a = hf(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK)
        b = ours(IDS, TYPES, MASK)
    expected = a.prediction_logits if hf_cls is transformers.BertForPreTraining else logits(a)
    torch.testing.assert_close(ours_logits(b), expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("ours_cls", "hf_cls"), PAIRS, ids=lambda c: c.__name__)
def test_minibert_folder_loads_into_transformers_with_no_missing_keys(ours_cls, hf_cls, tmp_path):
    torch.manual_seed(1)
    ours = ours_cls(CFG).eval()
    ours.save_pretrained(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "model.safetensors"]
    hf, info = hf_cls.from_pretrained(tmp_path, output_loading_info=True)
    assert not any(info.values()), info
    with torch.no_grad():
        a = hf.eval()(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK)
        b = ours(IDS, TYPES, MASK)
    expected = a.prediction_logits if hf_cls is transformers.BertForPreTraining else logits(a)
    torch.testing.assert_close(ours_logits(b), expected, atol=1e-5, rtol=0)
    # and back into minibert, bit for bit
    again = ours_cls.from_pretrained(tmp_path)
    for (n, p), (m, q) in zip(ours.state_dict().items(), again.state_dict().items(), strict=True):
        assert n == m and torch.equal(p, q), n


def test_pretraining_folder_loads_into_the_encoder_and_a_classifier(tmp_path):
    hf = hf_model(transformers.BertForPreTraining)
    hf.save_pretrained(tmp_path)
    encoder = BertModel.from_pretrained(tmp_path)
    assert "mlm.dense.weight" in encoder.loading_info["ignored"]
    assert "nsp.classifier.weight" in encoder.loading_info["ignored"]
    torch.testing.assert_close(encoder.pooler.dense.weight, hf.bert.pooler.dense.weight)
    classifier = BertForSequenceClassification.from_pretrained(tmp_path)
    assert classifier.loading_info["newly_initialized"] == ["classifier.bias", "classifier.weight"]
    torch.testing.assert_close(
        classifier.bert.embeddings.word_embeddings.weight, hf.bert.embeddings.word_embeddings.weight
    )
    masked_lm = BertForMaskedLM.from_pretrained(tmp_path)  # no pooler in BertForMaskedLM
    assert "bert.pooler.dense.weight" in masked_lm.loading_info["ignored"]


def test_real_minilm_loads_from_both_sentence_transformers_layouts(tmp_path):
    folder = asset_path("minilm")
    root = BertModel.from_pretrained(folder)  # config.json and weights at the root
    assert root.loading_info["ignored"] == []
    # the newer layout: modules.json points to a Transformer module in a subfolder
    nested = tmp_path / "st"
    (nested / "0_Transformer").mkdir(parents=True)
    for name in ("config.json", "model.safetensors"):
        shutil.copy(folder / name, nested / "0_Transformer" / name)
    modules = [
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": checkpoint.ST_TRANSFORMER},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    (nested / "modules.json").write_text(json.dumps(modules))
    sub = BertModel.from_pretrained(nested)
    for p, q in zip(root.parameters(), sub.parameters(), strict=True):
        assert torch.equal(p, q)


def test_pretraining_heads_missing_from_minilm_raise_listing_them():
    with pytest.raises(ValueError, match=r"missing keys: BertForPreTraining.*mlm\.dense\.weight"):
        BertForPreTraining.from_pretrained(asset_path("minilm"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_weights_load_as_float32(dtype, tmp_path):
    hf = hf_model(transformers.BertForPreTraining).to(dtype)
    hf.save_pretrained(tmp_path)
    stored = safetensors.torch.load_file(tmp_path / "model.safetensors")
    assert stored["bert.embeddings.word_embeddings.weight"].dtype == dtype
    ours = BertForPreTraining.from_pretrained(tmp_path)
    assert all(p.dtype == torch.float32 for p in ours.parameters())
    torch.testing.assert_close(
        ours.bert.encoder.layers[1].ffn_in.weight,
        stored["bert.encoder.layer.1.intermediate.dense.weight"].float(),
        atol=0,
        rtol=0,
    )


def test_old_pytorch_model_bin_with_tf_names_and_tied_copies(tmp_path):
    """Checkpoints converted from Google's TF release: .bin, LayerNorm gamma/beta, decoder copy."""
    hf = hf_model(transformers.BertForPreTraining)
    state = {}
    for name, tensor in hf.state_dict().items():
        name = name.replace("LayerNorm.weight", "LayerNorm.gamma")
        state[name.replace("LayerNorm.bias", "LayerNorm.beta")] = tensor.clone()
    assert "cls.predictions.decoder.weight" in state
    torch.save(state, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(json.dumps(CFG.to_hf_config()))
    ours = BertForPreTraining.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        a = hf(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK)
        b = ours(IDS, TYPES, MASK)
    torch.testing.assert_close(b.mlm_logits, a.prediction_logits, atol=1e-5, rtol=0)
    torch.testing.assert_close(b.nsp_logits, a.seq_relationship_logits, atol=1e-5, rtol=0)


class _Payload:
    def __reduce__(self):
        return (print, ("this ran while loading",))


def test_a_bin_is_read_without_unpickling_code(tmp_path, capsys):
    torch.save({"x": _Payload()}, tmp_path / "pytorch_model.bin")
    (tmp_path / "config.json").write_text(json.dumps(CFG.to_hf_config()))
    with pytest.raises(Exception, match="Weights only load failed"):
        BertModel.from_pretrained(tmp_path)
    assert "this ran" not in capsys.readouterr().out


def test_sharded_safetensors(tmp_path):
    ours = BertModel(CFG)
    ours.save_pretrained(tmp_path)
    state = safetensors.torch.load_file(tmp_path / "model.safetensors")
    (tmp_path / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"a.safetensors": names[::2], "b.safetensors": names[1::2]}
    for shard, keys in shards.items():
        safetensors.torch.save_file({k: state[k] for k in keys}, tmp_path / shard)
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    again = BertModel.from_pretrained(tmp_path)
    for p, q in zip(ours.parameters(), again.parameters(), strict=True):
        assert torch.equal(p, q)


# --- errors ---------------------------------------------------------------------------------------


@pytest.fixture
def saved(tmp_path):
    BertForPreTraining(CFG).save_pretrained(tmp_path)
    return tmp_path


def rewrite_weights(folder, change):
    state = safetensors.torch.load_file(folder / "model.safetensors")
    change(state)
    safetensors.torch.save_file(state, folder / "model.safetensors")


def test_missing_keys_are_listed(saved):
    rewrite_weights(saved, lambda s: s.pop("bert.encoder.layer.1.output.dense.bias"))
    with pytest.raises(ValueError, match=r"missing keys.*bert\.encoder\.layers\.1\.ffn_out\.bias"):
        BertForPreTraining.from_pretrained(saved)


def test_unexpected_keys_are_listed(saved):
    rewrite_weights(
        saved,
        lambda s: s.update(
            {"bert.encoder.layer.0.adapter.weight": s["cls.predictions.bias"].clone()}
        ),
    )
    with pytest.raises(
        ValueError, match=r"unexpected keys.*bert\.encoder\.layer\.0\.adapter\.weight"
    ):
        BertForPreTraining.from_pretrained(saved)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"num_hidden_layers": 1}, r"unexpected keys.*encoder\.layer\.1\."),
        ({"num_hidden_layers": 3}, r"missing keys.*encoder\.layers\.2\."),
        (
            {"hidden_size": 48},
            r"config.json does not match.*\(model \(80, 48\), checkpoint \(80, 24\)\)",
        ),
        (
            {"vocab_size": 81},
            r"word_embeddings\.weight \(model \(81, 24\), checkpoint \(80, 24\)\)",
        ),
    ],
)
def test_config_that_does_not_match_the_weights_raises(saved, change, message):
    # a Hugging Face folder: weights without minibert's record of the config they were saved with
    rewrite_weights(saved, lambda state: None)
    config = json.loads((saved / "config.json").read_text()) | change
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=message):
        BertForPreTraining.from_pretrained(saved)


def test_a_save_interrupted_between_its_files_still_loads(saved, monkeypatch):
    # new weights were written, then the save stopped before config.json: the old config stays
    old = BertForPreTraining.from_pretrained(saved)
    bigger = BertForPreTraining(old.config.replace(hidden_size=48, num_heads=3))
    real = checkpoint.atomic_write

    def stop_before_config(target, content):
        if target.name == "config.json":
            raise KeyboardInterrupt
        return real(target, content)

    monkeypatch.setattr(checkpoint, "atomic_write", stop_before_config)
    with pytest.raises(KeyboardInterrupt):
        bigger.save_pretrained(saved)
    monkeypatch.undo()
    assert json.loads((saved / "config.json").read_text())["hidden_size"] == 24  # the old one
    with pytest.warns(UserWarning, match="saved with other sizes"):
        loaded = BertForPreTraining.from_pretrained(saved)  # the new model, whole
    for name, tensor in bigger.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor)


def test_editing_dropout_in_config_json_is_honoured(saved):
    config = json.loads((saved / "config.json").read_text()) | {"hidden_dropout_prob": 0.3}
    (saved / "config.json").write_text(json.dumps(config))
    assert BertForPreTraining.from_pretrained(saved).config.hidden_dropout == 0.3


def test_an_untied_decoder_is_refused(saved):
    def untie(state):
        state["cls.predictions.decoder.weight"] = torch.randn(80, 24)

    rewrite_weights(saved, untie)
    with pytest.raises(ValueError, match="minibert ties them"):
        BertForPreTraining.from_pretrained(saved)


def test_missing_folder_and_missing_weights(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint folder"):
        BertModel.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(CFG.to_hf_config()))
    with pytest.raises(FileNotFoundError, match="model.safetensors"):
        BertModel.from_pretrained(tmp_path)


def test_an_interrupted_save_leaves_the_old_checkpoint_intact(saved, monkeypatch):
    before = (saved / "model.safetensors").read_bytes()

    def crash(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save_file", crash)
    with pytest.raises(KeyboardInterrupt):
        BertForPreTraining(CFG).save_pretrained(saved)
    assert (saved / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in saved.iterdir()) == ["config.json", "model.safetensors"]
    BertForPreTraining.from_pretrained(saved)  # still loads


# --- damaged folders: one clear error naming the file -------------------------------------------


def test_modules_json_pointing_at_its_own_folder_is_refused(tmp_path):
    for path in ("", ".", "../" + tmp_path.name):
        modules = [{"idx": 0, "name": "0", "path": path, "type": checkpoint.ST_TRANSFORMER}]
        (tmp_path / "modules.json").write_text(json.dumps(modules))
        with pytest.raises(ValueError, match=r"modules.json points its Transformer module .* loop"):
            BertModel.from_pretrained(tmp_path)
    # two folders pointing at each other
    (tmp_path / "a").mkdir()
    for here, there in (("a", "b"), ("b", "a")):
        (tmp_path / here).mkdir(exist_ok=True)
        modules = [{"path": f"../{there}", "type": checkpoint.ST_TRANSFORMER}]
        (tmp_path / here / "modules.json").write_text(json.dumps(modules))
    with pytest.raises(ValueError, match="a loop"):
        BertModel.from_pretrained(tmp_path / "a")


@pytest.mark.parametrize(
    "text", ['[{"type": "sentence_transformers.models.Transformer", "path": ', '{"a": 1}', "[5]"]
)
def test_damaged_modules_json_names_the_file(tmp_path, text):
    (tmp_path / "modules.json").write_text(text)
    with pytest.raises(
        ValueError, match=r"modules\.json (is not valid JSON|must hold a list)"
    ) as e:
        BertModel.from_pretrained(tmp_path)
    assert str(tmp_path / "modules.json") in str(e.value)


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ({"weight_map": 5}, "weight_map must map each tensor's name"),
        ({"weight_map": {"x": 3}}, "weight_map must map each tensor's name"),
        ({"weight_map": {"x": "../elsewhere.safetensors"}}, "weight_map must map"),
        ({}, "weight_map must map"),
        ([1, 2], "must hold a JSON object"),
        ({"weight_map": {"x": "gone.safetensors"}}, "names the shard gone.safetensors"),
    ],
)
def test_damaged_index_file_names_the_file(saved, index, message):
    (saved / "model.safetensors").unlink()
    for name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        for other in saved.glob("*.index.json"):
            other.unlink()
        (saved / name).write_text(json.dumps(index))
        with pytest.raises((ValueError, FileNotFoundError), match=message) as e:
            BertForPreTraining.from_pretrained(saved)
        assert str(saved / name) in str(e.value)


def test_sharded_pytorch_model_bin_loads(saved):
    state = safetensors.torch.load_file(saved / "model.safetensors")
    (saved / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"pytorch_model-1.bin": names[::2], "pytorch_model-2.bin": names[1::2]}
    for shard, keys in shards.items():
        torch.save({k: state[k] for k in keys}, saved / shard)
    weight_map = {k: shard for shard, keys in shards.items() for k in keys}
    (saved / "pytorch_model.bin.index.json").write_text(json.dumps({"weight_map": weight_map}))
    loaded = BertForPreTraining.from_pretrained(saved)
    again = to_hf_names(loaded.state_dict(), CFG.num_layers)
    for name, tensor in state.items():
        torch.testing.assert_close(again[name], tensor)


@pytest.mark.parametrize("field", ["intermediate_size", "vocab_size", "num_hidden_layers"])
def test_a_config_too_big_for_memory_is_refused_before_any_tensor(saved, monkeypatch, field):
    config = json.loads((saved / "config.json").read_text()) | {field: 1_000_000_000}
    (saved / "config.json").write_text(json.dumps(config))

    def no_weights_read(folder):
        raise AssertionError("the weights were read before the sizes were checked")

    monkeypatch.setattr(checkpoint, "read_weights", no_weights_read)
    ours = {"num_hidden_layers": "num_layers"}.get(field, field)
    with pytest.raises(ValueError, match=rf"{ours}=1,000,000,000 makes a model of .* GB") as e:
        BertForPreTraining.from_pretrained(saved)
    assert str(saved / "config.json") in str(e.value) and "more than this machine's" in str(e.value)


def test_question_answering_folders_load_both_ways_with_equal_logits(tmp_path):
    from minibert.model import BertForQuestionAnswering

    config = CFG.replace(num_labels=2)  # a start and an end score
    torch.manual_seed(0)
    hf = transformers.BertForQuestionAnswering(transformers.BertConfig(**config.to_hf_config()))
    hf.eval().save_pretrained(tmp_path / "hf")
    ours = BertForQuestionAnswering.from_pretrained(tmp_path / "hf").eval()
    assert ours.loading_info == {"ignored": [], "newly_initialized": []}
    ours.save_pretrained(tmp_path / "ours")
    back, info = transformers.BertForQuestionAnswering.from_pretrained(
        tmp_path / "ours", output_loading_info=True
    )
    assert not any(info.values()), info
    starts, ends = torch.tensor([1, 2]), torch.tensor([3, 4])
    with torch.no_grad():
        a = hf(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK,
               start_positions=starts, end_positions=ends)  # fmt: skip
        b = ours(IDS, TYPES, MASK, start_positions=starts, end_positions=ends)
        c = back.eval()(input_ids=IDS, token_type_ids=TYPES, attention_mask=MASK)
    for name in ("start_logits", "end_logits"):
        torch.testing.assert_close(getattr(b, name), getattr(a, name), atol=1e-5, rtol=0)
        torch.testing.assert_close(getattr(c, name), getattr(a, name), atol=1e-5, rtol=0)
    torch.testing.assert_close(b.loss, a.loss, atol=1e-5, rtol=0)  # (start CE + end CE) / 2
    with pytest.raises(ValueError, match="both"):
        ours(IDS, TYPES, MASK, start_positions=starts)
