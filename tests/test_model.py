"""minibert.model: parity with Hugging Face transformers, the real MiniLM, gradients, padding, errors."""

import math

import pytest
import torch
import torch.nn.functional as F
import transformers
from conftest import make_tiny_config

import minibert
from minibert.assets import path as asset_path
from minibert.config import BertConfig
from minibert.model import (
    BertForMaskedLM,
    BertForPreTraining,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    EncoderLayer,
)

ATOL = 1e-5  # float32 hidden states, as CONTRIBUTING.md says

# (layers, hidden, heads, intermediate): one head, twelve heads, and a middle one
CONFIGS = [(2, 32, 1, 64), (2, 48, 12, 96), (3, 64, 4, 128)]


def hf_config(layers, hidden, heads, intermediate, attn="eager"):
    return transformers.BertConfig(
        vocab_size=120,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=intermediate,
        max_position_embeddings=40,
        attn_implementation=attn,
    )


def batch(vocab=120, seq=12):
    """Three sequences: both segments, and two of them padded (one heavily)."""
    g = torch.Generator().manual_seed(1)
    input_ids = torch.randint(0, vocab, (3, seq), generator=g)
    token_type_ids = torch.zeros_like(input_ids)
    token_type_ids[:, seq // 2 :] = 1
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, seq - 4 :] = 0
    attention_mask[2, 3:] = 0
    return input_ids, token_type_ids, attention_mask


def close(a, b):
    torch.testing.assert_close(a, b, atol=ATOL, rtol=0)


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda c: f"L{c[0]}-H{c[1]}-A{c[2]}")
def pair(request, tmp_path_factory):
    """A random transformers BertForPreTraining and the same weights in minibert."""
    torch.manual_seed(0)
    hf = transformers.BertForPreTraining(hf_config(*request.param)).eval()
    folder = tmp_path_factory.mktemp("hf")
    hf.save_pretrained(folder)
    return hf, BertForPreTraining.from_pretrained(folder).eval(), folder


def test_bert_model_equals_transformers(pair):
    hf, _, folder = pair
    ours = BertModel.from_pretrained(folder).eval()
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids, types, mask = batch()
    with torch.no_grad():
        a = theirs(
            input_ids=ids,
            token_type_ids=types,
            attention_mask=mask,
            output_attentions=True,
            output_hidden_states=True,
        )
        b = ours(ids, types, mask, output_attentions=True, output_hidden_states=True)
    close(b.last_hidden_state, a.last_hidden_state)
    close(b.pooler_output, a.pooler_output)
    assert len(b.attentions) == len(a.attentions) == hf.config.num_hidden_layers
    for x, y in zip(b.attentions, a.attentions, strict=True):
        assert x.shape == (3, hf.config.num_attention_heads, 12, 12)
        close(x, y)
    assert len(b.hidden_states) == hf.config.num_hidden_layers + 1
    for x, y in zip(b.hidden_states, a.hidden_states, strict=True):
        close(x, y)


def test_fused_path_equals_transformers_sdpa(pair):
    _, ours, folder = pair
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="sdpa").eval()
    ids, types, mask = batch()
    with torch.no_grad():
        a = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask)
        b = ours.bert(ids, types, mask)  # no weights asked for: the fused kernel
    assert b.attentions is None and b.hidden_states is None
    close(b.last_hidden_state, a.last_hidden_state)
    close(b.pooler_output, a.pooler_output)


def test_pretraining_logits_and_losses_equal_transformers(pair):
    hf, ours, _ = pair
    ids, types, mask = batch()
    mlm_labels = torch.full_like(ids, -100)
    mlm_labels[0, [1, 4, 7]] = torch.tensor([5, 17, 99])
    mlm_labels[1, 2] = 0
    nsp = torch.tensor([0, 1, 0])
    with torch.no_grad():
        a = hf(
            input_ids=ids,
            token_type_ids=types,
            attention_mask=mask,
            labels=mlm_labels,
            next_sentence_label=nsp,
        )
        b = ours(ids, types, mask, mlm_labels=mlm_labels, next_sentence_label=nsp)
    close(b.mlm_logits, a.prediction_logits)
    close(b.nsp_logits, a.seq_relationship_logits)
    close(b.loss, a.loss)
    close(b.mlm_loss + b.nsp_loss, b.loss)


