"""minibert.finetuning and the finetune recipe: datasets, measures, a tiny end-to-end fine-tune."""

import json
from types import SimpleNamespace

import pytest
import torch
import transformers
from conftest import cli as in_process
from conftest import make_tiny_config

from minibert import assets, finetuning
from minibert.config import BertConfig
from minibert.inference import classify
from minibert.model import BertForPreTraining, BertForSequenceClassification
from minibert.recipes import finetune
from minibert.tasks.capitalisation import capitalisation_examples
from minibert.tokenization import BertTokenizer


@pytest.fixture(scope="module")
def tok():
    return BertTokenizer.from_pretrained(assets.course_checkpoint("course"))


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory, tok):
    """A small 'pretrained' folder: random weights, the course vocabulary."""
    folder = tmp_path_factory.mktemp("tiny")
    torch.manual_seed(0)
    config = make_tiny_config(vocab_size=len(tok.vocab), max_position_embeddings=64)
    BertForPreTraining(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_dataset_encodes_texts_and_pairs(tok):
    data = finetuning.ClassificationDataset(["a fine film", "dull"], [1, 0], tok, max_length=16)
    assert data[0]["input_ids"] == tok("a fine film").input_ids and data[1]["labels"] == 0
    pairs = finetuning.ClassificationDataset(["a b"], [1], tok, text_pairs=["c"])
    assert pairs[0]["token_type_ids"] == [0, 0, 0, 0, 1, 1]
    long = finetuning.ClassificationDataset(["word " * 200], [1], tok, max_length=16)
    assert len(long[0]["input_ids"]) == 16
    with pytest.raises(ValueError, match="2 texts but 1 labels"):
        finetuning.ClassificationDataset(["a", "b"], [1], tok)
    with pytest.raises(ValueError, match="no examples"):
        finetuning.ClassificationDataset([], [], tok)


def test_collate_pads_inputs_and_token_labels():
    items = [
        {"input_ids": [2, 7, 3], "token_type_ids": [0, 0, 0], "labels": [-100, 1, -100]},
        {"input_ids": [2, 3], "token_type_ids": [0, 0], "labels": [-100, -100]},
    ]
    batch = finetuning.collate(items, pad_token_id=0)
    assert batch["input_ids"].tolist() == [[2, 7, 3], [2, 3, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["labels"].tolist() == [[-100, 1, -100], [-100, -100, -100]]
    sequence = finetuning.collate([{**items[0], "labels": 1}, {**items[1], "labels": 0}])
    assert sequence["labels"].tolist() == [1, 0]


def test_measures():
    logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [0.0, 2.0], [2.0, 0.0]])  # says 0, 1, 1, 0
    batch = {"labels": torch.tensor([0, 1, 0, 1])}
    sums = finetuning.classification_metrics(batch, SimpleNamespace(logits=logits))
    assert sums == {
        "accuracy": (2, 4),
        "recall_0": (1, 2),
        "recall_1": (1, 2),
        "positive_precision": (1, 2),
        "positive_recall": (1, 2),
    }
    record = {f"eval_{k}": a / b for k, (a, b) in sums.items()}
    assert finetuning.balanced_accuracy(record) == 0.5 and finetuning.positive_f1(record) == 0.5
    assert finetuning.confusion_matrix([0, 1, 0, 1], [0, 1, 1, 0], 2) == [[1, 1], [1, 1]]
    assert finetuning.f1_score(0.5, 1.0) == pytest.approx(2 / 3)
    assert finetuning.f1_score(0.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="outside"):
        finetuning.confusion_matrix([2], [0], 2)


def test_scores():
    got = finetuning.scores([0, 1, 1, 1], [0, 1, 0, 1])
    assert got == {"accuracy": 0.75, "balanced_accuracy": pytest.approx((1 + 2 / 3) / 2),
                   "precision": 1.0, "recall": pytest.approx(2 / 3), "f1": pytest.approx(0.8),
                   "confusion": [[1, 0], [1, 2]]}  # fmt: skip
    assert finetuning.scores([1, 1], [0, 0])["f1"] == 0.0  # never predicted: 0, not an error
    with pytest.raises(ValueError, match="no labels"):
        finetuning.scores([], [])


def test_capitalisation_labels_come_from_the_text(tok):
    (example,) = capitalisation_examples(["The Eiffel Tower, built in 1889."], tok)
    pieces = tok.convert_ids_to_tokens(example["input_ids"])
    labelled = {p: y for p, y in zip(pieces, example["labels"]) if y != -100}
    assert labelled["the"] == 1 and labelled["built"] == 0 and labelled["in"] == 0
    assert all(p == p.lower() for p in pieces if not p.startswith("["))  # lower-cased input
    for p, y in zip(pieces, example["labels"]):
        if p.startswith("##") or p in (",", ".", "[CLS]", "[SEP]") or p.isdigit():
            assert y == -100, p  # continuations, punctuation and numbers carry no label


@pytest.mark.slow
def test_finetune_end_to_end_saves_a_folder_transformers_loads(tiny_folder, tmp_path):
    out = tmp_path / "rt"
    result = finetune(
        out, model=tiny_folder, train_examples=96, batch_size=16, steps=6,
        max_length=32, lr=1e-3, progress=False,
    )  # fmt: skip
    assert [h["step"] for h in result.history if "eval_accuracy" in h] == [6]
    results = json.loads((out / "results.json").read_text())
    assert results["test"]["examples"] == 1272 and 0 <= results["test"]["accuracy"] <= 1
    assert sum(map(sum, results["test"]["confusion"])) == 1272
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "rotten", "1": "fresh"}
    assert config["architectures"] == ["BertForSequenceClassification"]
    theirs, info = transformers.BertForSequenceClassification.from_pretrained(
        out, output_loading_info=True
    )
    assert not info["missing_keys"] and not info["unexpected_keys"]
    ours = BertForSequenceClassification.from_pretrained(out).eval()
    batch = BertTokenizer.from_pretrained(out).encode_batch(["a gem", "a slow, tedious mess"])
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits, theirs.eval()(**batch).logits)
    labels = classify(ours, BertTokenizer.from_pretrained(out), ["a gem", "a mess"])
    assert [label in ("rotten", "fresh") and 0.5 <= p <= 1 for label, p in labels] == [True] * 2


