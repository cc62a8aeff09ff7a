"""Neighbour guidance: guided heads while training, a standard BERT after finish()."""

import pytest
import torch
from conftest import make_tiny_config

from minibert.attention import MultiHeadSelfAttention, padding_mask
from minibert.guidance import GuidedAttention, NeighbourGuidance, neighbour_loss
from minibert.model import BertForPreTraining


def batch(seq=12, pad=3):
    torch.manual_seed(0)
    ids = torch.randint(5, 60, (2, seq))
    attention_mask = torch.ones(2, seq, dtype=torch.long)
    attention_mask[1, seq - pad :] = 0
    labels = torch.full((2, seq), -100)
    labels[:, 2] = ids[:, 2]
    return dict(
        input_ids=ids,
        token_type_ids=torch.zeros_like(ids),
        attention_mask=attention_mask,
        mlm_labels=labels,
        next_sentence_label=torch.tensor([0, 1]),
    )


def test_unguided_attention_is_the_standard_one():
    torch.manual_seed(0)
    plain = MultiHeadSelfAttention(16, 4)
    guided = GuidedAttention(16, 4)  # bias 0: no bonus
    guided.load_state_dict({**plain.state_dict(), "step": guided.step})
    x, mask = torch.randn(2, 6, 16), padding_mask(torch.tensor([[1] * 6, [1] * 4 + [0] * 2]))
    torch.testing.assert_close(guided(x, mask)[0], plain(x, mask)[0])
    guided = GuidedAttention(16, 4, bias=8.0, steps=10)
    guided.load_state_dict({**plain.state_dict(), "step": guided.step})
    guided.eval()  # evaluation never applies the bonus, nor counts a step
    torch.testing.assert_close(guided(x, mask)[0], plain.eval()(x, mask)[0])
    assert int(guided.step) == 0


def test_bonus_points_the_guided_heads_at_the_neighbours_and_skips_padding():
    torch.manual_seed(0)
    guided = GuidedAttention(16, 4, bias=30.0, steps=10).train()
    real = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    x = torch.randn(2, 6, 16)
    _, weights = guided(x, padding_mask(real), output_attentions=True)
    i = torch.arange(1, 6)
    assert (weights[0, 0, i, i - 1] > 0.99).all()  # head 0: the previous token
    assert (weights[0, 1, i - 1, i] > 0.99).all()  # head 1: the next token
    assert weights[1, 1, 3, 4] == 0  # the last real token's "next" is padding: no bonus there
    assert weights[..., 4:][1].abs().sum() == 0  # padding gets no weight at all
    assert weights[0, 2:].max() < 0.99  # unguided heads are untouched
    assert int(guided.step) == 1 and guided.strength() == pytest.approx(0.9)
    aux = neighbour_loss(guided, x, real)  # the heads' own attention, without the bonus
    assert torch.isfinite(aux) and aux > 0
    assert neighbour_loss(guided, x, real) == aux  # a pure function: it changes nothing


def test_guidance_anneals_then_finishes_as_a_standard_bert():
    torch.manual_seed(0)
    config = make_tiny_config(hidden_dropout=0.0, attention_dropout=0.0)
    model = BertForPreTraining(config)
    reference = {k: v.clone() for k, v in model.state_dict().items()}
    guided = NeighbourGuidance(model, bias=8.0, aux_weight=1.0, steps=4).train()
    inputs = batch()
    base = model.eval()(**inputs).loss  # no bonus, no aux (dropout is 0: as in training)
    guided.train()
    losses = []
    for step in range(6):
        assert guided.strength() == pytest.approx(max(0.0, 1 - step / 4))
        losses.append(guided(**inputs).loss)
    assert losses[0] > base  # the auxiliary loss is added while guiding
    assert int(guided.attention.step) == 6
    torch.testing.assert_close(losses[5], model(**inputs).loss)  # plain after the anneal
    assert "model.bert.encoder.layers.0.attention.step" in guided.state_dict()  # resumes
    plain = guided.finish()
    assert type(plain.bert.encoder.layers[0].attention) is MultiHeadSelfAttention
    assert plain.state_dict().keys() == reference.keys()
    fresh = BertForPreTraining(config)
    fresh.load_state_dict(plain.state_dict())
    torch.testing.assert_close(fresh.eval()(**inputs).loss, plain.eval()(**inputs).loss)


def test_aux_loss_teaches_the_heads_to_find_their_neighbours():
    torch.manual_seed(0)
    config = make_tiny_config(hidden_dropout=0.0, attention_dropout=0.0)
    guided = NeighbourGuidance(BertForPreTraining(config), 0.0, 1.0, 10_000).train()
    optimizer = torch.optim.Adam(guided.parameters(), lr=1e-2)
    inputs = batch()

    def aux() -> float:
        with torch.no_grad():
            x = guided.model.bert.embeddings(inputs["input_ids"], inputs["token_type_ids"])
            return neighbour_loss(guided.attention, x, inputs["attention_mask"]).item()

    first = aux()
    for _ in range(60):
        guided(**inputs).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert aux() < 0.3 * first


def test_bad_settings():
    model = BertForPreTraining(make_tiny_config())
    with pytest.raises(ValueError, match="steps"):
        NeighbourGuidance(model, 8.0, 1.0, 0)
    with pytest.raises(ValueError, match="heads"):
        GuidedAttention(16, 1)
    with pytest.raises(ValueError, match="steps"):
        GuidedAttention(16, 4, bias=1.0, steps=0)


def test_the_loss_is_added_only_while_training_and_hidden_states_only_when_asked():
    torch.manual_seed(0)
    config = make_tiny_config(hidden_dropout=0.0, attention_dropout=0.0)
    model = BertForPreTraining(config)
    guided = NeighbourGuidance(model, bias=0.0, aux_weight=1.0, steps=4).train()
    inputs = batch()
    x = model.bert.embeddings(inputs["input_ids"], inputs["token_type_ids"])
    plain = model.eval()(**inputs).loss  # dropout 0: as in training, and no step counted
    expected = plain + neighbour_loss(guided.attention, x, inputs["attention_mask"])
    out = guided.train()(**inputs)
    torch.testing.assert_close(out.loss, expected)
    assert out.hidden_states is None
    assert len(guided(**inputs, output_hidden_states=True).hidden_states) == config.num_layers + 1
    guided.eval()
    torch.testing.assert_close(guided(**inputs).loss, model(**inputs).loss)
