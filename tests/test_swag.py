"""minibert.tasks.swag: wiki-swag's items from a hand-made article, the multiple-choice shape's
collate, head size, result line and command, mb.choose, the baselines and the splits."""

from __future__ import annotations

import collections

import pytest
import torch

import minibert as mb
from minibert import cli, corpora, recipes, tasks
from minibert.model import BertForMultipleChoice
from minibert.tasks import swag
from minibert.tokenization import BertTokenizer

# A hand-made article: paragraph 0 holds the only pair of sentences that both fit (6 to 35 words);
# the other sentences are the pool the distractors come from.
S = [
    "The harbour of Tellin was built by the duke in the year 1410 .",  # 0: the context
    "Its stone walls still stand along the river mouth near the old town .",  # 1: the ending
    "Short one .",  # 2: too short to be a pair or a distractor
    "Fishing boats from Tellin sailed north to the cold banks every spring .",  # 3
    "The duke also founded a school for sailors beside the harbour gate .",  # 4
    "Merchants from the south brought salt , wine and cloth to the market .",  # 5
    "A great storm in 1703 broke the eastern wall of the harbour of Tellin .",  # 6
    "The railway reached the town in 1860 and trade moved inland soon after .",  # 7
    "Today the harbour serves small yachts and a ferry to the islands .",  # 8
    "Painters came every summer to draw the boats and the walls at dusk .",  # 9
]
ARTICLE = corpora.make_article("Tellin", [" ".join(S[:3]), " ".join(S[3:6]), " ".join(S[6:])])


def test_an_item_is_a_sentence_its_next_one_and_three_far_distractors_of_the_same_article():
    assert [len(p) for p in ARTICLE.paragraph_sentences] == [3, 3, 4]
    items = swag.swag_items([ARTICLE])
    first = items[0]
    assert first.article == "Tellin" and first.context == S[0]
    assert first.choices[first.label] == S[1]  # the right one: the next sentence of its paragraph
    distractors = [c for i, c in enumerate(first.choices) if i != first.label]
    assert len(first.choices) == 4 and len(set(first.choices)) == 4
    assert all(c in S[3:] for c in distractors)  # of the same article; none too short
    # none within NOT_NEAR (2) sentences of the context: S[2] is too short anyway, S[1] the ending
    assert all(S.index(c) > swag.NOT_NEAR for c in distractors)
    # the sentences that share as many of the context's content words as the ending come first:
    # the ending shares none ("harbour" etc. are not in it), so every sentence qualifies; with
    # NEAREST (8) >= the 7 in the pool, any three of them may be drawn
    assert swag.swag_items([ARTICLE]) == items  # seeded by the title and the paragraph
    # paragraph 1 (S[3], S[4], S[5]): its pairs are (3, 4) and (4, 5); distractors keep away
    second = items[1]
    at = S.index(second.context)
    assert second.choices[second.label] == S[at + 1]
    assert all(abs(S.index(c) - at) > swag.NOT_NEAR for c in second.choices if c != S[at + 1])


def test_on_topic_distractors_come_first():
    # the ending shares "harbour" and "tellin" with the context: distractors that share as many
    # are preferred over sentences closer in length that share fewer
    context = "The harbour of Tellin was built by the duke in the year 1410 ."
    ending = "The harbour of Tellin grew quickly in the next hundred years ."
    sharing = [
        f"Later the harbour of Tellin saw {w} ships arrive from abroad ." for w in "abcdefgh"
    ]
    other = [f"Painters came to draw {w} boats ." for w in "ijklmnop"]  # closer in length
    article = corpora.make_article("T", [" ".join([context, ending]), " ".join(other + sharing)])
    item = swag.swag_items([article])[0]
    assert item.context == context and item.choices[item.label] == ending
    assert all(c in sharing for c in item.choices if c != ending)  # NEAREST (8) share as many


def test_a_paragraph_without_a_fitting_pair_or_distractors_gives_no_item():
    lonely = corpora.make_article("L", [" ".join(S[:2])])  # two sentences, no distractor at all
    assert swag.swag_items([lonely]) == []
    assert swag.swag_items([corpora.make_article("M", ["Short one . Too short ."])]) == []


def test_the_splits_are_by_article_and_the_right_choice_is_anywhere():
    train, dev, test = swag.wiki_swag_splits()
    titles = [{i.article for i in part} for part in (train, dev, test)]
    assert not titles[0] & titles[1] and not (titles[0] | titles[1]) & titles[2]
    assert all(corpora.heldout_article(t) for t in titles[2])
    assert len(train) > 2000 and len(test) > 300
    positions = collections.Counter(i.label for i in train)
    assert min(positions.values()) > len(train) / 4 * 0.85  # shuffled: each position near 1/4


