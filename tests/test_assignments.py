"""Tests for minibert.teaching.assignments: the reference solutions get full marks, the skeletons zero, and
each seeded classic bug loses the right part with a hint that names the mistake."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from minibert import cli
from minibert.teaching import assignments
from minibert.teaching import grading_worker as worker
from minibert.teaching.assignments import remote, runner

SOLUTIONS = Path(__file__).parent / "assignments"


def submission(tmp_path: Path, name: str, replace: tuple[str, str] | None = None) -> Path:
    """A folder made by `new`, with the reference solution in it (one edit applied, if given)."""
    folder = assignments.new(name, tmp_path / name)
    file = assignments.get(name).file
    text = (SOLUTIONS / name / file).read_text(encoding="utf-8")
    if replace is not None:
        old, new = replace
        assert old in text, f"the seeded bug's anchor is not in the solution: {old!r}"
        text = text.replace(old, new)
    (folder / file).write_text(text, encoding="utf-8")
    return folder


def part(result: assignments.Grade, title: str) -> assignments.PartResult:
    return next(p for p in result.parts if p.title == title)


@pytest.mark.parametrize("name", list(assignments.ASSIGNMENTS))
def test_reference_solution_gets_full_marks(name, tmp_path):
    result = assignments.grade(submission(tmp_path, name))
    assert result.passed, [p.message for p in result.parts if p.points < p.max_points]
    assert result.points == result.max_points == 10


@pytest.mark.parametrize("name", list(assignments.ASSIGNMENTS))
def test_untouched_skeleton_gets_zero_and_says_why(name, tmp_path, capsys):
    folder = assignments.new(name, tmp_path / name)
    result = assignments.grade(folder)
    assert result.points == 0 and not result.passed
    assert all("NotImplementedError" in p.message for p in result.parts)
    assignments.report(result)
    out = capsys.readouterr().out
    assert "nothing is written yet" in out and "total: 0/10" in out


BUGS = {
    "attention": [
        (
            "softmax over the wrong axis",
            ("scores.softmax(dim=-1)", "scores.softmax(dim=-2)"),
            "scaled dot-product attention",
            "over the queries (dim=-2)",
        ),
        (
            "mask applied after the softmax",
            (
                "        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)\n"
                "    weights = scores.softmax(dim=-1)\n",
                "        pass\n    weights = scores.softmax(dim=-1)\n"
                "    if mask is not None:\n        weights = weights.masked_fill(~mask, 0.0)\n",
            ),
            "scaled dot-product attention",
            "applied after the softmax",
        ),
        (
            "missing 1/sqrt(d)",
            (" / math.sqrt(q.shape[-1])", ""),
            "scaled dot-product attention",
            "not divided by sqrt(d_k)",
        ),
        (
            "-inf for masked scores",
            ("masked_fill(~mask, torch.finfo(scores.dtype).min)", "masked_fill(~mask, -math.inf)"),
            "scaled dot-product attention",
            "not -inf",
        ),
        (
            "padding mask reversed",
            ("masked_fill(~keep,", "masked_fill(keep,"),
            "padding mask",
            "reversed",
        ),
        (
            "heads split without the transpose",
            (
                "x.view(batch, seq, num_heads, hidden // num_heads).transpose(1, 2)",
                "x.reshape(batch, num_heads, seq, hidden // num_heads)",
            ),
            "split and merge heads",
            "transpose",
        ),
        (
            "no output projection",
            ("return self.output(merge_heads(y)), weights", "return merge_heads(y), weights"),
            "multi-head self-attention",
            "output projection",
        ),
        (
            "padding ignored in the module",
            (
                "scaled_dot_product_attention(q, k, v, mask)",
                "scaled_dot_product_attention(q, k, v)",
            ),
            "multi-head self-attention",
            "padding mask was ignored",
        ),
    ],
    "encoder": [
        (
            "pre-LN instead of post-LN",
            (
                "        x = self.attention_norm(x + self.attention(x, mask))\n"
                "        return self.ffn_norm(x + self.ffn_out(F.gelu(self.ffn_in(x))))",
                "        x = x + self.attention(self.attention_norm(x), mask)\n"
                "        return x + self.ffn_out(F.gelu(self.ffn_in(self.ffn_norm(x))))",
            ),
            "encoder layer",
            "pre-LN",
        ),
        (
            "ReLU for GELU",
            ("F.gelu(self.ffn_in(x))", "F.relu(self.ffn_in(x))"),
            "encoder layer",
            "ReLU",
        ),
        (
            "tanh-approximate GELU",
            ("F.gelu(self.ffn_in(x))", 'F.gelu(self.ffn_in(x), approximate="tanh")'),
            "encoder layer",
            "tanh approximation",
        ),
        (
            "embeddings without LayerNorm",
            (
                "return self.layer_norm(x + self.position_embeddings(positions))",
                "return x + self.position_embeddings(positions)",
            ),
            "embeddings",
            "apply embeddings.layer_norm",
        ),
        (
            "no position embeddings",
            (
                "return self.layer_norm(x + self.position_embeddings(positions))",
                "return self.layer_norm(x)",
            ),
            "embeddings",
            "missing the position embeddings",
        ),
        (
            "missing 1/sqrt(d) in the heads",
            (" / math.sqrt(self.head_dim)", ""),
            "self-attention",
            "not divided by sqrt(head_dim)",
        ),
        (
            "attention mask not passed on",
            ("x = self.encoder(x, mask)", "x = self.encoder(x)"),
            "BertModel with MiniLM's weights",
            "mask is not reaching the layers",
        ),
        (
            "pooler without tanh",
            ("return torch.tanh(self.dense(hidden[:, 0]))", "return self.dense(hidden[:, 0])"),
            "BertModel with MiniLM's weights",
            "tanh(dense(",
        ),
    ],
    "masking": [
        (
            "labels at every position",
            (
                "masked, labels = list(input_ids), [IGNORE_INDEX] * len(input_ids)",
                "masked, labels = list(input_ids), list(input_ids)",
            ),
            "masking procedure",
            "every position has a label",
        ),
        (
            "80/10/10 wrong: every chosen token becomes [MASK]",
            ("if r < 0.8:", "if r < 1.0:"),
            "masking procedure",
            "BERT uses 80%",
        ),
        (
            "special tokens chosen",
            (
                "candidates = [i for i, special in enumerate(special_tokens_mask) if not special]",
                "candidates = list(range(len(input_ids)))",
            ),
            "masking procedure",
            "[CLS] and [SEP] were chosen",
        ),
        (
            "positions drawn with replacement",
            ("replace=False", "replace=True"),
            "masking procedure",
            "BERT chooses 15%",
        ),
        (
            "loss averaged over padding",
            (
                "labels.flatten(), ignore_index=IGNORE_INDEX)",
                "labels.flatten().clamp(min=0))",
            ),
            "MLM loss",
            "counted every position",
        ),
        (
            "accuracy at every chosen position",
            (
                "at = (labels != IGNORE_INDEX) & (input_ids == mask_token_id)",
                "at = labels != IGNORE_INDEX",
            ),
            "accuracy at the [MASK] positions",
            "kept ones too",
        ),
    ],
    "nsp": [
        (
            "d2l's labels: 1 for IsNext",
            ("IS_NEXT, NOT_NEXT = 0, 1  # Google", "IS_NEXT, NOT_NEXT = 1, 0  # Google"),
            "NSP pairs",
            "as d2l does",
        ),
        (
            "a negative may come from A's own document",
            ("[e for e in range(len(documents)) if e != d]", "list(range(len(documents)))"),
            "NSP pairs",
            "draw it from another document",
        ),
        (
            "pairs not truncated",
            ("while len(a) + len(b) + 3 > max_len:", "while False:"),
            "NSP pairs",
            "does not fit max_len",
        ),
        (
            "no pair for each document's first sentence",
            (
                "for i in range(len(document) - 1):\n            a =",
                "for i in range(1, len(document) - 1):\n            a =",
            ),
            "NSP pairs",
            "one pair per sentence but the last",
        ),
        (
            "SOP's swapped pairs labelled as in order",
            ("pairs.append((second, first, 1))", "pairs.append((second, first, 0))"),
            "SOP pairs",
            "0 = in order, 1 = swapped",
        ),
        (
            "SOP never swaps",
            ("pairs.append((second, first, 1))", "pairs.append((first, second, 0))"),
            "SOP pairs",
            "swap each",
        ),
        (
            "the MLM loss's ignore_index=0 drops IsNext",
            (
                "F.cross_entropy(nsp_logits, labels)",
                "F.cross_entropy(nsp_logits, labels, ignore_index=0)",
            ),
            "NSP loss",
            "IsNext pairs (label 0) were dropped",
        ),
    ],
    "finetuning": [
        (
            "the confusion matrix transposed",
            ("confusion[truth][guess] += 1", "confusion[guess][truth] += 1"),
            "evaluation",
            "transposed",
        ),
        (
            "the warm-up starting at 0",
            ("return (step + 1) / warmup_steps", "return step / warmup_steps"),
            "learning-rate schedule",
            "warm-up starts at 0",
        ),
        (
            "the live state_dict kept",
            (
                "best_state = {k: v.clone() for k, v in model.state_dict().items()}",
                "best_state = model.state_dict()",
            ),
            "fine-tuning loop",
            "state_dict() returns the live tensors",
        ),
        (
            "gradients never zeroed",
            ("        optimizer.zero_grad()\n", ""),
            "fine-tuning loop",
            "zero the gradients",
        ),
        (
            "no clipping",
            ("        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", ""),
            "fine-tuning loop",
            "clip the gradient's norm",
        ),
        (
            "weight decay on biases and LayerNorm",
            (
                '{"params": no_decay, "weight_decay": 0.0}',
                '{"params": no_decay, "weight_decay": 0.01}',
            ),
            "fine-tuning loop",
            "no weight decay on biases and LayerNorm",
        ),
        (
            "a tie replaces the best",
            ("if best is None or measure > best:", "if best is None or measure >= best:"),
            "fine-tuning loop",
            "on a tie keep the earlier",
        ),
        (
            "evaluation with dropout on",
            ("            model.eval()\n", ""),
            "fine-tuning loop",
            "evaluate in eval mode",
        ),
        (
            "training left in eval mode",
            ("            model.train()\n            if best", "            if best"),
            "fine-tuning loop",
            "call model.train() again",
        ),
    ],
    "spans": [
        (
            "the best start and the best end taken apart",
            (
                '    best, found = float("-inf"), (0, 0)\n    n = len(start_logits)\n',
                "    return int(start_logits.argmax()), int(end_logits.argmax())\n    n = 0\n    best, found = 0, (0, 0)\n",
            ),
            "best span in a window",
            "separately",
        ),
        (
            "an exclusive end",
            ("best, found = score, (start, end)", "best, found = score, (start, end + 1)"),
            "best span in a window",
            "inclusive",
        ),
        (
            "no maximum length",
            ("range(start, min(start + max_answer_tokens, n))", "range(start, n)"),
            "best span in a window",
            "at most max_answer_tokens",
        ),
        (
            "the first window only",
            ("    for window in windows:\n", "    for window in windows[:1]:\n"),
            "the answer over windows",
            "search every window",
        ),
        (
            "the answer cut before its last piece",
            ("offsets[first][0] : offsets[last][1]", "offsets[first][0] : offsets[last][0]"),
            "the answer over windows",
            "offsets[end][1]",
        ),
        (
            "tokens compared as sets",
            (
                "sum((Counter(predicted) & Counter(true)).values())",
                "len(set(predicted) & set(true))",
            ),
            "SQuAD F1",
            "multiset",
        ),
        (
            "articles kept",
            ('return re.sub(r"\\b(a|an|the)\\b", " ", text).split()', "return text.split()"),
            "SQuAD F1",
            "articles",
        ),
    ],
    "retrieval": [
        (
            "recall's first k + 1",
            ("if r in ranked[:k]:", "if r in ranked[: k + 1]:"),
            "recall@k",
            "ranking[:k + 1]",
        ),
        (
            "recall as a count",
            ("    return found / len(relevant)", "    return found"),
            "recall@k",
            "not a count",
        ),
        (
            "MRR without its cutoff",
            ("if r in ranked[:10]:", "if r in ranked:"),
            "MRR@10",
            "after the 10th scores 0",
        ),
        (
            "ranks counted from 0",
            ("total += 1 / (ranked.index(r) + 1)", "total += 1 / ranked.index(r)"),
            "MRR@10",
            "ranks start at 1",
        ),
        (
            "dot products, not cosines",
            (
                "    q = F.normalize(queries, dim=-1)\n    p = F.normalize(passages, dim=-1)\n",
                "    q, p = queries, passages\n",
            ),
            "in-batch contrastive loss",
            "normalise both sides",
        ),
        (
            "the temperature multiplied",
            ("logits = q @ p.T / temperature", "logits = q @ p.T * temperature"),
            "in-batch contrastive loss",
            "do not multiply",
        ),
        (
            "passages as the rows",
            ("logits = q @ p.T / temperature", "logits = p @ q.T / temperature"),
            "in-batch contrastive loss",
            "each query's row",
        ),
        (
            "each passage standardised over the queries",
            (
                "mean = scores.mean(dim=1, keepdim=True)\n"
                "        return (scores - mean) / scores.std(dim=1, keepdim=True)",
                "mean = scores.mean(dim=0, keepdim=True)\n"
                "        return (scores - mean) / scores.std(dim=0, keepdim=True)",
            ),
            "hybrid scores",
            "not each passage's over the queries",
        ),
        (
            "the scores mixed unstandardised",
            (
                "return (1 - weight) * standardised(lexical) + weight * standardised(dense)",
                "return (1 - weight) * lexical + weight * dense",
            ),
            "hybrid scores",
            "before mixing them",
        ),
        (
            "the weight on the lexical side",
            (
                "return (1 - weight) * standardised(lexical) + weight * standardised(dense)",
                "return weight * standardised(lexical) + (1 - weight) * standardised(dense)",
            ),
            "hybrid scores",
            "not the other way round",
        ),
    ],
}


@pytest.mark.parametrize(
    "name, bug, edit, title, hint",
    [(name, *case) for name, cases in BUGS.items() for case in cases],
    ids=[f"{name}: {case[0]}" for name, cases in BUGS.items() for case in cases],
)
def test_seeded_bug_loses_the_right_part_with_a_hint(name, bug, edit, title, hint, tmp_path):
    result = assignments.grade(submission(tmp_path, name, edit))
    lost = part(result, title)
    assert lost.points == 0, f"{bug}: part {title!r} still passed"
    assert hint in lost.message, f"{bug}: {lost.message}"
    assert result.points < result.max_points and not result.passed


def test_every_assignment_has_at_least_five_seeded_bugs():
    assert set(BUGS) == set(assignments.ASSIGNMENTS)
    assert all(len(cases) >= 5 for cases in BUGS.values())


def test_command_list_new_and_grade(tmp_path, capsys):
    assert cli.main(["assignment", "list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in assignments.ASSIGNMENTS)
    folder = tmp_path / "hw"
    assert cli.main(["assignment", "new", "masking", str(folder)]) == 0
    assert (folder / "masking.py").is_file() and (folder / "README.md").is_file()
    assert cli.main(["assignment", "new", "masking", str(folder)]) == 2  # never overwrites
    assert "already exist" in capsys.readouterr().err
    assert cli.main(["assignment", "grade", str(folder)]) == 1
    assert "total: 0/10" in capsys.readouterr().out
    shutil.copyfile(SOLUTIONS / "masking" / "masking.py", folder / "masking.py")
    assert cli.main(["assignment", "grade", str(folder)]) == 0
    assert "total: 10/10" in capsys.readouterr().out
    assert cli.main(["assignment", "new", "nope", str(tmp_path / "x")]) == 2
    assert "the assignments are" in capsys.readouterr().err


def test_grade_a_class_into_a_csv(tmp_path, capsys):
    good = submission(tmp_path / "alice", "masking")
    buggy = submission(tmp_path / "bob", "masking", ("if r < 0.8:", "if r < 1.0:"))
    empty = assignments.new("masking", tmp_path / "carol" / "masking")
    table = tmp_path / "grades.csv"
    folders = [str(good), str(buggy), str(empty)]
    code = cli.main(["assignment", "grade", *folders, "--name", "masking", "--csv", str(table)])
    assert code == 1  # not every submission passes
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["total"] for r in rows] == ["10", "6", "0"]
    assert rows[1]["masking procedure"] == "0" and rows[1]["MLM loss"] == "3"
    assert all(r["max"] == "10" for r in rows)


def test_broken_and_missing_files_score_zero_with_the_reason(tmp_path):
    folder = assignments.new("attention", tmp_path / "hw")
    (folder / "attention.py").write_text("def scaled_dot_product_attention(:\n", encoding="utf-8")
    result = assignments.grade(folder)
    assert result.points == 0 and "SyntaxError (line 1)" in result.error
    (folder / "attention.py").unlink()
    result = assignments.grade(folder)
    assert result.points == 0 and "is missing" in result.error
    with pytest.raises(ValueError, match="cannot tell which assignment"):
        assignments.grade(tmp_path)  # no marker, no file
    with pytest.raises(FileNotFoundError):
        assignments.grade(tmp_path / "nowhere")


def test_assignment_found_without_the_marker_and_endless_loops_stopped(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir()
    text = (SOLUTIONS / "masking" / "masking.py").read_text(encoding="utf-8")
    text = text.replace(
        "    return F.cross_entropy(", "    while True:\n        pass\n    return F.cross_entropy("
    )
    (folder / "masking.py").write_text(text, encoding="utf-8")  # no marker file
    result = assignments.grade(folder, seconds=5)  # the masking procedure's part takes about 1 s
    assert result.assignment == "masking"
    assert part(result, "MLM loss").points == 0
    assert "stopped after 5 s" in part(result, "MLM loss").message
    assert part(result, "masking procedure").points == 4


def test_skeletons_are_package_data_with_a_readme(tmp_path):
    for name, a in assignments.ASSIGNMENTS.items():
        files = sorted(p.name for p in (assignments.FILES / name).iterdir())
        assert files == sorted(["README.md", a.file])
        readme = (assignments.FILES / name / "README.md").read_text(encoding="utf-8")
        for heading in ("## Learning goals", "## The parts (10 points)", "## Rules"):
            assert heading in readme
        for p in a.parts:  # the README lists every part with its points
            assert f"({p.points} point" in readme


@pytest.mark.parametrize("name", list(assignments.ASSIGNMENTS))
def test_reference_solution_is_the_skeleton_with_its_bodies_filled_in(name):
    """The solution repeats the skeleton line for line outside the bodies, so the two never drift."""
    file = assignments.get(name).file
    skeleton = (assignments.FILES / name / file).read_text(encoding="utf-8").splitlines()
    solution = (SOLUTIONS / name / file).read_text(encoding="utf-8").splitlines()
    kept = [
        line
        for line in skeleton[1:]  # the first line names the file's role
        if line.strip()
        and "NotImplementedError" not in line
        and "unused" not in line
        and not line.startswith(("_ = ", "import ", "from "))  # a solution drops unused imports
    ]
    remaining = iter(solution)
    for line in kept:  # every kept skeleton line appears in the solution, in order
        assert any(line == candidate for candidate in remaining), f"{file}: {line!r}"


# --- a whole class, each submission in a sandbox: faults, hostile code, honest work ---------------

ATTENTION = (SOLUTIONS / "attention" / "attention.py").read_text(encoding="utf-8")
KEEP = "    keep = attention_mask[:, None, None, :].bool()"  # inside padding_mask (part 2)
MARKER = f"minibert-hostile-{uuid.uuid4().hex}"  # in the command line of every process they start
PACKAGE = Path(assignments.__file__).parent
GRADER = [*sorted(PACKAGE.glob("*.py")), Path(worker.__file__)]  # its code, which G4 tries to edit
SITE = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
CANARIES = [Path(d) / f"minibert_hostile_canary{ext}" for d in SITE for ext in (".pth", ".py")]


def student(root: Path, who: str, top: str = "", text: str = ATTENTION) -> Path:
    """A folder made by `new`, holding the reference solution with top prepended."""
    folder = assignments.new("attention", root / who)
    (folder / "attention.py").write_text(top + text, encoding="utf-8")
    return folder


def _spawn(detach: bool, count: int, busy: bool = False) -> str:
    """Code that starts count processes carrying MARKER (setsid'd if detach), then goes on."""
    body = "while True: pass" if busy else "import time; time.sleep(600)"
    return (
        "import os as _os, sys as _sys\n"
        f"for _ in range({count}):\n"
        "    if _os.fork() == 0:\n"
        + ("        _os.setsid()\n" if detach else "")
        + f"        _os.execv(_sys.executable, [_sys.executable, '-c', {body!r}, {MARKER!r}])\n"
    )


def _frames(*messages: dict) -> str:
    """Code that writes these frames into every pipe it holds open for writing (the channel)."""
    return (
        "import json as _json, os as _os, stat as _stat, struct as _struct\n"
        f"_data = b''\nfor _m in {list(messages)!r}:\n"
        "    _t = _json.dumps(_m).encode()\n"
        "    _data += _struct.pack('>II', len(_t), 0) + _t\n"
        "for _fd in range(3, 64):\n"
        "    try:\n"
        "        if _stat.S_ISFIFO(_os.fstat(_fd).st_mode):\n"
        "            _os.write(_fd, _data)\n"
        "    except OSError:\n"
        "        pass\n"
    )


FORGED_EVENTS = (  # the attack that once fooled the grader: events file at sys.argv[-2]
    "import json as _json, sys as _sys\n"
    "if len(_sys.argv) > 2 and _sys.argv[-2].endswith('.jsonl'):\n"
    "    with open(_sys.argv[-2], 'a') as _out:\n"
    "        for _t, _p in [('scaled dot-product attention', 3), ('multi-head self-attention', 1044), ('bonus', 3)]:\n"
    "            _out.write(_json.dumps({'part': {'title': _t, 'points': _p, 'max_points': _p, 'message': 'ok'}}) + '\\n')\n"
    "        _out.write(_json.dumps({'done': True}) + '\\n')\n"
)


def hostile(root: Path) -> dict[str, str]:
    """Who -> the code each hostile submission runs when imported (before the honest solution)."""
    reference_py = Path(assignments.__file__).parents[2] / "attention.py"
    junk = b"\0" * 4096 + b"  total: 10/10\n" * 20
    return {
        "g1_forged_events": FORGED_EVENTS
        + _frames({"ok": True}, {"value": 10}, {"value": {"tuple": [1050, "bonus"]}})
        + "import os\nos._exit(0)\n",
        "g2_unknown_key": _spawn(detach=False, count=1, busy=True)
        + _frames({"ok": True, "bonus": 5}),
        "g2_sigterm_parent": "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\n",
        "g3_classmates": (
            "import glob, os\n"
            f"for _path in glob.glob({str(root)!r} + '/*/attention.py') + glob.glob('../*/attention.py'):\n"
            "    if os.path.abspath(_path) != os.path.abspath(__file__):\n"
            "        try:\n"
            "            _text = open(__file__).read() if 'skeleton' in _path else 'raise NotImplementedError\\n'\n"
            "            open(_path, 'w').write(_text)\n"
            "        except OSError:\n"
            "            pass\n"
        ),
        "g4_edit_package": (
            f"for _path in {[str(p) for p in GRADER] + ['/grader/worker.py']!r}"
            f" + {[str(p) for p in CANARIES]!r}:\n"
            "    try:\n"
            "        open(_path, 'a').write('\\n# edited by a submission\\n')\n"
            "    except OSError:\n"
            "        pass\n"
        ),
        "g5_imports_reference": "from minibert.attention import scaled_dot_product_attention as _ref\n",
        "g5_reference_by_path": (
            "import importlib.util\n"
            f"_spec = importlib.util.spec_from_file_location('ref', {str(reference_py)!r})\n"
            "_ref = importlib.util.module_from_spec(_spec)\n_spec.loader.exec_module(_ref)\n"
        ),
        "d4_proc_stdout": (
            "import os\n"
            "for _pid in {os.getppid(), 1} | {int(p) for p in os.listdir('/proc') if p.isdigit()}:\n"
            "    for _fd in (1, 2):\n"
            "        try:\n"
            f"            _out = os.open(f'/proc/{{_pid}}/fd/{{_fd}}', os.O_WRONLY | os.O_TRUNC)\n"
            f"            os.write(_out, {junk!r})\n"
            "            os.close(_out)\n"
            "        except OSError:\n"
            "            pass\n"
        ),
        "h2_setsid_children": _spawn(detach=True, count=8),
        "h2_fork_loop": _spawn(detach=False, count=30),
    }


def faulty(root: Path) -> list[Path]:
    """The faults a submission can have: exits, a dtype change, a patched grader, a loop, an interrupt, ..."""
    folders = [
        student(root, "a_exit0", "import sys\nsys.exit(0)\n"),
        student(
            root,
            "b_os_exit",
            text=ATTENTION.replace(KEEP, "    import os\n\n    os._exit(0)\n" + KEEP),
        ),
        student(root, "c_dtype", "import torch\ntorch.set_default_dtype(torch.float64)\n"),
        student(root, "d_reference"),
        student(root, "e_patch", "import minibert.teaching.assignments as g\ng.grade = None\n"),
        assignments.new("attention", root / "f_skeleton"),
        student(root, "g_loop_at_import", "while True:\n    pass\n"),
        student(root, "h_interrupt", "raise KeyboardInterrupt\n"),
        student(root, "i_helpers", "from helpers import SCALE\n"),
        student(root, "j_huge_print", "print('x' * 50_000_000)\n"),
        student(root, "l_exit3", text=ATTENTION.replace(KEEP, "    raise SystemExit(3)\n" + KEEP)),
    ]
    (root / "i_helpers" / "helpers.py").write_text("SCALE = 1\n", encoding="utf-8")
    damaged = student(root, "k_damaged_marker")
    (damaged / assignments.MARKER).write_text("{not json", encoding="utf-8")
    (root / "roster.txt").write_text("alice\n", encoding="utf-8")
    return [*folders, damaged, root / "roster.txt"]


def _processes_with(marker: str) -> list[int]:
    """The processes whose command line holds marker (Linux; elsewhere none are found)."""
    found = []
    if not os.path.isdir("/proc"):
        return found
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(int(pid))
    return found


def grade_class(
    tmp: Path, folders: list[Path], env: dict | None = None, name: str = "attention"
) -> dict:
    """`minibert assignment grade --name name` on folders in a child process, its report saved to
    a file as a teacher would (`> report.txt`); the rows, the report, the exit code and the
    seconds it took. The CSV replaces one an earlier grading wrote."""
    table, saved = tmp / f"grades-{name}.csv", tmp / f"report-{name}.txt"
    table.write_text("folder,assignment,total,max,sandbox,error\nold,attention,0,10,,\n", "utf-8")
    command = [sys.executable, "-m", "minibert", "assignment", "grade", *map(str, folders)]
    command += ["--name", name, "--csv", str(table), "--seconds", "10", "--jobs", "2"]
    started = time.monotonic()
    with saved.open("wb") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.PIPE, env=env, timeout=600).returncode  # fmt: skip
    seconds = time.monotonic() - started
    with table.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        rows = {Path(r["folder"]).name: r for r in reader}
    return {"code": code, "rows": rows, "header": reader.fieldnames, "report": saved.read_bytes(),
            "seconds": seconds, "count": len(folders)}  # fmt: skip