def test_minibert_saved_loads_into_transformers_with_equal_outputs(tmp_path):
    torch.manual_seed(3)
    cfg = BertConfig(vocab_size=90, hidden_size=36, num_layers=2, num_heads=6, intermediate_size=50)
    ours = BertForPreTraining(cfg).eval()
    ours.save_pretrained(tmp_path)
    theirs, info = transformers.BertForPreTraining.from_pretrained(
        tmp_path, attn_implementation="eager", output_loading_info=True
    )
    assert not any(info.values()), info
    ids, types, mask = batch(vocab=90)
    with torch.no_grad():
        a = theirs.eval()(
            input_ids=ids, token_type_ids=types, attention_mask=mask, output_attentions=True
        )
        b = ours(ids, types, mask, output_attentions=True)
    close(b.mlm_logits, a.prediction_logits)
    close(b.nsp_logits, a.seq_relationship_logits)
    for x, y in zip(b.attentions, a.attentions, strict=True):
        close(x, y)


# --- the real MiniLM ---------------------------------------------------------------------------

SENTENCES = [
    "The bank of the river was muddy after the rain.",
    "She deposited her salary at the bank on Monday.",
    "BERT reads a whole sentence at once, left and right context together.",
]


@pytest.fixture(scope="module")
def minilm():
    folder = asset_path("minilm")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(folder)
    return folder, tokenizer, BertModel.from_pretrained(folder).eval()


def test_real_minilm_equals_transformers(minilm):
    folder, tokenizer, ours = minilm
    theirs = transformers.BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    enc = tokenizer(SENTENCES[0], SENTENCES[1], return_tensors="pt")
    padded = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    for inputs in (enc, padded):
        with torch.no_grad():
            a = theirs(**inputs, output_attentions=True)
            b = ours(
                inputs["input_ids"],
                inputs["token_type_ids"],
                inputs["attention_mask"],
                output_attentions=True,
            )
        close(b.last_hidden_state, a.last_hidden_state)
        close(b.pooler_output, a.pooler_output)
        assert len(b.attentions) == 6 and b.attentions[0].shape[1] == 12
        for x, y in zip(b.attentions, a.attentions, strict=True):
            close(x, y)


def test_real_minilm_sentence_embeddings_equal_sentence_transformers(minilm):
    from sentence_transformers import SentenceTransformer

    folder, tokenizer, ours = minilm
    reference = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    expected = torch.as_tensor(reference.encode(SENTENCES))  # (3, 384), unit length
    inputs = tokenizer(
        SENTENCES, padding=True, truncation=True, max_length=256, return_tensors="pt"
    )
    with torch.no_grad():
        hidden = ours(inputs["input_ids"], None, inputs["attention_mask"]).last_hidden_state
    weights = inputs["attention_mask"].unsqueeze(-1).float()  # (batch, seq, 1)
    mean = (hidden * weights).sum(1) / weights.sum(1)  # mean over real tokens
    embeddings = F.normalize(mean, dim=-1)
    close(embeddings, expected)
    assert embeddings[0] @ embeddings[1] < embeddings[0] @ embeddings[0]


def test_bert_base_has_the_papers_110m_parameters():
    with torch.device("meta"):  # sizes only, no memory
        model = BertModel(BertConfig.preset("base"))
        theirs = transformers.BertModel(transformers.BertConfig())
    count = sum(p.numel() for p in model.parameters())
    assert count == 109_482_240
    assert count == sum(p.numel() for p in theirs.parameters())


# --- training behaviour ------------------------------------------------------------------------

TINY = make_tiny_config(num_heads=4, intermediate_size=48, max_position_embeddings=512)


def one_step_loss(model, ids, types, mask):
    if isinstance(model, BertForPreTraining):
        labels = torch.where(torch.rand(ids.shape) < 0.3, ids, -100)
        labels[:, 1] = ids[:, 1]
        return model(ids, types, mask, labels, torch.tensor([0, 1, 1])).loss
    if isinstance(model, BertForMaskedLM | BertForTokenClassification):
        return model(ids, types, mask, labels=ids % model.config.num_labels).loss
    if isinstance(model, BertForSequenceClassification):
        return model(ids, types, mask, labels=torch.tensor([0, 1, 1])).loss
    out = model(ids, types, mask)
    return out.last_hidden_state.pow(2).mean() + out.pooler_output.pow(2).mean()


