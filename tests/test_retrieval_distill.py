"""Distilling a sentence encoder, a loss on the bi-encoder and a data source: the loss is the mean
squared error by hand, the projection is the loss's, (batch, teacher width) and keeps cosines, every weight the vectors use learns, the teacher's
vectors are cached, no dev or test article's text is read, and `minibert distill` leaves a folder
that `minibert search` reads; bad input is one line."""

import pytest
import torch
from conftest import TEXTS, cli, make_tiny_config, tiny_encoder_folder

import minibert
from minibert import corpora
from minibert.model import BertModel
from minibert.recipes import distill_recipe
from minibert.retrieval import Passage, corpus, encoders
from minibert.retrieval.bi_encoder import BiEncoder, collate_pairs
from minibert.retrieval.distillation import (
    DistillationLoss,
    distill_encoder,
    distill_examples,
    distillation_loss,
    student_of,
    teacher_vectors,
    training_texts,
)
from minibert.retrieval.encoders import encode, load_encoder
from minibert.tokenization import BertTokenizer


def narrow_folder(folder, hidden=16, seed=1):
    """A saved tiny BERT narrower than tiny_encoder_folder's (16 wide), with its vocabulary."""
    words = sorted({w for t in TEXTS for w in t.split()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    minibert.set_seed(seed)
    config = make_tiny_config(vocab_size=len(vocab), hidden_size=hidden, intermediate_size=32)
    BertModel(config).save_pretrained(folder)
    BertTokenizer(vocab).save_pretrained(folder)
    return folder


@pytest.fixture
def teacher(tmp_path):
    return load_encoder(tiny_encoder_folder(tmp_path / "teacher"))  # 32 wide


@pytest.fixture
def student(tmp_path):
    return load_encoder(narrow_folder(tmp_path / "student"))  # 16 wide


def test_the_loss_is_the_mean_squared_error_over_texts_and_dimensions():
    projected = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    targets = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    # squared errors 1, 0, 0, 16: their mean over 2 texts x 2 dimensions
    assert distillation_loss(projected, targets).item() == pytest.approx(17 / 4)
    with pytest.raises(ValueError, match=r"both be \(batch, teacher width\), got \(2, 2\) and"):
        distillation_loss(projected, targets[:, :1])


def test_the_projection_is_teacher_wide_and_keeps_cosines(student, teacher):
    targets = encode(teacher, TEXTS)  # (texts, 32)
    batch = collate_pairs(distill_examples(student, TEXTS, targets), 0)
    assert set(batch) == {"passage_ids", "passage_mask", "teacher_vectors"}  # texts alone
    model = student_of(student, teacher_width=32).eval()
    assert isinstance(model, BiEncoder) and isinstance(model.loss, DistillationLoss)
    with torch.no_grad():
        out = model(**batch)
        projected = model.loss.project(out.passage_vectors)
    assert out.passage_vectors.shape == (len(TEXTS), 16) and projected.shape == (len(TEXTS), 32)
    torch.testing.assert_close(out.passage_vectors, encode(student, TEXTS), atol=1e-5, rtol=0)
    torch.testing.assert_close(out.loss, distillation_loss(projected, targets))
    weight = model.loss.projection_matrix()  # (32, 16), orthonormal columns
    assert weight.shape == (32, 16)
    torch.testing.assert_close(weight.T @ weight, torch.eye(16), atol=1e-5, rtol=0)

    def cosines(v):
        v = torch.nn.functional.normalize(v, dim=-1)
        return v @ v.T

    torch.testing.assert_close(cosines(projected), cosines(out.passage_vectors), atol=1e-5, rtol=0)
    assert DistillationLoss(32, teacher_width=32).projection is None  # same width
    with pytest.raises(ValueError, match=r"teacher's width \(8\) must be at least the student's"):
        DistillationLoss(16, teacher_width=8)
    assert DistillationLoss(16, 32)(None, out.passage_vectors) is None  # no teacher vectors


def test_every_weight_the_vectors_use_gets_a_gradient(student, teacher):
    model = student_of(student, 32)
    targets = encode(teacher, TEXTS)
    model(**collate_pairs(distill_examples(student, TEXTS, targets), 0)).loss.backward()
    for name, parameter in model.named_parameters():
        if ".pooler." in name:  # [CLS]'s dense + tanh is in no vector
            assert parameter.grad is None, name
            continue
        assert parameter.grad is not None and parameter.grad.abs().sum() > 0, name


def test_a_short_run_brings_the_student_near_the_teachers_vectors(student, teacher):
    targets = encode(teacher, TEXTS)
    history = distill_encoder(
        student, TEXTS, targets, steps=60, lr=3e-3, batch_size=5, progress=False, seed=0
    )
    assert history[-1]["train_loss"] < history[0]["train_loss"] / 2
    assert not student.model.training  # left in evaluation mode
    with pytest.raises(ValueError, match="one teacher vector per text: 5 texts"):
        distill_examples(student, TEXTS, targets[:3])


def test_the_teachers_vectors_are_computed_once_and_read_back(teacher, tmp_path, monkeypatch):
    first = teacher_vectors(teacher, TEXTS, tmp_path / "cache")
    assert len(list((tmp_path / "cache").glob("teacher-*.safetensors"))) == 1

    def refuse(*args, **kwargs):
        raise AssertionError("encoded again")

    monkeypatch.setattr(encoders, "encode_pieces", refuse)
    torch.testing.assert_close(teacher_vectors(teacher, TEXTS, tmp_path / "cache"), first)
    with pytest.raises(AssertionError, match="encoded again"):  # other texts: another key
        teacher_vectors(teacher, TEXTS[:2], tmp_path / "cache")


def test_a_damaged_teacher_cache_is_computed_again_with_one_line_naming_it(
    teacher, tmp_path, capsys
):
    """A truncated or empty file, a pickled dict, NaN rows, too few rows, the wrong width: each
    crashed distill (a PytorchStreamReader traceback, an AttributeError) or was trained on."""
    from safetensors.torch import save_file

    good = teacher_vectors(teacher, TEXTS, tmp_path / "cache")
    (file,) = (tmp_path / "cache").glob("teacher-*")
    sound = file.read_bytes()
    nan = good.clone()
    nan[2] = float("nan")
    pickled = tmp_path / "dict.pt"
    torch.save({"vectors": good.tolist()}, pickled)
    damaged = {
        "truncated": sound[: len(sound) // 2],
        "empty": b"",
        "a dict": pickled.read_bytes(),
    }
    for what, vectors in {"NaN": nan, "too few rows": good[:3], "too narrow": good[:, :16]}.items():
        save_file({"vectors": vectors.contiguous()}, str(tmp_path / what))
        damaged[what] = (tmp_path / what).read_bytes()
    capsys.readouterr()
    for what, content in damaged.items():
        file.write_bytes(content)
        again = teacher_vectors(teacher, TEXTS, tmp_path / "cache")
        torch.testing.assert_close(again, good)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"vectors {file} is damaged" in err, (what, err)
        assert "computing them again" in err
        assert file.read_bytes() == sound, what  # mended
    teacher_vectors(teacher, TEXTS, tmp_path / "cache")
    assert capsys.readouterr().err == ""  # a sound cache is read, silently


def test_a_cache_that_is_a_file_is_refused_before_the_teacher_runs(teacher, tmp_path, monkeypatch):
    """--cache FILE was refused only after the teacher's vectors were computed ([Errno 17] File
    exists, exit 1); the flag's help promises a folder."""

    def refuse(*args, **kwargs):
        raise AssertionError("the teacher ran")

    monkeypatch.setattr(encoders, "encode_pieces", refuse)
    afile = tmp_path / "afile"
    afile.write_text("x", encoding="utf-8")
    with pytest.raises(ValueError, match="afile is a file; give a folder"):
        teacher_vectors(teacher, TEXTS, afile)
    with pytest.raises(ValueError, match="afile is a file, so .* cannot be made"):
        teacher_vectors(teacher, TEXTS, afile / "cache")
    student = narrow_folder(tmp_path / "student")
    for cache in (afile, afile / "cache"):
        done = cli("distill", "--teacher", str(teacher.folder), "--student", str(student),
                   "--out", str(tmp_path / "o"), "--cache", str(cache))  # fmt: skip
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "cache must be a folder" in done.stderr and f"{afile} is not a folder" in done.stderr
        assert not (tmp_path / "o").exists()
    assert afile.read_text(encoding="utf-8") == "x"


def test_the_texts_are_the_training_articles_only():
    texts = set(training_texts("both"))
    held = [a for a in corpora.wikipedia_articles("all") if corpora.split_of(a.title) != "train"]
    assert held and not texts & {p for a in held for p in a.paragraphs}
    assert set(training_texts("paragraphs")) <= texts and set(training_texts("sentences")) <= texts
    with pytest.raises(ValueError, match="units must be one of"):
        training_texts("words")


@pytest.mark.slow
def test_distill_leaves_a_folder_that_search_reads(tmp_path, monkeypatch):
    teacher = tiny_encoder_folder(tmp_path / "teacher")
    student = narrow_folder(tmp_path / "student")
    monkeypatch.setattr(distill_recipe, "training_texts", lambda units: TEXTS)
    passages = [Passage(f"A{i}", 0, text) for i, text in enumerate(TEXTS)]
    monkeypatch.setattr(corpus, "wiki_passages", lambda: passages)
    out = tmp_path / "distilled"
    done = cli("distill", "--teacher", str(teacher), "--student", str(student), "--out", str(out),
               "--steps", "20", "--batch-size", "5", "--lr", "3e-3",
               "--cache", str(tmp_path / "cache"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "distilled on 5 texts of the training articles: mean squared error" in done.stdout
    encoder = load_encoder(out)
    assert encoder.model.config.hidden_size == 16  # the student itself, no projection
    done = cli("search", str(out), "the tower", "--top-k", "1")
    assert done.returncode == 0 and done.stdout.splitlines()[0].startswith("1\t")


def test_bad_input_is_one_line(tmp_path):
    teacher = tiny_encoder_folder(tmp_path / "teacher")
    done = cli("distill", "--teacher", str(tmp_path / "nothing"), "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "is not an encoder" in done.stderr
    done = cli("distill", "--teacher", str(narrow_folder(tmp_path / "narrow")),
               "--student", str(teacher), "--out", str(tmp_path / "o"))  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "is narrower than the student" in done.stderr
    assert not (tmp_path / "o").exists()