SANDBOX_PROBLEM = assignments.sandbox_problem()


@pytest.fixture(scope="session")
def sandbox_here():
    """Skip a sandbox test where bubblewrap cannot sandbox; fail it where the sandbox is required
    (CI sets MINIBERT_REQUIRE_SANDBOX=1: a run that never tested the sandbox is not a pass)."""
    if SANDBOX_PROBLEM is None:
        return
    if os.environ.get("MINIBERT_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"the sandbox is required here (MINIBERT_REQUIRE_SANDBOX=1): {SANDBOX_PROBLEM}")
    pytest.skip(f"bubblewrap cannot sandbox on this machine ({SANDBOX_PROBLEM})")


needs_bwrap = pytest.mark.usefixtures("sandbox_here")


@pytest.fixture(scope="module")
def sandboxed_class(sandbox_here, tmp_path_factory):
    """A class of faulty, hostile and honest folders graded once in sandboxes (about a minute)."""
    tmp = tmp_path_factory.mktemp("class")
    root = tmp / "class"
    folders = faulty(root)
    folders += [student(root, who, top) for who, top in hostile(root).items()]
    honest = [student(root, f"z_reference_{n}") for n in range(3)]
    honest += [assignments.new("attention", root / f"z_skeleton_{n}") for n in range(2)]
    loop = (SOLUTIONS / "finetuning" / "finetuning.py").read_text(encoding="utf-8")
    live = loop.replace(
        "{k: v.clone() for k, v in model.state_dict().items()}", "model.state_dict()"
    )
    loops = []
    for who, text in (("m_finetuning", loop), ("n_finetuning_live_weights", live)):
        loops.append(assignments.new("finetuning", root / who))  # another assignment, same class
        (loops[-1] / "finetuning.py").write_text(text, encoding="utf-8")
    before = {p: p.read_bytes() for p in GRADER}
    on_disk = {f: (f / "attention.py").read_bytes() for f in honest}
    try:
        graded = grade_class(tmp, [*folders, *honest])
        other = grade_class(tmp, loops, name="finetuning")  # a second assignment, named
        graded["rows"] |= other["rows"]
        graded["count"] += other["count"]
        graded["seconds"] += other["seconds"]
        graded["report"] += other["report"]
        graded["code"] = max(graded["code"], other["code"])
    finally:  # were the sandbox broken, leave the package as it was
        changed = [p for p, text in before.items() if p.read_bytes() != text]
        for p in changed:
            p.write_bytes(before[p])
        planted = [c for c in CANARIES if c.exists()]
        for c in planted:
            c.unlink()
    graded.update(changed=changed, planted=planted, classmates_changed=[
        f.name for f, text in on_disk.items() if (f / "attention.py").read_bytes() != text])  # fmt: skip
    graded["left"] = _processes_with(MARKER)
    graded["workers_left"] = _processes_with("/grader/worker.py")  # a sandboxed worker's command
    return graded


@needs_bwrap
@pytest.mark.slow
def test_a_class_with_every_kind_of_fault_gets_a_row_each(sandboxed_class):
    rows = sandboxed_class["rows"]
    total = {who: row["total"] for who, row in rows.items()}
    assert sandboxed_class["code"] == 1  # not every submission passes
    assert len(rows) == sandboxed_class["count"]  # every folder, and the stray file, has its row
    assert total["a_exit0"] == "0" and "sys.exit(0)" in rows["a_exit0"]["error"]
    # os._exit in part 2 stops that run; parts 3 and 4 get a fresh one
    assert total["b_os_exit"] == "9" and "stopped" in rows["b_os_exit"]["error"]
    assert total["d_reference"] == "10"  # graded after c_dtype's float64 default, unharmed
    assert total["e_patch"] == "0" and "No module named 'minibert" in rows["e_patch"]["error"]
    assert total["f_skeleton"] == "0"
    assert "stopped after 10 s" in rows["g_loop_at_import"]["error"] and total["g_loop_at_import"] == "0"  # fmt: skip
    assert total["h_interrupt"] == "0" and "KeyboardInterrupt" in rows["h_interrupt"]["error"]
    assert total["i_helpers"] == "10"  # its folder is on sys.path
    assert total["j_huge_print"] == "10"
    assert total["l_exit3"] == "9"  # padding mask (1 point) lost; the other parts still graded
    assert total["k_damaged_marker"] == "10"  # --name names the assignment: no marker is read
    assert "no folder" in rows["roster.txt"]["error"]
    assert total["m_finetuning"] == "10"  # the loop's model and measure built in its sandbox
    assert total["n_finetuning_live_weights"] == "4"  # the loop's 6 points lost
    assert rows["n_finetuning_live_weights"]["fine-tuning loop"] == "0"
    assert all(r["sandbox"] == "bubblewrap" for r in rows.values())
    print(f"class of {len(rows)} graded in {sandboxed_class['seconds']:.0f} s")  # a benchmark


@needs_bwrap
@pytest.mark.slow
def test_forged_events_score_nothing(sandboxed_class):
    rows = sandboxed_class["rows"]
    assert rows["g1_forged_events"]["total"] == "0"
    assert sandboxed_class["header"][-4:] == ["total", "max", "sandbox", "error"]
    assert "bonus" not in sandboxed_class["header"]  # columns come from the catalogue alone
    assert all(int(r["total"]) <= int(r["max"] or 0) for r in rows.values())


@needs_bwrap
@pytest.mark.slow
def test_unknown_key_is_that_submissions_failure(sandboxed_class):
    row = sandboxed_class["rows"]["g2_unknown_key"]
    assert row["total"] == "0" and "malformed" in row["error"]
    assert all(sandboxed_class["rows"][f"z_reference_{n}"]["total"] == "10" for n in range(3))


@needs_bwrap
@pytest.mark.slow
def test_sigterm_to_the_parent_ends_nothing_but_its_own_run(sandboxed_class):
    assert sandboxed_class["code"] == 1  # not 143: the grader was out of its reach
    # its parent is the sandbox's init, which takes no notice
    assert sandboxed_class["rows"]["g2_sigterm_parent"]["total"] == "10"
    assert len(sandboxed_class["rows"]) == sandboxed_class["count"]


@needs_bwrap
@pytest.mark.slow
def test_classmates_files_are_out_of_reach(sandboxed_class):
    rows = sandboxed_class["rows"]
    assert sandboxed_class["classmates_changed"] == []
    assert [rows[f"z_reference_{n}"]["total"] for n in range(3)] == ["10"] * 3
    assert [rows[f"z_skeleton_{n}"]["total"] for n in range(2)] == ["0"] * 2
    assert rows["g3_classmates"]["total"] == "10"  # its own work is the reference


@needs_bwrap
@pytest.mark.slow
def test_the_installed_package_cannot_be_edited(sandboxed_class):
    assert sandboxed_class["changed"] == [] and sandboxed_class["planted"] == []
    assert sandboxed_class["rows"]["g4_edit_package"]["total"] == "10"
    assert [sandboxed_class["rows"][f"z_skeleton_{n}"]["total"] for n in range(2)] == ["0"] * 2


@needs_bwrap
@pytest.mark.slow
def test_the_reference_is_not_importable(sandboxed_class):
    for who in ("g5_imports_reference", "g5_reference_by_path"):
        row = sandboxed_class["rows"][who]
        assert row["total"] == "0" and "does not import" in row["error"], row
    assert "the rules forbid it" in sandboxed_class["rows"]["g5_imports_reference"]["error"]


@needs_bwrap
@pytest.mark.slow
def test_the_report_is_written_by_the_grader_alone(sandboxed_class):
    report = sandboxed_class["report"]
    assert b"\0" not in report
    assert report.count(b"total: ") == sandboxed_class["count"]  # one per row, none forged
    assert report.count(b"total: 10/10") == sum(r["total"] == "10" for r in sandboxed_class["rows"].values())  # fmt: skip
    row = sandboxed_class["rows"]["d4_proc_stdout"]  # its junk reached its own channel only
    assert row["total"] == "0" and "malformed frame" in row["error"]


@needs_bwrap
@pytest.mark.slow
def test_no_process_outlives_grading(sandboxed_class):
    assert sandboxed_class["left"] == []  # setsid children, a fork loop, a busy child: all gone
    assert sandboxed_class["workers_left"] == []
    for who in ("h2_setsid_children", "h2_fork_loop"):
        assert sandboxed_class["rows"][who]["total"] == "10"


@pytest.mark.skipif(sys.platform != "linux", reason="the hostile code forks; /proc finds processes")
@pytest.mark.slow
def test_without_bubblewrap_the_class_is_graded_and_every_row_says_not_sandboxed(tmp_path):
    """bwrap hidden (a PATH without it): the class that is safe to run without a sandbox."""
    root = tmp_path / "class"
    # without a sandbox these would reach the grader, classmates, the package, the report
    unsafe = {"g2_sigterm_parent", "g3_classmates", "g4_edit_package", "g5_reference_by_path", "d4_proc_stdout"}  # fmt: skip
    folders = [
        student(
            root,
            "b_os_exit",
            text=ATTENTION.replace(KEEP, "    import os\n\n    os._exit(0)\n" + KEEP),
        ),
        *(student(root, who, top) for who, top in hostile(root).items() if who not in unsafe),
        student(root, "z_reference"),
        assignments.new("attention", root / "z_skeleton"),
    ]
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    graded = grade_class(tmp_path, folders, env)
    rows, total = graded["rows"], {w: r["total"] for w, r in graded["rows"].items()}
    assert graded["code"] == 1 and len(rows) == len(folders)
    assert all(r["sandbox"].startswith("not sandboxed: bwrap was not found") for r in rows.values())
    assert "install bubblewrap" in rows["z_reference"]["sandbox"]
    assert graded["report"].count(b"not sandboxed") >= len(folders)
    assert total == {"b_os_exit": "9", "g1_forged_events": "0",
                     "g2_unknown_key": "0", "g5_imports_reference": "0", "h2_setsid_children": "10",
                     "h2_fork_loop": "10", "z_reference": "10", "z_skeleton": "0"}  # fmt: skip
    assert "the rules forbid it" in rows["g5_imports_reference"]["error"]
    assert _processes_with(MARKER) == []
    print(f"class of {len(rows)} graded without a sandbox in {graded['seconds']:.0f} s")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the submission forks")
def test_time_limit_holds_against_a_bare_except(tmp_path):
    keep = "    keep = attention_mask[:, None, None, :].bool()"
    loop = "    while True:\n        try:\n            pass\n        except:  # noqa: E722\n            pass\n"
    top = _spawn(detach=True, count=3)  # and processes that would outlive it
    folder = student(tmp_path, "bare", top, text=ATTENTION.replace(keep, loop + keep))
    result = assignments.grade_isolated(folder, seconds=2)
    assert [p.points for p in result.parts] == [3, 0, 2, 4]  # parts 3 and 4 get a fresh run
    assert "stopped after 2 s" in result.parts[1].message
    assert _processes_with(MARKER) == []


def test_seconds_must_be_positive_and_the_csv_folder_must_exist(tmp_path, capsys):
    folder = assignments.new("attention", tmp_path / "hw")
    for bad in ("0", "-1"):
        assert cli.main(["assignment", "grade", str(folder), "--seconds", bad]) == 2
    assert "--seconds must be a positive int, got -1" in capsys.readouterr().err
    assert (
        cli.main(["assignment", "grade", str(folder), "--csv", str(tmp_path / "nodir" / "x.csv")])
        == 2
    )
    assert "not a writable folder" in capsys.readouterr().err


def test_new_refuses_a_folder_holding_another_assignment(tmp_path, capsys):
    folder = assignments.new("attention", tmp_path / "hw")
    with pytest.raises(FileExistsError, match="another assignment's work"):
        assignments.new("masking", folder, overwrite=True)
    assert assignments.which(folder) == "attention"
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    with pytest.raises(FileExistsError, match="afile is a file; give a folder"):
        assignments.new("masking", tmp_path / "afile")


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="resident memory is read from /proc")
def test_memory_limit_scores_the_part_zero_and_grading_goes_on(tmp_path):
    keep = "    keep = attention_mask[:, None, None, :].bool()"
    hog = "    _ = bytearray(3 * 2**30)  # 3 GB, written (zeroed) page by page\n"
    folder = student(tmp_path, "hog", text=ATTENTION.replace(keep, hog + keep))
    result = assignments.grade_isolated(folder, seconds=60, memory_mb=2048)
    assert [p.points for p in result.parts] == [3, 0, 2, 4]  # the next part gets a fresh run
    assert "more than the 2,048 MB of memory" in result.parts[1].message  # the limit said no


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="resident memory is read from /proc")
def test_address_space_is_not_memory(tmp_path):
    # a CUDA build of torch reserves gigabytes of address space it never touches; so does this
    keep = "    keep = attention_mask[:, None, None, :].bool()"
    reserve = (
        "    import mmap\n    _ = mmap.mmap(-1, 8 * 2**30)  # 8 GB reserved, none of it used\n"
    )
    folder = student(tmp_path, "reserves", text=ATTENTION.replace(keep, reserve + keep))
    result = assignments.grade_isolated(folder, seconds=60, memory_mb=512)
    assert [p.points for p in result.parts] == [3, 1, 2, 4], [p.message for p in result.parts]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="the submission forks")
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="memory is read from /proc")
@pytest.mark.slow
def test_forked_children_count_what_they_hold_not_the_pages_they_share(tmp_path):
    """Four children forked after `import torch` share the worker's pages (copy on write): the
    resident sizes summed counted torch five times and stopped the run at 512 MB. Children that
    really write 4 x 200 MB are still stopped."""
    fork = (
        "import os as _os, time as _time\nimport torch as _torch\n_kids = []\n"
        "for _ in range(4):\n    _pid = _os.fork()\n    if _pid == 0:\n"
        "        {child}\n        _time.sleep(3)\n        _os._exit(0)\n    _kids.append(_pid)\n"
        "for _pid in _kids:\n    _os.waitpid(_pid, 0)\n"
    )
    sleepers = student(tmp_path, "sleepers", top=fork.format(child="pass"))
    result = assignments.grade_isolated(sleepers, seconds=60, memory_mb=512)
    assert [p.points for p in result.parts] == [3, 1, 2, 4], [p.message for p in result.parts]
    hog = "\n".join(
        "    " + line for line in fork.format(child="_ = bytearray(200 * 2**20)").splitlines()
    )
    writers = student(tmp_path, "writers", text=ATTENTION.replace(KEEP, hog + "\n" + KEEP))
    result = assignments.grade_isolated(writers, seconds=60, memory_mb=512)
    assert [p.points for p in result.parts] == [3, 0, 2, 4], [p.message for p in result.parts]
    assert "more than the 512 MB of memory" in result.parts[1].message


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="resident memory is read from /proc")
@pytest.mark.slow
def test_resident_memory_counts_the_processes_a_run_started():
    from minibert.teaching.assignments import runner

    grow = "import os, time\nif os.fork() == 0:\n    x = b'x' * 300 * 2**20\ntime.sleep(30)\n"
    child = subprocess.Popen([sys.executable, "-c", grow], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while runner._resident_bytes(child.pid) < 300 * 2**20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert runner._resident_bytes(child.pid) >= 300 * 2**20  # the forked child's 300 MB
    finally:
        os.killpg(child.pid, 9)  # both processes
        child.wait()


# --- the channel: a reply is outputs, never a score -----------------------------------------------


class _Replies:
    """A transport whose worker answers with the given frames, whatever it is asked."""

    def __init__(self, *frames: bytes):
        self.frames, self.closed = list(frames), False

    def send(self, frame: bytes, deadline: float) -> None:
        pass

    def receive(self, deadline: float) -> tuple[dict, dict]:
        frame = self.frames.pop(0)
        text_size, blob_size = worker.HEADER.unpack(frame[: worker.HEADER.size])
        body = frame[worker.HEADER.size :]
        return worker.decode_body(body[:text_size], body[text_size : text_size + blob_size])

    def why_ended(self) -> str:
        return "gone"

    def close(self) -> None:
        self.closed = True


def _frame(message: dict) -> bytes:
    text = json.dumps(message).encode()
    return worker.HEADER.pack(len(text), 0) + text


def test_a_forged_reply_is_an_output_never_a_score():
    """A reply names a value; a frame claiming points, a part or an extra column is malformed."""
    forged = [
        {"part": {"title": "bonus", "points": 1050, "max_points": 10, "message": "ok"}},
        {"value": 10, "points": 10},
        {"done": True},
    ]
    for message in forged:
        transport = _Replies(_frame(message))
        session = remote.Session(transport)
        session.begin(5)
        with pytest.raises(remote.Stopped, match="malformed frame"):
            session.call(0, None, (), {})
        assert transport.closed  # the run is ended, not left running (H2)
    session = remote.Session(_Replies(_frame({"value": {"tuple": [3, "points"]}})))
    session.begin(5)
    assert session.call(0, None, (), {}) == (3, "points")  # what the student's code returned


def test_malformed_frames_are_the_submissions_failure():
    """Damaged text, tensors, tags and nesting: each a Stopped for that run, never a traceback."""
    deep = {"list": [None]}
    for _ in range(100):
        deep = {"list": [deep]}
    bad = [
        worker.HEADER.pack(4, 0) + b"\xff\xfe{]",  # not UTF-8
        worker.HEADER.pack(2, 0) + b"[]",  # not an object
        worker.HEADER.pack(12, 5) + b'{"value": 1}' + b"\0\0\0\0\0",  # damaged tensors
        _frame({"value": {"tensor": "7"}}),  # a tensor it did not send
        _frame({"value": {"eval": "1+1"}}),  # an unknown tag
        _frame({"value": deep}),  # nested too deeply
        _frame({"raised": "TypeError"}),  # not [type, message]
        _frame({"value": 1, "bonus": 5}),  # an unknown key (G2)
    ]
    for frame in bad:
        session = remote.Session(_Replies(frame))
        session.begin(5)
        with pytest.raises(remote.Stopped, match="malformed frame"):
            session.call(0, None, (), {})
        assert session.ended and "malformed" in session.ended
    exc = remote.rebuilt("RuntimeError", "line one\n  total: 10/10\x00")  # its text, one line
    assert isinstance(exc, RuntimeError) and str(exc) == "line one   total: 10/10 "


def test_without_bwrap_rows_and_report_say_not_sandboxed(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "BWRAP", None)  # as on macOS, Windows, or Linux without it
    problem = assignments.sandbox_problem()
    assert problem.startswith("not sandboxed: bwrap was not found") and "apt-get install bubblewrap" in problem  # fmt: skip
    result = assignments.grade_isolated(student(tmp_path, "hw"))
    assert result.points == 10 and result.sandbox == problem
    assignments.report(result)
    assert "not sandboxed: bwrap was not found" in capsys.readouterr().out


def test_a_csv_that_cannot_be_written_is_refused_before_grading(tmp_path, capsys):
    folder = student(tmp_path, "hw")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    for place, says in ((tmp_path, "is a folder"), (tmp_path / "afile" / "g.csv", "not a writable folder")):  # fmt: skip
        assert cli.main(["assignment", "grade", str(folder), "--csv", str(place)]) == 2
        out, err = capsys.readouterr()
        assert says in err and len(err.strip().splitlines()) == 1  # one line
        assert "total:" not in out  # nothing graded
    assert not (tmp_path / "afile").is_dir()


def test_a_memory_limit_counts_beyond_torch_and_too_small_ones_are_refused(tmp_path, capsys):
    folder = student(tmp_path, "hw")
    assert cli.main(["assignment", "grade", str(folder), "--memory-mb", "300"]) == 2
    out, err = capsys.readouterr()
    assert f"must be an int >= {assignments.MIN_MEMORY_MB}" in err and "Python and torch" in err
    assert "total:" not in out
    with pytest.raises(ValueError, match="memory_mb at least"):
        assignments.grade_isolated(folder, memory_mb=300)
    result = assignments.grade_isolated(folder, memory_mb=assignments.MIN_MEMORY_MB)
    assert result.points == 10, [p.message for p in result.parts]  # the reference, in full


def test_a_lent_reference_piece_answers_only_during_its_part():
    """minibert's attention, lent to the encoder layer, runs in the grader, for that part only."""
    import torch

    transport = remote.LocalTransport()
    session = transport.session = remote.Session(transport)
    session.begin(5)
    session.helpers["helper-0"] = lambda x: x * 2  # what a part lends
    assert transport._ask("helper-0", (torch.ones(2),), {}).tolist() == [2.0, 2.0]
    session.begin(5)  # the next part lends nothing
    with pytest.raises(RuntimeError, match="lends no such helper"):
        transport._ask("helper-0", (torch.ones(2),), {})


def test_the_worker_that_runs_submissions_imports_no_minibert():
    """The sandbox holds the worker's file and not minibert: it must stand alone."""
    import ast

    tree = ast.parse(Path(worker.__file__).read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported and not {m for m in imported if m.split(".")[0] in worker.FORBIDDEN}


@needs_bwrap
def test_a_sandbox_that_cannot_start_torch_is_not_used(monkeypatch):
    """bwrap works but Python or torch does not start inside (a Nix store, an odd layout): the
    rows say so and grading runs without a sandbox, rather than every submission scoring 0."""
    monkeypatch.setattr(runner, "_probed", {})
    monkeypatch.setattr(runner, "_binds", lambda: ["--ro-bind", "/usr", "/usr"])  # no Python
    problem = assignments.sandbox_problem()
    assert problem.startswith("not sandboxed: bwrap works, but Python (")
    assert "and torch do not start in its sandbox" in problem and "install" not in problem


@pytest.mark.slow
def test_make_builds_only_the_graders_objects_for_a_check():
    """A check hands the student's loop a model and a measure built in the worker (worker.MADE)."""
    import torch

    transport = remote.LocalTransport()
    session = transport.session = remote.Session(transport)
    session.begin(5)
    session.start()
    module = remote.RemoteModule(session, "finetuning")
    model = module.make("LoopClassifier", 3)
    measure = module.make("DevAccuracy", torch.zeros(4, 6, dtype=torch.long), torch.zeros(4, dtype=torch.long))  # fmt: skip
    assert measure(model) in (0.0, 1.0) and model.calls_made() == [("eval", True)]
    local = worker.LoopClassifier(3)  # the same weights as the grader's reference model
    state = model.state_dict()
    assert all(torch.equal(state[k], v) for k, v in local.state_dict().items())
    with pytest.raises(KeyError):
        module.make("Popen", ["ls"])  # nothing else can be built


def test_the_loops_model_has_the_same_weights_while_other_threads_draw_random_numbers():
    """A grader with --jobs builds its reference LoopClassifiers in threads at once; each must have
    its seed's weights whatever another thread does to torch's global random state (with a global
    seed, 721 of 1,200 builds in four threads differed, and the reference loop failed the right
    answer: "keep a copy of the best weights")."""
    import threading

    import torch

    alone = {seed: worker.LoopClassifier(seed).state_dict() for seed in range(4)}
    stop, differed = threading.Event(), []

    def draw() -> None:  # another grading thread using the global generator
        while not stop.is_set():
            torch.manual_seed(99)
            torch.rand(64)

    def build(seed: int) -> None:
        for _ in range(100):
            state = worker.LoopClassifier(seed).state_dict()
            differed.extend(k for k, v in state.items() if not torch.equal(v, alone[seed][k]))

    drawing = threading.Thread(target=draw)
    builders = [threading.Thread(target=build, args=(seed,)) for seed in range(4)]
    drawing.start()
    for t in builders:
        t.start()
    for t in builders:
        t.join()
    stop.set()
    drawing.join()
    assert differed == []
    state = torch.get_rng_state()
    worker.LoopClassifier(0)
    assert torch.equal(torch.get_rng_state(), state)  # the caller's generator untouched


# --- the sandbox holds as root and wherever Python lives; the class is the teacher's --------------

ATTACK = """
import os, subprocess, sys
_caps = [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")][0]
_site = [p for p in sys.path if p.endswith("site-packages")]
_mounted = []
for _cmd in [["mount", "-o", "remount,bind,rw", _p] for _p in _site + ["/usr"]] + [
    ["mount", "-t", "tmpfs", "-o", "size=1g", "none", "/tmp"]
]:
    try:
        if subprocess.run(_cmd, capture_output=True).returncode == 0:
            _mounted.append(_cmd[-1])
    except OSError:
        pass
_wrote = []
for _d in _site + ["/usr", "/", "/etc", "/dev", "/grader", "/grader/handed-in"]:
    try:
        with open(os.path.join(_d, "minibert_hostile_canary.pth"), "w") as _f:
            _f.write("import sys\\n")
        _wrote.append(_d)
    except OSError:
        pass
_mb = {}
for _d in ("/dev/shm", "/tmp", "/submission"):
    _mb[_d] = 0
    for _i in range(25):  # 16 MB files, 400 MB at most: each under the per-file limit
        try:
            with open(os.path.join(_d, f"fill{_i}.bin"), "wb") as _f:
                for _ in range(16):
                    _f.write(b"x" * 2**20)
                    _f.flush()
                    _mb[_d] += 1
        except OSError:
            break
import json
_found = {"uid": os.getuid(), "caps": _caps, "mounted": len(_mounted), "wrote": len(_wrote), "mb": _mb}
raise RuntimeError("found " + json.dumps(_found))
"""


def _said(result: assignments.Grade) -> dict:
    """What ATTACK found, from the error it raised at import: uid, caps, mounted, wrote, mb."""
    return json.loads(result.error.split("RuntimeError: found ", 1)[1])


@needs_bwrap
def test_a_submission_cannot_remount_mount_or_fill_memory_and_disk(tmp_path):
    """As root (the README's set-up) bwrap kept every capability: a submission remounted the
    environment and /usr writable and wrote there; filled /dev/shm past --memory-mb and the host's
    /tmp without limit. Now it runs as nobody with no capability, its writable places are
    in-memory folders of fixed size, and the folder it runs in is not the host's disk."""
    folder = student(tmp_path, "attacker", text=ATTACK)
    result = assignments.grade_isolated(folder, seconds=60)
    planted = [c for c in CANARIES if c.exists()]
    for c in planted:
        c.unlink()
    said = _said(result)
    assert result.points == 0 and result.sandbox == "bubblewrap"
    assert said["uid"] == int(runner.NOBODY) and int(said["caps"], 16) == 0  # S1
    assert said["mounted"] == 0 and said["wrote"] == 0 and planted == []  # S1
    assert said["mb"]["/dev/shm"] <= runner.SHM_BYTES // 2**20  # S2
    assert said["mb"]["/tmp"] <= runner.TMP_BYTES // 2**20
    assert said["mb"]["/submission"] <= runner.SUBMISSION_BYTES // 2**20  # S3
    assert not list(folder.glob("fill*.bin"))  # nothing written into the folder handed in


@needs_bwrap
@pytest.mark.slow
def test_an_environment_under_tmp_is_sandboxed(tmp_path_factory):
    """A virtual environment under /tmp (a CI clone there): the sandbox's own /tmp hid it, so the
    probe failed, advised installing bubblewrap, and grading went on unsandboxed."""
    import sysconfig
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="minibert-env-", dir="/tmp"))
    try:
        env = root / "env"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
        python = env / "bin" / "python"
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
        ours = sysconfig.get_paths()["purelib"]  # minibert and torch, added by a .pth file
        Path(site, "minibert_test_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
        folder = student(tmp_path_factory.mktemp("tmpenv"), "hw")
        check = (
            "import sys; from minibert.teaching.assignments import runner\n"
            "assert sys.prefix.startswith('/tmp/'), sys.prefix\n"
            "print(runner.sandbox_problem())\n"
            "g = runner.grade_isolated(sys.argv[1], seconds=60)\n"
            "print(g.points, g.sandbox)\n"
        )
        done = subprocess.run([str(python), "-c", check, str(folder)], capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.splitlines() == ["None", "10 bubblewrap"]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_sandboxs_tmp_comes_before_the_binds_it_would_hide():
    args = runner._sandbox("bwrap", "t")
    tmp = args.index("/tmp", args.index("--tmpfs"))
    binds = [i for i, a in enumerate(args) if a in ("--ro-bind", "--bind")]
    assert binds and tmp < min(binds)  # a Python under /tmp is bound on top of the tmpfs
    assert args[-4:] == ["--remount-ro", "/dev", "--remount-ro", "/"]


def test_a_sandbox_problem_says_the_true_reason(monkeypatch):
    """bwrap installed but Python failing inside it was told to install bubblewrap."""
    monkeypatch.setattr(runner, "_probed", {})
    monkeypatch.setattr(runner.shutil, "which", lambda name: "/usr/bin/bwrap")
    said = iter([None, "bwrap: execvp /somewhere/bin/python: No such file or directory"])
    monkeypatch.setattr(runner, "_probe", lambda command: next(said))
    problem = runner.sandbox_problem()
    assert "bwrap works, but Python" in problem and "execvp" in problem
    assert "install bubblewrap" not in problem


def test_time_in_a_lent_helper_counts_against_the_submission(tmp_path, monkeypatch):
    """The encoder layer's part lends minibert's attention; the grader's time in it was not
    counted, so a layer calling it in a loop kept the grader busy long past --seconds."""
    from minibert.teaching.assignments import checks

    served = []
    lend = checks._reference_attention

    def slow(attention):
        helper = lend(attention)

        def forward(x, mask=None):
            time.sleep(0.25)  # a slow helper: 2 s of --seconds allow about 8 calls
            served.append(1)
            return helper(x, mask)

        return forward

    monkeypatch.setattr(checks, "_reference_attention", slow)
    text = (SOLUTIONS / "encoder" / "encoder.py").read_text(encoding="utf-8")
    anchor = "        x = self.attention_norm(x + self.attention(x, mask))\n"
    assert anchor in text
    text = text.replace(
        anchor, "        while True:\n            self.attention(x, mask)\n" + anchor
    )
    folder = assignments.new("encoder", tmp_path / "hw")
    (folder / "encoder.py").write_text(text, encoding="utf-8")
    result = assignments.grade_isolated(folder, seconds=2)
    assert part(result, "encoder layer").points == 0
    assert "stopped after 2 s" in part(result, "encoder layer").message
    assert len(served) <= 2 / 0.25 + 1  # before: ~8 calls a second until the worker's 2 s


def test_a_lent_helper_refuses_inputs_larger_than_a_check_needs():
    import torch

    from minibert.teaching.assignments import checks

    helper = checks._reference_attention(lambda x, mask: (x, None))
    assert helper(torch.ones(2, 3, 4)).shape == (2, 3, 4)
    with pytest.raises(ValueError, match="at most 65,536 numbers"):
        helper(torch.ones(1, 512, 256))


def test_a_class_is_graded_as_the_assignment_the_teacher_names(tmp_path, capsys):
    """An encoder folder whose marker names attention, holding attention's reference solution,
    was graded as attention (10/10) in the class's CSV."""
    honest = submission(tmp_path / "alice", "encoder")
    sly = assignments.new("encoder", tmp_path / "bob" / "encoder")
    (sly / assignments.MARKER).write_text(json.dumps({"assignment": "attention"}), "utf-8")
    (sly / "attention.py").write_text(ATTENTION, encoding="utf-8")
    table = tmp_path / "grades.csv"
    folders = [str(honest), str(sly)]
    assert cli.main(["assignment", "grade", *folders, "--csv", str(table)]) == 2
    out, err = capsys.readouterr()
    assert "needs --name" in err and len(err.strip().splitlines()) == 1 and "total:" not in out
    assert not table.exists()
    with pytest.raises(ValueError, match="needs the assignment's name"):
        list(assignments.grade_many(folders))
    assert (
        cli.main(["assignment", "grade", *folders, "--name", "encoder", "--csv", str(table)]) == 1
    )
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [(r["assignment"], r["total"]) for r in rows] == [("encoder", "10"), ("encoder", "0")]


def test_an_unknown_name_is_a_bad_argument(tmp_path, capsys):
    folder = submission(tmp_path, "attention")
    assert cli.main(["assignment", "grade", str(folder), "--name", "nosuch"]) == 2
    out, err = capsys.readouterr()
    assert "unknown assignment 'nosuch'" in err and "total:" not in out


def test_the_csv_never_replaces_a_file_the_grader_did_not_write(tmp_path, capsys):
    """`--csv S/attention.py` replaced the student's code with the table."""
    folder = submission(tmp_path, "attention")
    code = folder / "attention.py"
    before = code.read_bytes()
    assert cli.main(["assignment", "grade", str(folder), "--csv", str(code)]) == 2
    out, err = capsys.readouterr()
    assert "not a table of grades this grader wrote" in err and "total:" not in out
    assert code.read_bytes() == before
    table = tmp_path / "grades.csv"
    assert cli.main(["assignment", "grade", str(folder), "--csv", str(table)]) == 0
    assert (
        cli.main(["assignment", "grade", str(folder), "--csv", str(table)]) == 0
    )  # its own: replaced
    assert len(list(csv.DictReader(table.open(encoding="utf-8")))) == 1


@pytest.mark.slow
def test_ctrl_c_during_grading_is_one_line_and_leaves_the_csv_whole(tmp_path):
    """Ctrl-C during `assignment grade`: a KeyboardInterrupt traceback."""
    import signal

    slow = student(tmp_path, "slow", "import time\ntime.sleep(60)\n")
    table = tmp_path / "grades.csv"
    table.write_text("folder,assignment,total,max,sandbox,error\n", encoding="utf-8")
    before = table.read_bytes()
    command = [sys.executable, "-m", "minibert", "assignment", "grade", str(slow), str(slow),
               "--name", "attention", "--csv", str(table), "--seconds", "120"]  # fmt: skip
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as at a terminal (a
    )  # fmt: skip  # background job starts with SIGINT ignored, and Python then keeps it so
    child.stdout.readline()  # the sandbox line: grading has begun
    time.sleep(2)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130 and "Traceback" not in err, err
    assert "interrupted after 0 of 2 folders" in err and len(err.strip().splitlines()) == 1
    assert table.read_bytes() == before


def test_assignment_new_into_a_place_it_cannot_write_is_one_line(tmp_path, capsys):
    """`assignment new` into a read-only place: OSError [Errno 30]; to a dangling link: [Errno 17]."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    for place, says in ((tmp_path / "afile" / "hw", "afile is a file, so"),
                        (tmp_path / "link", "which does not exist")):  # fmt: skip
        assert cli.main(["assignment", "new", "attention", str(place)]) == 2
        err = capsys.readouterr().err
        assert says in err and len(err.strip().splitlines()) == 1 and "Errno" not in err
    assert not (tmp_path / "nowhere").exists()


@contextlib.contextmanager
def _nest(folder: Path, depth: int) -> Iterator[Path]:
    """depth folders, one inside the other, made one at a time (os.makedirs recurses), removed at
    the end (pytest's own clean-up of old temporary folders recurses too)."""
    bottom = folder
    try:
        for _ in range(depth):
            bottom = bottom / "d"
            bottom.mkdir()
        yield bottom
    finally:
        runner._remove_tree(str(folder / "d"))


def test_a_folder_nested_too_deep_costs_only_its_own_row(tmp_path, monkeypatch):
    """A submission holding folders nested 1,200 deep ended the grading of the whole class in a
    RecursionError: no CSV, the later folders never graded, a copy left in the temporary folder."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    root = tmp_path / "class"
    good, deep = student(root, "a_good"), student(root, "b_deep")
    skeleton = assignments.new("attention", root / "c_skeleton")
    table = tmp_path / "grades.csv"
    folders = [str(good), str(deep), str(skeleton)]
    with _nest(deep, 1200):
        code = cli.main(
            ["assignment", "grade", *folders, "--name", "attention", "--csv", str(table)]
        )
    assert code == 1
    rows = {Path(r["folder"]).name: r for r in csv.DictReader(table.open(encoding="utf-8"))}
    totals = {who: row["total"] for who, row in rows.items()}
    assert totals == {"a_good": "10", "b_deep": "0", "c_skeleton": "0"}
    assert f"nested more than {runner.MAX_DEPTH} deep" in rows["b_deep"]["error"]
    assert "keep only the code" in rows["b_deep"]["error"]
    assert list(temporary.iterdir()) == []  # every private copy removed


def test_a_copy_nested_deeper_than_the_recursion_limit_is_removed(tmp_path):
    top = tmp_path / "copy"
    top.mkdir()
    with _nest(top, sys.getrecursionlimit() + 200) as bottom:
        (bottom / "file.txt").write_text("x")
        bottom.parent.chmod(0o500)  # a submission made a folder read-only
        runner._remove_tree(str(top))
        assert not top.exists()


def test_a_csv_cell_starting_like_a_formula_is_quoted(tmp_path):
    """A folder named `=1+2` was written as is at the start of a row: a spreadsheet ran it."""
    table = tmp_path / "grades.csv"
    rows = [
        assignments.Grade("attention", Path(name), error=error)
        for name, error in (("=1+2", "+cmd"), ("-2", "@SUM(A1)"), ("alice", "no file"))
    ]
    assignments.write_csv(rows, table)
    read = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["folder"] for r in read] == ["'=1+2", "'-2", "alice"]
    assert [r["error"] for r in read] == ["'+cmd", "'@SUM(A1)", "no file"]