@pytest.mark.parametrize(
    "cls",
    [
        BertModel,
        BertForPreTraining,
        BertForMaskedLM,
        BertForSequenceClassification,
        BertForTokenClassification,
    ],
)
def test_every_parameter_gets_a_nonzero_gradient(cls):
    torch.manual_seed(0)
    cfg = TINY.replace(num_labels=60) if cls is BertForMaskedLM else TINY
    model = cls(cfg).train()
    ids, types, mask = batch(vocab=60)
    one_step_loss(model, ids, types, mask).backward()
    names = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert names == []
    assert any("position_embeddings" in n for n, _ in model.named_parameters())


def test_masked_lm_decoder_is_tied_to_the_word_embeddings():
    for cls in (BertForPreTraining, BertForMaskedLM):
        model = cls(TINY)
        assert model.mlm.decoder.weight is model.bert.embeddings.word_embeddings.weight
    # a tied matrix counts once
    n_pt = sum(p.numel() for p in BertForPreTraining(TINY).parameters())
    n_base = sum(p.numel() for p in BertModel(TINY).parameters())
    h, v = TINY.hidden_size, TINY.vocab_size
    assert n_pt - n_base == (h * h + h) + 2 * h + v + (2 * h + 2)


@pytest.mark.parametrize("output_attentions", [False, True])
def test_padding_does_not_change_real_positions(output_attentions):
    torch.manual_seed(0)
    model = BertModel(TINY).eval()
    ids = torch.randint(0, 60, (1, 7))
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1]])
    pad = torch.zeros(1, 5, dtype=torch.long)
    with torch.no_grad():
        short = model(ids, types, output_attentions=output_attentions)
        long = model(
            torch.cat([ids, pad], 1),
            torch.cat([types, pad], 1),
            torch.cat([torch.ones_like(ids), pad], 1),
            output_attentions=output_attentions,
        )
    close(long.last_hidden_state[:, :7], short.last_hidden_state)
    close(long.pooler_output, short.pooler_output)
    if output_attentions:
        for x, y in zip(long.attentions, short.attentions, strict=True):
            close(x[..., :7, :7], y)
            assert x[..., 7:].abs().max() == 0  # padded keys get no attention


def test_explicit_and_fused_paths_agree_and_a_full_mask_equals_none():
    torch.manual_seed(0)
    model = BertModel(TINY).eval()
    ids, types, mask = batch(vocab=60)
    with torch.no_grad():
        fused = model(ids, types, mask).last_hidden_state
        explicit = model(ids, types, mask, output_attentions=True).last_hidden_state
        full = model(ids, types, torch.ones_like(mask)).last_hidden_state
        none = model(ids, types).last_hidden_state
    torch.testing.assert_close(fused, explicit, atol=1e-6, rtol=0)
    torch.testing.assert_close(full, none, atol=0, rtol=0)


def test_eval_is_deterministic_and_train_applies_dropout():
    torch.manual_seed(0)
    model = BertForPreTraining(TINY)
    ids, types, mask = batch(vocab=60)
    model.eval()
    with torch.no_grad():
        a, b = model(ids, types, mask), model(ids, types, mask)
    assert torch.equal(a.mlm_logits, b.mlm_logits) and torch.equal(a.nsp_logits, b.nsp_logits)
    model.train()
    with torch.no_grad():
        c = model(ids, types, mask)
    assert not torch.allclose(c.mlm_logits, a.mlm_logits)


def test_encoder_layer_is_post_ln():
    torch.manual_seed(0)
    layer = EncoderLayer(TINY).eval()
    x = torch.randn(2, 5, 32)
    with torch.no_grad():
        a, _ = layer.attention(x)
        h = layer.attention_norm(x + a)
        expected = layer.ffn_norm(h + layer.ffn_out(F.gelu(layer.ffn_in(h))))
        got, weights = layer(x)
    close(got, expected)
    assert weights is None


# --- losses ------------------------------------------------------------------------------------


