"""minibert.frozen_features: a frozen BERT's sentence features and a logistic regression on them."""

import pytest
import torch
from conftest import make_tiny_config

from minibert import assets, frozen_features
from minibert.model import BertModel
from minibert.tokenization import BertTokenizer


@pytest.fixture(scope="module")
def tok():
    return BertTokenizer.from_pretrained(assets.course_checkpoint("course"))


@pytest.fixture(scope="module")
def model(tok):
    torch.manual_seed(0)
    return BertModel(make_tiny_config(vocab_size=len(tok.vocab), max_position_embeddings=64))


def test_logistic_regression_on_dense_features_takes_raw_inputs():
    torch.manual_seed(0)
    x = torch.randn(200, 3) * torch.tensor([100.0, 1.0, 0.01]) + 50  # wildly different scales
    y = (x[:, 2] > 50).long()  # only the smallest feature matters
    linear = frozen_features.fit_logistic_regression(x, y.tolist(), l2=1e-4)
    assert (frozen_features.predict(linear, x) == y).float().mean() > 0.95


def test_sentence_features_pool_cls_or_mean(model, tok):
    texts = ["a short one", "a somewhat longer text than the first"]
    cls = frozen_features.sentence_features(model, tok, texts, "cls")
    mean = frozen_features.sentence_features(model, tok, texts, "mean", batch_size=1)
    alone = model.eval()(**tok.encode_batch(texts[:1])).last_hidden_state[0]
    torch.testing.assert_close(cls[0], alone[0])
    torch.testing.assert_close(mean[0], alone.mean(0))  # padding is left out of the mean
    flipped = frozen_features.sentence_features(model, tok, texts[::-1], "cls")  # rows follow texts
    torch.testing.assert_close(flipped, cls.flip(0), atol=1e-5, rtol=1e-5)
    both = frozen_features.sentence_features(model, tok, texts, ("cls", "mean"))  # one pass, both
    torch.testing.assert_close(both[0], cls)
    torch.testing.assert_close(both[1], mean, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="pooling"):
        frozen_features.sentence_features(model, tok, texts, "max")


def test_bad_inputs_are_clear_errors(tok):
    with pytest.raises(ValueError, match="no texts"):
        frozen_features.sentence_features(None, tok, [])
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        frozen_features.sentence_features(None, tok, ["a"], batch_size=0)
    with pytest.raises(ValueError, match="NaN or infinite"):
        frozen_features.fit_logistic_regression(torch.tensor([[1.0], [float("nan")]]), [0, 1])