@pytest.fixture(scope="module")
def tok():
    return BertTokenizer.from_pretrained(mb.assets.course_checkpoint("course"))


def test_collate_pads_every_choice_of_every_item(tok):
    items = swag.swag_items([ARTICLE])
    data = swag.ChoiceDataset(items, tok, max_length=24)
    batch = tasks.get("wiki-swag").collate([data[0], data[1]], tok.pad_token_id)  # the shape's
    n, choices, seq = batch["input_ids"].shape
    longest = max(len(c) for i in (0, 1) for c in data[i]["input_ids"])
    assert (n, choices, seq) == (2, 4, longest) and seq <= 24
    assert batch["attention_mask"].shape == batch["token_type_ids"].shape == (2, 4, seq)
    lengths = batch["attention_mask"].sum(-1).tolist()
    assert lengths == [[len(c) for c in data[i]["input_ids"]] for i in (0, 1)]
    assert batch["labels"].tolist() == [items[0].label, items[1].label]
    with pytest.raises(ValueError, match="same number of choices"):
        swag.collate_choices([data[0], {**data[1], "input_ids": data[1]["input_ids"][:3]}])


def test_the_shape_gives_head_size_result_line_and_command():
    task, shape = tasks.get("wiki-swag"), tasks.SHAPES["choice"]
    assert task.model_class is BertForMultipleChoice and task.head_size == 1
    assert task.label_names is None  # one score per choice, not one output per label
    line = task.test_line({"accuracy": 0.5, "examples": 400, "unit": "item"})
    assert line == "test (400 items): accuracy 0.5000 (the right choice picked)"
    assert shape.command.verb == "choose" and mb.choose is swag.choose


def test_the_baselines_answer_each_item(tok):
    items = swag.swag_items([ARTICLE])
    data = swag.ChoiceDataset(items, tok, 64)
    task = tasks.get("wiki-swag")
    names = [b.name for b in task.baselines]
    assert names == ["shared words", "topic (TF-IDF cosine)", "course NSP head"]
    for baseline in task.baselines:
        answers = baseline.predict(data, data, data, tok)
        assert len(answers) == len(items) and all(0 <= a < 4 for a in answers)
    shared = swag.ChoiceDataset(
        [
            swag.SwagItem(
                "T", "the duke built the harbour .", ("cats nap .", "the duke 's harbour ."), 1
            )
        ],
        tok,
    )
    assert task.baselines[0].predict(None, None, shared, tok) == [1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return recipes.finetune(
        tmp_path_factory.mktemp("swag") / "run", model="course", task="wiki-swag",
        train_examples=32, steps=2, batch_size=16, max_length=48, evaluations=1, progress=False,
    ).folder  # fmt: skip


@pytest.mark.slow
def test_choose_gives_each_choice_its_probability_and_the_command_prints_the_best_first(
    folder, capsys
):
    model = BertForMultipleChoice.from_pretrained(folder)
    tok = BertTokenizer.from_pretrained(folder)
    found = mb.choose(model, tok, "it rained all day .", ["we got wet .", "cats nap .", "so ."])
    assert [c for c, _ in found] == ["we got wet .", "cats nap .", "so ."]
    assert sum(p for _, p in found) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two choices"):
        mb.choose(model, tok, "it rained .", ["one ."])
    with pytest.raises(ValueError, match="choice 2 is empty"):
        mb.choose(model, tok, "it rained .", ["one .", " "])
    assert cli.main(["choose", str(folder), "it rained .", "--choice", "we got wet .",
                     "--choice", "cats nap ."]) == 0  # fmt: skip
    lines = capsys.readouterr().out.splitlines()
    probabilities = [float(line.split("\t")[0]) for line in lines]
    assert len(lines) == 2 and probabilities == sorted(probabilities, reverse=True)
    assert cli.main(["choose", str(folder), "it rained .", "--choice", "a b ."]) == 2
    assert "at least two choices" in capsys.readouterr().err
    assert cli.main(["classify", str(folder), "a text"]) == 2  # another shape's command
    assert "use `minibert choose" in capsys.readouterr().err


def test_a_batch_on_the_loop_checks_choice_labels():
    model = BertForMultipleChoice(mb.BertConfig.preset("tiny").replace(vocab_size=50))
    ids = torch.zeros((1, 3, 5), dtype=torch.long)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        model.check_batch({"input_ids": ids, "labels": torch.tensor([3])})