def test_mlm_loss_averages_over_labelled_positions_only():
    torch.manual_seed(0)
    model = BertForMaskedLM(TINY).eval()
    ids, types, mask = batch(vocab=60)
    labels = torch.full_like(ids, -100)
    labels[0, 3], labels[2, 0], labels[2, 1] = 7, 0, 59
    with torch.no_grad():
        out = model(ids, types, mask, labels=labels)
    picked = out.logits[labels != -100]  # (3, vocab)
    expected = F.cross_entropy(picked, labels[labels != -100])
    close(out.loss, expected)


def test_nsp_loss_counts_label_zero():
    """codertimo/BERT-pytorch's shared ignore_index=0 dropped every IsNext example."""
    torch.manual_seed(0)
    model = BertForPreTraining(TINY).eval()
    ids, types, mask = batch(vocab=60)
    is_next = torch.zeros(3, dtype=torch.long)
    with torch.no_grad():
        out = model(ids, types, mask, next_sentence_label=is_next)
    assert out.mlm_loss is None and out.nsp_loss is not None
    close(out.loss, F.cross_entropy(out.nsp_logits, is_next))
    assert out.loss > 0


def test_a_batch_without_labels_gives_zero_loss_not_nan():
    model = BertForPreTraining(TINY)
    ids, types, mask = batch(vocab=60)
    out = model(ids, types, mask, mlm_labels=torch.full_like(ids, -100))
    assert out.loss.item() == 0.0
    out.loss.backward()  # still part of the graph


def test_classification_heads_shapes_and_losses():
    torch.manual_seed(0)
    cfg = TINY.replace(num_labels=3)
    ids, types, mask = batch(vocab=60)
    seq_model = BertForSequenceClassification(cfg).eval()
    tok_model = BertForTokenClassification(cfg).eval()
    labels = torch.tensor([2, 0, 1])
    tags = torch.randint(0, 3, ids.shape).masked_fill(mask == 0, -100)
    with torch.no_grad():
        s = seq_model(ids, types, mask, labels=labels)
        t = tok_model(ids, types, mask, labels=tags)
    assert s.logits.shape == (3, 3) and t.logits.shape == (3, 12, 3)
    close(s.loss, F.cross_entropy(s.logits, labels))
    close(t.loss, F.cross_entropy(t.logits[mask == 1], tags[mask == 1]))
    assert t.pooler_output is None and s.pooler_output.shape == (3, 32)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": torch.tensor([0, 1])}, r"labels must have shape \(3,\), got \(2,\)"),
        ({"labels": torch.tensor([0, 1, 3])}, r"labels must lie in \[0, 2\).*\[3\]"),
        ({"labels": torch.tensor([0.0, 1.0, 1.0])}, "integer class ids"),
    ],
)
def test_bad_labels_raise(kwargs, message):
    ids, types, mask = batch(vocab=60)
    with pytest.raises((ValueError, TypeError), match=message):
        BertForSequenceClassification(TINY)(ids, types, mask, **kwargs)


# --- errors at the public boundary -------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (lambda ids: (ids.clone().fill_(60),), r"input_ids must lie in \[0, 60\).*60 to 60"),
        (lambda ids: (ids - 1,), r"input_ids must lie in \[0, 60\).*from -1"),
        (lambda ids: (torch.zeros(1, 41, dtype=torch.long),), r"max_position_embeddings=40.*41"),
        (lambda ids: (ids, torch.full_like(ids, 2)), r"token_type_ids must lie in \[0, 2\)"),
        (lambda ids: (ids, ids[:, :4] * 0), r"token_type_ids must have the shape.*\(3, 12\)"),
        (lambda ids: (ids, None, torch.ones(3, 11)), r"attention_mask must have the shape"),
        (lambda ids: (ids, None, torch.full_like(ids, 2)), r"only 1 \(real token\) and 0.*\[2\]"),
        (lambda ids: (ids, None, torch.full_like(ids, -10000.0)), r"additive mask"),
        (lambda ids: (ids, None, torch.full_like(ids, 0.5, dtype=torch.float)), r"\[0\.5\]"),
        (lambda ids: (ids, None, torch.full_like(ids, math.nan, dtype=torch.float)), r"NaN"),
        (lambda ids: (ids.bool(),), r"input_ids must hold integer ids.*torch.bool"),
        (lambda ids: (ids.to(torch.uint8),), r"input_ids must hold integer ids.*torch.uint8"),
        (lambda ids: (ids[:0],), r"batch >= 1"),
        (lambda ids: (ids[0],), r"shape \(batch, seq\).*got \(12,\).*unsqueeze\(0\)"),
        (lambda ids: (ids[:, :0],), r"seq >= 1"),
        (lambda ids: (ids.tolist(),), r"input_ids must be a tensor"),
        (lambda ids: (ids, ids.float() * 0), r"token_type_ids must hold integer ids"),
    ],
)
def test_bad_inputs_raise_value_errors_saying_what_was_expected(inputs, message):
    model = BertModel(TINY.replace(max_position_embeddings=40))
    ids, _, _ = batch(vocab=60)
    with pytest.raises(ValueError, match=message):
        model(*inputs(ids))