@pytest.mark.slow
def test_freeze_scratch_and_reinit(tiny_folder, tmp_path):
    common = dict(model=tiny_folder, train_examples=32, batch_size=16, steps=2, max_length=32,
                  lr=1e-2, progress=False)  # fmt: skip
    pretrained = BertForSequenceClassification.from_pretrained(tiny_folder).state_dict()
    finetune(tmp_path / "probe", freeze_encoder=True, **common)
    probe = BertForSequenceClassification.from_pretrained(tmp_path / "probe").state_dict()
    assert all(torch.equal(probe[k], pretrained[k]) for k in pretrained if k.startswith("bert."))
    assert not torch.equal(probe["classifier.weight"], pretrained["classifier.weight"])
    finetune(tmp_path / "scratch", scratch=True, **common)
    scratch = BertForSequenceClassification.from_pretrained(tmp_path / "scratch").state_dict()
    key = "bert.embeddings.word_embeddings.weight"
    assert (scratch[key] - pretrained[key]).abs().max() > 0.01  # not the pretrained table
    finetune(tmp_path / "reinit", reinit_layers=1, freeze_encoder=True, **common)
    reinit = BertForSequenceClassification.from_pretrained(tmp_path / "reinit").state_dict()
    top = "bert.encoder.layers.1.attention.query.weight"
    assert not torch.equal(reinit[top], pretrained[top])  # the top layer was re-initialised
    bottom = "bert.encoder.layers.0.attention.query.weight"
    assert torch.equal(reinit[bottom], pretrained[bottom])


