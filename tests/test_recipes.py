"""minibert.recipes: continued pretraining from a folder (--init) on the review corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from minibert import assets, corpora, recipes, tasks
from minibert.model import BertForPreTraining, BertForSequenceClassification
from minibert.recipes import outputs
from minibert.tokenization import BertTokenizer

ROOT = Path(__file__).resolve().parent.parent


def test_the_review_corpus_is_training_movies_split_by_title():
    train, heldout = recipes.load_corpus("reviews")
    titles = {d.title for d in train} | {d.title for d in heldout}
    assert titles == {r.movie for r in corpora.rotten_tomatoes("train")}
    assert heldout and all(corpora.heldout_article(d.title) for d in heldout)
    assert not any(corpora.heldout_article(d.title) for d in train)


@pytest.mark.slow
def test_init_keeps_the_weights_vocabulary_and_size(tmp_path):
    course = assets.course_checkpoint("course")
    result = recipes.pretrain(
        tmp_path / "adapted", steps=1, init="course", corpus="reviews", objective="none",
        lr=1e-12, warmup_steps=0, weight_decay=0.0, dupe_factor=1, batch_size=4,
        eval_batches=1, max_len=64, progress=False,
    )  # fmt: skip
    folder = result.folder
    assert (folder / "vocab.txt").read_text() == (course / "vocab.txt").read_text()
    before = BertForPreTraining.from_pretrained(course).state_dict()
    after = BertForPreTraining.from_pretrained(folder)
    for name, value in after.state_dict().items():
        torch.testing.assert_close(value, before[name], rtol=0, atol=1e-8, msg=name)
    saved = json.loads((folder / "config.json").read_text())
    assert saved["hidden_size"] == 128 and saved["num_hidden_layers"] == 2
    assert saved["hidden_dropout_prob"] == 0.1  # the folder's own, for fine-tuning
    recipe = json.loads((folder / "recipe.json").read_text())
    assert recipe["init"] == "course" and recipe["corpus"] == "reviews"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"preset": "mini"}, "init and preset conflict"),
        ({"vocab": "data"}, "init and vocab conflict"),
        ({"max_len": 512}, "exceeds the 128 positions"),
        ({"init": "no/such/folder"}, "no/such/folder"),
        ({"objective": "nsp"}, "objective 'none'"),
    ],
)
@pytest.mark.slow
def test_init_arguments_are_checked_before_anything_is_written(tmp_path, changes, message):
    options = {"steps": 5, "init": "course", "corpus": "reviews", "objective": "none", **changes}
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        recipes.pretrain(tmp_path / "m", **options)
    assert not (tmp_path / "m").exists()


@pytest.mark.slow
def test_finetune_takes_a_measured_learning_rate_per_model_size(tmp_path):
    from minibert.config import BertConfig

    assert recipes.default_lr(BertConfig.from_hf_config(assets.course_checkpoint("course"))) == 1e-3
    assert recipes.default_lr(BertConfig.from_hf_config(assets.path("minilm"))) == 5e-5
    minilm, course = (BertConfig.from_hf_config(assets.path("minilm")),
                      BertConfig.from_hf_config(assets.course_checkpoint("course")))  # fmt: skip
    assert recipes.default_lr(minilm, tasks.get("wiki-qa")) == 3e-4  # the reader's own, measured
    assert recipes.default_lr(minilm, tasks.get("wiki-qnli")) == 5e-5
    assert recipes.default_lr(course, tasks.get("wiki-qa")) == 1e-3
    result = recipes.finetune(
        tmp_path / "rt", model="course", train_examples=64, steps=2, batch_size=32,
        evaluations=1, progress=False,
    )  # fmt: skip
    saved = json.loads((result.folder / "results.json").read_text())
    assert saved["options"]["lr"] == recipes.SMALL_MODEL_LR  # what `minibert finetune` reproduces
    # each test snippet's prediction, in the split's order (not the length order it was run in)
    labels = [r.label for r in corpora.rotten_tomatoes("test")]
    predictions = result.test["predictions"]
    assert len(predictions) == len(labels) == result.test["examples"]
    hits = sum(p == y for p, y in zip(predictions, labels))
    assert hits / len(labels) == pytest.approx(result.test["accuracy"])
    model = BertForSequenceClassification.from_pretrained(result.folder).eval()
    tok = BertTokenizer.from_pretrained(result.folder)
    with torch.no_grad():
        first = model(**tok.encode_batch([corpora.rotten_tomatoes("test")[0].text])).logits
    assert int(first.argmax(-1)) == predictions[0]


def test_course_checkpoints_have_names():
    assert recipes.model_folder("course") == assets.course_checkpoint("course")
    # with no name, the checkpoint the lessons load: the recipe on 5.5M words
    assert assets.course_checkpoint() == recipes.model_folder("course-english")
    assert assets.course_checkpoint().name == "course_english"
    reviews = recipes.model_folder("course-reviews")
    assert reviews == assets.course_checkpoint("course-reviews")
    assert (reviews / "vocab.txt").read_text() == (
        assets.course_checkpoint("course") / "vocab.txt"
    ).read_text()
    with pytest.raises(ValueError, match="course checkpoint must be one of"):
        assets.course_checkpoint("course-wikipedia")
    with pytest.raises(
        FileNotFoundError,
        match="not 'course', 'course-reviews', 'course-english', 'minilm' or a folder",
    ):
        recipes.model_folder("no-such-model")


def test_overwrite_refuses_a_folder_of_other_things(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "NOTES.md").write_text("notes\n", encoding="utf-8")
    (project / "config.json").write_text("{}\n", encoding="utf-8")  # looks like a model, too
    for call in (
        lambda: recipes.finetune(project, model="course", train_examples=64, steps=1,
                                 overwrite=True, progress=False),
        lambda: recipes.pretrain(project, steps=1, preset="tiny", overwrite=True, progress=False),
    ):  # fmt: skip
        with pytest.raises(
            ValueError, match=r"no minibert run wrote \(NOTES.md, config.json, src\)"
        ):
            call()
    assert sorted(p.name for p in project.iterdir()) == ["NOTES.md", "config.json", "src"]


@pytest.mark.slow
def test_a_failed_save_leaves_the_old_model_whole(tmp_path, monkeypatch):
    out = tmp_path / "rt"
    first = recipes.finetune(out, model="course", train_examples=64, steps=1, batch_size=32,
                             evaluations=1, progress=False)  # fmt: skip
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def full_disk(self, folder):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BertTokenizer, "save_pretrained", full_disk)
    with pytest.raises(OSError, match="No space left"):
        recipes.finetune(out, model="course", train_examples=64, steps=1, batch_size=32,
                         evaluations=1, progress=False, overwrite=True, seed=1)  # fmt: skip
    after = {p.name: p.read_bytes() for p in out.iterdir() if p.name != recipes.RUN_FOLDER}
    assert after == before and first.folder == out


def test_a_new_models_max_len_is_bounded_before_anything_is_built(tmp_path):
    with pytest.raises(ValueError, match="more than BERT's 512 positions"):
        recipes.pretrain(tmp_path / "big", steps=1, preset="tiny", max_len=100_000, progress=False)
    assert not (tmp_path / "big").exists()


def test_nsp_on_too_few_documents_is_refused_before_any_work(tmp_path):
    corpus = tmp_path / "four"
    corpus.mkdir()
    for i in range(4):  # crc32 holds out one of these four titles: one held-out document
        (corpus / f"doc{i}.txt").write_text(f"Document {i} has words.\n\nIt has two.\n", "utf-8")
    train, heldout = recipes.load_corpus(corpus)
    assert len(heldout) < 2 <= len(train)
    with pytest.raises(ValueError, match="at least two in each part"):
        recipes.pretrain(tmp_path / "out", steps=1, preset="tiny", corpus=corpus, progress=False)
    assert not (tmp_path / "out").exists()


def test_a_full_disk_is_one_line_naming_the_file(tmp_path, monkeypatch, capsys):
    import safetensors.torch

    from minibert import cli

    def full(tensors, path, metadata=None):
        raise safetensors.SafetensorError(
            "Error while serializing: IoError(No space left on device)"
        )

    monkeypatch.setattr(safetensors.torch, "save_file", full)
    out = tmp_path / "rt"
    code = cli.main(["finetune", "--model", "course", "--train-examples", "64", "--steps", "1",
                     "--batch-size", "32", "--evaluations", "1", "--out", str(out)])  # fmt: skip
    assert code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # no bars
    assert len(err) == 1 and "cannot write" in err[0] and "model.safetensors" in err[0]
    assert "No space left" in err[0] and "Traceback" not in err[0]


def test_a_run_stopped_before_its_first_checkpoint_does_not_suggest_resume(tmp_path):
    out = tmp_path / "run"
    (out / recipes.RUN_FOLDER).mkdir(parents=True)  # what a crash before any checkpoint leaves
    with pytest.raises(ValueError, match="nothing to resume; pass overwrite") as caught:
        outputs.OutputFolder(out)
    assert "resume (--resume) to" not in str(caught.value)


def _weights(folder):
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


@pytest.mark.slow
def test_finetune_accumulation_equals_one_big_batch(tmp_path):
    common = dict(model="course", train_examples=64, steps=1, dropout=0.0, evaluations=1, lr=1e-3,
                  group_by_length=False, progress=False)  # fmt: skip
    one = recipes.finetune(tmp_path / "one", batch_size=16, **common)
    two = recipes.finetune(tmp_path / "two", batch_size=8, grad_accum_steps=2, **common)
    assert one.history[0]["examples"] == two.history[0]["examples"] == 16
    a, b = _weights(one.folder), _weights(two.folder)
    # AdamW divides each gradient by its own size, so for a gradient near zero (a rare token's
    # embedding) the order of summation moves the update by a few 1e-6 on some CPUs: 1% of lr.
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=0, atol=1e-5, msg=name)
    half = recipes.finetune(tmp_path / "half", batch_size=8, **common)  # what a wrong step gives
    assert max((a[n] - w).abs().max().item() for n, w in _weights(half.folder).items()) > 1e-4
    assert json.loads((two.folder / "results.json").read_text())["options"]["grad_accum_steps"] == 2


@pytest.mark.slow
def test_finetune_pauses_and_resumes_to_the_same_model(tmp_path):
    common = dict(model="course", train_examples=32, steps=4, batch_size=16, dropout=0.0,
                  evaluations=2, checkpoint_every=1, lr=1e-3, progress=False)  # fmt: skip
    whole = recipes.finetune(tmp_path / "whole", **common)
    paused = recipes.finetune(tmp_path / "split", stop_after=3, **common)
    assert paused.paused and "--resume" in paused.report()
    assert (tmp_path / "split" / recipes.RUN_FOLDER / "best.pt").is_file()  # step 2's weights
    with pytest.raises(ValueError, match=r"differ from the run .*lr \(saved 0.001, now 0.002\)"):
        recipes.finetune(tmp_path / "split", resume=True, **{**common, "lr": 2e-3})
    done = recipes.finetune(tmp_path / "split", resume=True, **common)
    assert [h["step"] for h in done.history] == [1, 2, 3, 4]
    assert done.selection == whole.selection  # the same evaluation kept, resumed or not
    a, b = _weights(whole.folder), _weights(done.folder)
    for name in a:
        torch.testing.assert_close(b[name], a[name], rtol=0, atol=1e-6, msg=name)


def test_a_share_of_the_text_is_whole_documents_nested_and_near_its_target():
    """text_fraction's documents: whole, nested (1/8 inside 1/4 ...), the same whatever the
    corpus's order, each share's words within one document of its target, at least two."""
    from minibert.recipes.pretrain_recipe import share_of_documents

    docs = [corpora.make_article(f"doc {i}", [" ".join(["word"] * (10 + 7 * i)) + "."])
            for i in range(30)]  # fmt: skip
    words = {d.title: len(d.sentences[0].split()) for d in docs}
    total, biggest, previous = sum(words.values()), max(words.values()), set()
    for fraction in (0.125, 0.25, 0.5, 1.0):
        share = share_of_documents(docs, fraction)
        titles = [d.title for d in share]
        assert titles == [d.title for d in docs if d.title in titles]  # the corpus's own order
        assert previous <= set(titles) and len(titles) >= 2
        assert abs(sum(words[t] for t in titles) - fraction * total) <= biggest
        assert [d.title for d in share_of_documents(docs[::-1], fraction)] == titles[::-1]
        previous = set(titles)
    assert len(share_of_documents(docs, 1e-6)) == 2


@pytest.mark.slow
def test_text_fraction_pretrains_on_that_share_and_is_checked(tmp_path):
    for wrong in (0, 1.5):
        with pytest.raises(ValueError, match="text_fraction"):
            recipes.pretrain(tmp_path / "no", steps=2, preset="tiny", text_fraction=wrong)
    assert not (tmp_path / "no").exists()
    result = recipes.pretrain(tmp_path / "m", steps=2, preset="tiny", vocab_size=300,
                              max_len=32, batch_size=4, dupe_factor=1, eval_every=2,
                              eval_batches=1, text_fraction=0.125)  # fmt: skip
    recipe = json.loads((result.folder / "recipe.json").read_text())
    assert recipe["text_fraction"] == 0.125


@pytest.mark.slow
def test_a_written_articles_file_is_the_course_extract_for_pretrain(tmp_path):
    """pretrain --corpus FILE.json (corpora.write_articles' file, for a machine without gensim)
    splits and shares the text as --corpus wikipedia does: benchmarks/pretraining_scale.py's
    runs on a GPU machine read the course extract so."""
    from minibert.recipes.pretrain_recipe import share_of_documents

    def rows(docs: list) -> list:
        return [(a.title, a.paragraph_sentences) for a in docs]

    file = corpora.write_articles(corpora.wikipedia_articles("all"), tmp_path / "articles.json")
    train, heldout = recipes.load_corpus("wikipedia")
    from_file = recipes.load_corpus(file)
    assert rows(from_file[0]) == rows(train) and rows(from_file[1]) == rows(heldout)
    assert rows(share_of_documents(from_file[0], 0.125)) == rows(share_of_documents(train, 0.125))
    result = recipes.pretrain(tmp_path / "m", steps=2, preset="tiny", vocab_size=300,
                              max_len=32, batch_size=4, dupe_factor=1, eval_every=2,
                              eval_batches=1, corpus=file, text_fraction=0.125)  # fmt: skip
    recipe = json.loads((result.folder / "recipe.json").read_text())
    assert recipe["corpus"] == str(file) and recipe["text_fraction"] == 0.125


# --- defaults that learn at every size, and a line when a run learned nothing ---------------------


def test_finetunes_default_steps_are_epochs_worth_but_at_least_min_steps():
    """--train-examples 256 with every default trained 21 steps (three epochs of 32) and kept a
    model at the trivial level (capitalisation: test F1 0.052)."""
    from minibert.config import BertConfig
    from minibert.recipes.finetune_recipe import MIN_STEPS, FinetuneOptions, _finetune_loop

    config = BertConfig(vocab_size=100, hidden_size=64, num_layers=1, num_heads=2,
                        intermediate_size=128)  # fmt: skip
    options = FinetuneOptions(task="capitalisation")
    assert _finetune_loop(options, config, 256).steps == MIN_STEPS == 100  # 3 x 8 = 24 before
    assert _finetune_loop(options, config, 64).steps == 100
    assert _finetune_loop(options, config, 8_530).steps == 3 * (8_530 // 32)  # epochs' worth


@pytest.mark.slow
def test_a_run_left_at_the_trivial_level_says_so_and_records_it(tmp_path):
    result = recipes.finetune(tmp_path / "qa", model="course", task="wiki-qa", train_examples=16,
                              steps=1, batch_size=16, max_length=96, progress=False)  # fmt: skip
    assert result.selection["value"] == 0.0  # one step: no exact span on dev
    assert result.selection["trivial"] is True
    assert "note: the kept evaluation is at the trivial level" in result.report()
    saved = json.loads((result.folder / "results.json").read_text())
    assert saved["selection"]["trivial"] is True


def test_the_measured_defaults_leave_the_trivial_level_and_reach_80_percent_of_the_protocol():
    """benchmarks/finetune_defaults.py: capitalisation and wiki-mentions leave the trivial level with the
    defaults at 64, 256 and 1,024 items, and at 256 reach 80% of the benchmark protocol's score."""
    record = json.loads((ROOT / "benchmarks" / "results" / "finetune_defaults.json").read_text())
    runs = record["runs"]
    assert record["min_steps"] == recipes.finetune_recipe.MIN_STEPS
    assert {(r["task"], r["size"]) for r in runs if r["model"] == "course"} >= {
        (t, s) for t in ("capitalisation", "wiki-mentions") for s in (64, 256, 1024)
    }
    named = [r for r in runs if r["task"] in ("capitalisation", "wiki-mentions")]
    assert not [(r["task"], r["size"], r["model"]) for r in named if r["trivial"]]
    for task in ("capitalisation", "wiki-mentions"):
        run = next(r for r in runs if (r["task"], r["size"], r["model"]) == (task, 256, "course"))
        assert run["test"] >= 0.8 * run["protocol"], run


def test_english_recipe_is_the_wikipedia_schedule_on_the_english_corpus_with_30_percent_masking():
    from minibert.cli import build_parser, with_recipe

    def parsed(name: str):
        return vars(
            build_parser().parse_args(with_recipe(["pretrain", "--recipe", name, "--out", "x"]))
        )

    english, wikipedia = parsed("english"), parsed("wikipedia")
    assert english["corpus"] == "english" and english["mask_rate"] == 0.3
    assert wikipedia["mask_rate"] == 0.15
    differ = {k for k in english if english[k] != wikipedia[k] and not callable(english[k])}
    assert differ == {"corpus", "mask_rate"}