def test_public_names():
    assert minibert.BertModel is BertModel
    assert minibert.BertConfig is BertConfig
    assert minibert.BertForPreTraining is BertForPreTraining


def test_sparse_mlm_gives_the_same_loss_and_gradients():
    # pretraining scores only the masked positions; the loss and every gradient stay the same
    torch.manual_seed(0)
    config = make_tiny_config(
        vocab_size=50,
        hidden_size=16,
        intermediate_size=32,
        max_position_embeddings=16,
        hidden_dropout=0.0,
        attention_dropout=0.0,
    )
    model = BertForPreTraining(config)
    ids = torch.randint(5, 50, (3, 10))
    labels = torch.full((3, 10), -100)
    labels[:, 2] = ids[:, 2]
    labels[1, 5] = ids[1, 5]
    nsp = torch.tensor([0, 1, 0])
    results = []
    for sparse in (False, True):
        model.zero_grad()
        out = model(ids, mlm_labels=labels, next_sentence_label=nsp, sparse_mlm=sparse)
        out.loss.backward()
        grads = [p.grad.clone() for p in model.parameters()]
        results.append((out.mlm_loss.detach(), grads, out.mlm_logits.shape))
    torch.testing.assert_close(results[0][0], results[1][0])
    for full, sparse in zip(results[0][1], results[1][1]):
        torch.testing.assert_close(full, sparse, atol=1e-6, rtol=1e-5)
    assert results[0][2] == (3, 10, 50) and results[1][2] == (4, 50)


def test_the_additive_mask_is_built_once_and_every_layer_gets_it(monkeypatch):
    from minibert import model as model_module

    model = BertModel(TINY.replace(num_layers=4)).eval()
    ids, types, mask = batch(vocab=60)
    built, seen = [], []
    real = model_module.padding_mask
    monkeypatch.setattr(
        model_module, "padding_mask", lambda *a, **k: built.append(1) or real(*a, **k)
    )
    hooks = [
        layer.attention.register_forward_pre_hook(lambda m, args: seen.append(args[1]))
        for layer in model.encoder.layers
    ]
    with torch.no_grad():
        model(ids, types, mask)
    for h in hooks:
        h.remove()
    assert len(built) == 1  # once per forward, not once per layer
    assert len(seen) == 4 and all(s is seen[0] for s in seen)  # the same prepared tensor
    assert seen[0].shape == (3, 1, 1, 12) and seen[0].dtype == torch.float32
    assert seen[0].max() == 0 and seen[0].min() == torch.finfo(torch.float32).min


@pytest.mark.parametrize(
    "cls", [BertModel, BertForPreTraining, BertForMaskedLM, BertForSequenceClassification,
            BertForTokenClassification],
)  # fmt: skip
def test_a_new_model_is_initialised_once(cls, monkeypatch):
    from minibert.model import BertPreTrainedModel

    calls = []
    original = BertPreTrainedModel.init_weights

    def counted(self, part=None):
        calls.append((type(self).__name__, part))
        original(self, part)

    monkeypatch.setattr(BertPreTrainedModel, "init_weights", counted)
    model = cls(TINY)
    assert calls == [(cls.__name__, None)]  # once, the whole model: the encoder is not drawn twice
    embedding = model.get_submodule("bert.embeddings" if cls is not BertModel else "embeddings")
    std = float(embedding.word_embeddings.weight.detach().std())
    assert abs(std - TINY.initializer_range) < 0.002  # BERT's normal(0, 0.02)