@pytest.mark.slow
def test_a_small_subset_is_evaluated_every_few_epochs_not_every_epoch(tiny_folder, tmp_path):
    # 32 examples in batches of 16: 2 steps an epoch; 60 epochs would be 60 dev evaluations
    result = finetune(
        tmp_path / "few", model=tiny_folder, train_examples=32, batch_size=16, epochs=60,
        max_length=32, lr=1e-3, progress=False,
    )  # fmt: skip
    evaluated = [h["step"] for h in result.history if "eval_loss" in h]
    assert evaluated == list(range(12, 121, 12))  # MAX_EVALUATIONS = 10, every 6 epochs
    best = max(finetuning.balanced_accuracy(h) for h in result.history if "eval_loss" in h)
    assert result.dev["balanced_accuracy"] == pytest.approx(best)  # the best dev weights are kept
    fewer = finetune(
        tmp_path / "fewer", model=tiny_folder, train_examples=32, batch_size=16, epochs=60,
        max_length=32, lr=1e-3, progress=False, evaluations=3,
    )  # fmt: skip
    assert [h["step"] for h in fewer.history if "eval_loss" in h] == [40, 80, 120]


@pytest.mark.slow
def test_token_task_end_to_end(tiny_folder, tmp_path):
    result = finetune(
        tmp_path / "caps", model=tiny_folder, task="capitalisation", train_examples=64,
        batch_size=16, steps=3, max_length=32, lr=1e-3, progress=False,
    )  # fmt: skip
    assert result.test["unit"] == "word" and result.test["examples"] > 10_000
    config = json.loads((tmp_path / "caps" / "config.json").read_text())
    assert config["architectures"] == ["BertForTokenClassification"]


def test_bad_arguments_are_one_line_errors(tiny_folder, tmp_path):
    run = in_process  # each stops at its arguments: no interpreter to start

    for args, message in (
        (
            ["--model", str(tmp_path / "nowhere")],
            "not 'course', 'course-reviews', 'course-english', 'minilm' or a folder",
        ),
        (["--model", str(tiny_folder), "--reinit-layers", "5"], "reinit_layers must be in [0, 2]"),
        (["--model", str(tiny_folder), "--max-length", "100"], "exceeds the model's 64"),
        (
            ["--model", str(tiny_folder), "--max-length", "32", "--train-examples", "99999"],
            "exceeds the 10233",
        ),
        (["--lr", "0"], "argument --lr"),
        (["--evaluations", "0"], "argument --evaluations"),
    ):
        done = run("finetune", "--out", str(tmp_path / "x"), *args)
        assert done.returncode == 2, (args, done.stderr)
        last = done.stderr.strip().splitlines()[-1]  # argparse prints its usage above
        assert "error" in last and message in last, done.stderr
        assert "Traceback" not in done.stderr
    done = run("classify", str(tmp_path / "nowhere"), "text")
    assert done.returncode != 0 and "cannot load the model" in done.stderr


def test_python_api_edge_cases_are_clear_errors(tok):
    from minibert import finetuning

    with pytest.raises(ValueError, match="whole numbers from 0, got 0.7"):
        finetuning.ClassificationDataset(["a"], [0.7], tok)
    with pytest.raises(ValueError, match="leaves no room"):
        capitalisation_examples(["Paris is big."], tok, max_length=0)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        finetuning.f1_score(2.0, -1.0)
    with pytest.raises(ValueError, match="num_labels must be at least 2"):
        finetuning.scores([0, 0], [0, 0], 1)