def test_on_a_device_the_forward_reads_no_value_back(monkeypatch):
    """Each value read (int(t), bool(t), t.item()) stalls a GPU: on a device forward does none,
    and gives the same outputs; check_batch runs the skipped checks on the host batch instead."""
    import minibert.model as M
    from minibert.model import BertForPreTraining

    torch.manual_seed(0)
    model = BertForPreTraining(TINY).eval()
    ids = torch.randint(5, TINY.vocab_size, (3, 10))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    mlm = torch.full_like(ids, -100)
    mlm[:, 2] = ids[:, 2]
    batch = {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids),
             "mlm_labels": mlm, "next_sentence_label": torch.tensor([0, 1, 0])}  # fmt: skip
    expected = model(**batch)

    def read_back(*args, **kwargs):
        raise AssertionError("a tensor's value was read back to the host")

    with monkeypatch.context() as m:
        m.setattr(M, "on_host", lambda t: False)  # as if every tensor were on a GPU
        for method in ("__bool__", "__int__", "__float__", "item", "tolist"):
            m.setattr(torch.Tensor, method, read_back)
        out = model(**batch)
        loss, mlm_loss = out.loss.detach().clone(), out.mlm_loss.detach().clone()
    torch.testing.assert_close(loss, expected.loss.detach(), atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(mlm_loss, expected.mlm_loss.detach(), atol=1e-6, rtol=1e-6)
    model.check_batch(batch)  # in range: passes
    with pytest.raises(ValueError, match="input_ids must lie in"):
        model.check_batch(batch | {"input_ids": ids + TINY.vocab_size})
    with pytest.raises(ValueError, match="next_sentence_label must lie in"):
        model.check_batch(batch | {"next_sentence_label": torch.tensor([0, 2, 0])})


# --- multiple choice (the paper's SWAG) --------------------------------------------------------


def _choices(vocab=90, items=2, choices=4, seq=10):
    """(items, choices, seq) inputs, some choices padded; and each item's right choice."""
    g = torch.Generator().manual_seed(2)
    ids = torch.randint(0, vocab, (items, choices, seq), generator=g)
    types = torch.zeros_like(ids)
    types[..., seq // 2 :] = 1
    mask = torch.ones_like(ids)
    mask[0, 1, seq - 3 :] = 0
    mask[1, 3, 4:] = 0
    return ids, types, mask, torch.tensor([2, 0])


def test_multiple_choice_folder_loads_into_transformers_with_equal_logits(tmp_path):
    from minibert.model import BertForMultipleChoice

    torch.manual_seed(4)
    cfg = BertConfig(vocab_size=90, hidden_size=36, num_layers=2, num_heads=6, intermediate_size=50)
    ours = BertForMultipleChoice(cfg.replace(num_labels=1)).eval()
    ours.save_pretrained(tmp_path)
    theirs, info = transformers.BertForMultipleChoice.from_pretrained(
        tmp_path, attn_implementation="eager", output_loading_info=True
    )
    assert not any(info.values()), info  # every weight by Hugging Face's names, none left over
    ids, types, mask, labels = _choices()
    with torch.no_grad():
        a = theirs.eval()(input_ids=ids, token_type_ids=types, attention_mask=mask, labels=labels)
        b = ours(ids, types, mask, labels=labels)
    assert b.logits.shape == (2, 4)  # one score per choice
    close(b.logits, a.logits)
    close(b.loss, a.loss)
    again = BertForMultipleChoice.from_pretrained(tmp_path).eval()  # and back
    with torch.no_grad():
        close(again(ids, types, mask).logits, b.logits)


def test_multiple_choice_trains_every_parameter_and_refuses_two_dimensional_inputs():
    from minibert.model import BertForMultipleChoice

    torch.manual_seed(0)
    model = BertForMultipleChoice(TINY).train()
    ids, types, mask, labels = _choices(vocab=60)
    model(ids, types, mask, labels=labels).loss.backward()
    assert [n for n, p in model.named_parameters() if not p.grad.abs().sum() > 0] == []
    assert model.classifier.out_features == 1  # whatever num_labels says: one score per choice
    with pytest.raises(ValueError, match=r"shape \(batch, choices, seq\)"):
        model(ids[0])
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 4\)"):
        model.check_batch({"input_ids": ids, "labels": torch.tensor([4, 0])})