@pytest.mark.slow
def test_a_mean_pooled_classifier_reads_the_real_tokens_mean(tiny_folder, tmp_path):
    config = make_tiny_config(classifier_pooling="mean", hidden_dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    net = BertForSequenceClassification(config).eval()
    ids = torch.tensor([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        out = net(ids, attention_mask=mask, output_hidden_states=True)
        h = out.hidden_states[-1]  # (2, 6, 32)
        means = torch.stack([h[0, :4].mean(0), h[1, :3].mean(0)])
        torch.testing.assert_close(out.logits, net.classifier(means))
        short = net(ids[1:, :3], attention_mask=mask[1:, :3]).logits  # no padding at all
        torch.testing.assert_close(out.logits[1:], short)
    with pytest.raises(ValueError, match="classifier_pooling must be one of"):
        make_tiny_config(classifier_pooling="max")
    # fine-tuned with --pooling mean: saved, read back, and refused for a task of another shape
    out_dir = tmp_path / "mean"
    finetune(out_dir, model=tiny_folder, train_examples=32, batch_size=16, steps=2, max_length=32,
             lr=1e-3, pooling="mean", progress=False)  # fmt: skip
    assert json.loads((out_dir / "config.json").read_text())["classifier_pooling"] == "mean"
    again = BertForSequenceClassification.from_pretrained(out_dir)
    assert again.config.classifier_pooling == "mean"
    with pytest.raises(ValueError, match="pooling applies to a sentence task"):
        finetune(tmp_path / "caps", model=tiny_folder, task="capitalisation", train_examples=32,
                 batch_size=16, steps=2, max_length=32, pooling="mean", progress=False)  # fmt: skip


@pytest.mark.slow
def test_a_cls_classifier_reads_the_raw_cls_vector_without_the_pooler(tiny_folder, tmp_path):
    config = make_tiny_config(classifier_pooling="cls", hidden_dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    net = BertForSequenceClassification(config).eval()
    ids = torch.tensor([[2, 7, 9, 3, 0, 0], [2, 5, 3, 0, 0, 0]])
    with torch.no_grad():
        out = net(ids, attention_mask=(ids != 0).long())
        cls = out.last_hidden_state[:, 0]  # (2, 32), the pooler's input, not its output
        torch.testing.assert_close(out.logits, net.classifier(cls))
        assert not torch.allclose(out.logits, net.classifier(out.pooler_output))
        pooled = BertForSequenceClassification(config.replace(classifier_pooling="pooler"))
        pooled.load_state_dict(net.state_dict())
        torch.testing.assert_close(
            pooled.eval()(ids).logits, net.classifier(net(ids).pooler_output)
        )
    out_dir = tmp_path / "cls"
    finetune(
        out_dir,
        model=tiny_folder,
        train_examples=32,
        batch_size=16,
        steps=2,
        max_length=32,
        lr=1e-3,
        pooling="cls",
        progress=False,
    )
    assert json.loads((out_dir / "config.json").read_text())["classifier_pooling"] == "cls"


def test_the_old_pooling_name_is_refused_in_python_and_read_as_the_new_one_on_the_command_line(
    tiny_folder, tmp_path
):
    """'first' (the raw [CLS] vector, when 'cls' meant the pooler) is 'cls' now: refused naming it
    in Python and in a config; the flag users have met keeps working, saying so in one line; a
    folder saved with 'first' loads as 'cls'."""
    refused = "'first' is now 'cls'"
    with pytest.raises(ValueError, match=refused):
        make_tiny_config(classifier_pooling="first")
    with pytest.raises(ValueError, match=refused):
        finetune(tmp_path / "python", model=tiny_folder, pooling="first", progress=False)
    assert not (tmp_path / "python").exists()
    folder = tmp_path / "saved-first"
    BertForSequenceClassification(make_tiny_config(classifier_pooling="cls")).save_pretrained(
        folder
    )
    saved = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(saved | {"classifier_pooling": "first"}))
    assert BertConfig.from_hf_config(folder).classifier_pooling == "cls"
    done = in_process("finetune", "--model", str(tiny_folder), "--pooling", "first", "--steps",
                      "0", "--out", str(tmp_path / "cli"))  # fmt: skip
    assert "minibert: --pooling first is now --pooling cls\n" in done.stderr, done.stderr


def test_the_moved_measures_are_still_read_here():
    """The lessons read the paired statistics and the frozen features as finetuning.X."""
    from minibert import frozen_features, paired_statistics

    for name in paired_statistics.__all__:
        assert getattr(finetuning, name) is getattr(paired_statistics, name)
    for name in frozen_features.__all__:
        assert getattr(finetuning, name) is getattr(frozen_features, name)


@pytest.mark.parametrize("pooling", ["pooler", "cls", "mean"])
def test_pooling_is_refused_for_a_search_encoder_even_when_it_names_the_default(tmp_path, pooling):
    """`finetune --task wiki-search --pooling cls` was accepted and changed nothing (the encoder is
    mean-pooled), and every wiki-search run recorded "pooling": "cls"."""
    out = tmp_path / "search"
    with pytest.raises(ValueError, match="wiki-search is a vector task .*leave out --pooling"):
        finetune(out, model="course", task="wiki-search", pooling=pooling, progress=False)
    done = in_process("finetune", "--model", "course", "--task", "wiki-search", "--pooling",
                      pooling, "--out", str(out))  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "pooling applies to a sentence task's classifier" in done.stderr
    assert not out.exists()  # refused before anything is written
