"""The lessons: the course map in one place, and the ``minibert course`` command that opens them.

The README's table and notebook 00 both come from ``course_map()`` (a test checks the README's).
``minibert course`` starts JupyterLab on the notebooks; ``minibert course student-edition OUT``
writes them without the exercises' solutions (``student_edition``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Lesson:
    """One notebook of the course: its file, title, what it teaches, minutes on a 2-core CPU."""

    notebook: str
    title: str
    teaches: str
    minutes: float

    @property
    def number(self) -> str:
        return self.notebook[:2]


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "00_start_here.ipynb",
        "Start here",
        "what BERT is: one figure from text to heads, pretraining vs fine-tuning, and contextual vs context-free vectors measured on MiniLM; checks the environment; the course map; a first look at the Wikipedia articles and the review snippets",
        0.5,
    ),
    Lesson(
        "01_tokens_and_segments.ipynb",
        "Tokens and segments",
        "why subwords; BERT's basic tokenizer step by step; greedy WordPiece by hand; training a vocabulary on Wikipedia live and comparing it with bert-base-uncased's; [CLS], [SEP], segments and the paper's input-representation figure drawn from real data; padding, attention masks, truncation; tokenizer speed in an appendix",
        0.5,
    ),
    Lesson(
        "02_attention_math.ipynb",
        "Attention math",
        "Q, K, V with tiny numbers; why divide by sqrt(d_k) (an experiment); padding and causal masks; multi-head reshapes, equal to `torch.nn.MultiheadAttention`; a head that learns in seconds, and why two heads do what one cannot (measured); explicit vs fused attention in an appendix",
        0.5,
    ),
    Lesson(
        "03_encoder.ipynb",
        "The encoder",
        "embeddings; the encoder layer as a block diagram, why residuals, LayerNorm and the feed-forward, post-LN vs pre-LN, then by hand; parameter counts from tiny to base (the paper's 110M); the real MiniLM loaded and checked against `transformers`; what real heads look at; an interactive explorer; in an appendix, learned vs sinusoidal positions (the shift property, and why BERT learns them)",
        0.5,
    ),
    Lesson(
        "04_masked_language_model.ipynb",
        "Masked language modelling",
        'why masking; the 15% / 80-10-10 procedure by hand on Wikipedia, in colour and in statistics; whole-word masking; the tied MLM head and its loss; honest measures (accuracy at the [MASK] positions beside baselines at the same positions); two live runs: plain BERT stuck on the plateau ("the" at every mask) and a run whose first heads are guided to the neighbours; the course checkpoint: its measures, fill-mask, where it is right, trained vs untrained attention on one scale; the plateau and its cure: neighbour heads in plain, guided, course and MiniLM models',
        1.5,
    ),
    Lesson(
        "05_next_sentence_prediction.ipynb",
        "Next sentence prediction",
        "why a sentence-level task; [CLS], the pooler and the NSP head by hand; pairs three ways (d2l's single sentences, Google's segments with negatives from another article, ALBERT's swapped segments) with their statistics; the NSP loss, why both labels must count (the ignore_index bug), the label conventions; what NSP learns: a TF-IDF topic rule and the course checkpoint on NSP and on sentence order, [CLS] attention across segments; NSP vs SOP trained live; the published evidence (BERT, RoBERTa, ALBERT)",
        2.0,
    ),
    Lesson(
        "06_fine_tuning.ipynb",
        "Fine-tuning",
        "what is pretrained, what is new, why a small learning rate; the classification head and one AdamW step by hand; baselines first (majority, bag of words); MiniLM fine-tuned live; the confusion matrix, negation and mixed reviews, which words matter (attention vs gradient x input vs occlusion); the fine-tuning loop written by hand and checked against the package's; a learning rate that is too high",
        3.0,
    ),
    Lesson(
        "07_tagging_pairs_and_spans.ipynb",
        "Tagging, pairs and spans",
        "the other three shapes of BERT's Figure 4, on tasks made from the Wikipedia articles: a label per word (`wiki-mentions`: BIO labels on each word's first piece, -100 elsewhere; the token head and its loss by hand; CoNLL span F1 beside an anchor lexicon and capitalised runs), a sentence pair (`wiki-qnli`: [CLS] question [SEP] sentence [SEP] and its segments, beside word overlap) and a span of a paragraph (`wiki-qa`: offsets, windows with a stride, the start/end head, span decoding and SQuAD's exact match and F1 by hand, beside the sliding-window and best-sentence baselines); MiniLM fine-tuned live on each, and its errors",
        3.0,
    ),
    Lesson(
        "08_what_pretraining_buys.ipynb",
        "What pretraining buys",
        "one question, what pretraining on 400,000 words bought: the course checkpoint against random weights of its size, each difference with its 95% paired interval; restoring capitalisation in its own domain, live and as a labelled-examples curve; on reviews, where it buys nothing measurable, and why it might (opinion words rare in its text: a hypothesis); continued pretraining on the review text live, fill-mask before and after; the same recipe on less of its text, and what each amount buys a Wikipedia task; MiniLM as its model card describes it, the reference point; runs that never left the trivial level marked",
        2.0,
    ),
    Lesson(
        "09_search.ipynb",
        "Search",
        "`wiki-search`: each question must find its paragraph among all 7,396; recall@k and MRR@10; BM25 by hand; [CLS] vs mean pooling, anisotropy per layer (the cone), whitening fitted on the passages; every untrained retriever on one table with paired intervals; bi-encoder vs cross-encoder, exact vs approximate search; the hybrid of BM25 and MiniLM; retrieve, re-rank, then read, and why a recall gain did not become an F1 gain; the questions each retriever misses",
        0.5,
    ),
    Lesson(
        "10_training_a_retriever.ipynb",
        "Training a retriever",
        "the course checkpoint trained to search, each run against its best untrained vector on one haystack: the in-batch softmax loss by hand (sentence-transformers' MultipleNegativesRankingLoss, and how DPR differs) and live; BM25 hard negatives mined and trained with live; the inverse cloze task and SimCSE with its dropout ablation live; distillation from MiniLM and the projection that keeps cosines, drawn; the whole haystack with three seeds a row",
        1.0,
    ),
    Lesson(
        "11_d2l_side_by_side.ipynb",
        "Appendix: d2l side by side",
        "the d2l book's BERT chapter, its own code, run beside minibert on our articles: its pairs (NSP labels flipped, negatives from any paragraph of the corpus), its masking and padding; its model on MiniLM's weights, equal to minibert once ReLU becomes GELU and the embeddings get their LayerNorm; its MLM loss counting padding (d2l issue 2582), live, and the fix; d2l's show_heatmaps and Animator on minibert",
        0.5,
    ),
    Lesson(
        "12_appendix_what_pretraining_buys.ipynb",
        "Appendix: what pretraining buys, the evidence",
        "lesson 8's evidence, read from the committed runs: the grid of domain (Wikipedia, reviews) crossed with task shape (a label per word, per text), every model against random weights of its size, fine-tuned, read from the mean and frozen, as plots; absolute scores beside the differences; every model against the rule built from the same labels, with paired intervals; runs at the trivial level marked; lesson 8's explanation of the reviews tested; what the evidence does not support; an aside on gradient accumulation that counts every labelled word once",
        1.0,
    ),
)


def course_map(folder: str = "notebooks/") -> str:
    """The course map as a Markdown table, each notebook linked under folder."""
    lines = [
        "| notebook | what it teaches | minutes to run (2-core CPU) |",
        "|---|---|---|",
    ]
    for lesson in LESSONS:
        minutes = f"{lesson.minutes:g}"
        link = f"[{lesson.number} {lesson.title}]({folder}{lesson.notebook})"
        lines.append(f"| {link} | {lesson.teaches} | {minutes} |")
    return "\n".join(lines)


def sizing_table(
    measured: dict,
    students: int = 60,
    window_s: float = 600,
    run_ahead_s: float = 20,
    server: tuple[int, int] = (16, 64),
    together: dict | None = None,
) -> str:
    """The teacher's guide's table for a shared server, from notebook_resources.json.

    Per lesson: a student's peak memory (the kernel and its children) and CPU seconds for the
    whole notebook; students per core when everyone runs it top to bottom within window_s;
    students per GB; what a class of `students` needs; how many students a server of
    server = (cores, GB) holds by both counts; the cells taking run_ahead_s or more, by their
    number in the stored notebook. together: class_at_once.json (several kernels of one lesson
    run at once); the cores are then counted with the thread setting that shared them best, each
    student's CPU seconds times that setting's measured slowdown over a fair share of the cores.
    """
    rows = measured["notebooks"]
    setting, factor = class_slowdown(together) if together else (None, 1.0)
    lines = [
        "| lesson | peak memory per student | CPU seconds per student | students per core "
        f"(everyone within {window_s / 60:g} minutes) | students per GB | a class of {students} "
        f"needs | students on {server[0]} cores and {server[1]} GB | cells to run ahead "
        f"([n], {run_ahead_s:g} s or more) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for lesson in LESSONS:
        row = rows.get(lesson.notebook)
        if row is None:
            continue
        cpu, mb = row["cpu_s"], row["peak_rss_mb"]
        cpu_shared = cpu * factor  # what a student's run costs the cores in a class at once
        cores = math.ceil(students * cpu_shared / window_s)
        memory = math.ceil(students * mb / 1024)
        fit = min(math.floor(server[0] * window_s / cpu_shared), math.floor(server[1] * 1024 / mb))
        slow = [f"[{i}] ({s:.0f} s)" for i, s in row["cells_s"].items() if s >= run_ahead_s]
        lines.append(
            f"| {lesson.number} {lesson.title} | {mb:,} MB | {cpu:.0f} | {window_s / cpu_shared:.1f} "
            f"| {1024 / mb:.1f} | {cores} core{'s' * (cores != 1)}, {memory} GB | {fit} "
            f"| {', '.join(slow) or 'none'} |"
        )
    machine = measured.get("machine", {})
    lines.append("")
    lines.append(
        f"Measured by `python benchmarks/notebook_resources.py` on {measured.get('date', '?')}: "
        f"{machine.get('processor', '?')}, {machine.get('cpus', '?')} CPUs, "
        f"{machine.get('memory_gb', '?')} GB, Python {machine.get('python', '?')}, "
        f"torch {machine.get('torch', '?')}; each notebook alone in a fresh kernel."
    )
    if together:
        kernels, shares = _most_kernels(together)
        listed = ", ".join(
            f"{THREAD_SETTINGS.get(name, name)} {share:.2f}x" for name, share in shares.items()
        )
        lines.append(
            f"A class at once, measured by `python benchmarks/class_at_once.py` on "
            f"{together.get('date', '?')}: lesson {together['notebook'][:2]} in {kernels} "
            f"kernels started together on {together.get('machine', {}).get('cpus', '?')} cores, "
            f"each kernel's wall time over its fair share of the cores: {listed}. The columns "
            f"on cores count {THREAD_SETTINGS.get(setting, setting)}, each student's CPU seconds "
            f"times {factor:.2f}."
        )
    return "\n".join(lines)


THREAD_SETTINGS = {  # benchmarks/class_at_once.py's settings, as the guide names them
    "default": "torch's default threads",
    "one": "one thread per kernel (OMP_NUM_THREADS=1)",
    "passive": "torch's default threads with OMP_WAIT_POLICY=PASSIVE",
}


def _most_kernels(together: dict) -> tuple[int, dict[str, float]]:
    """class_at_once.json's largest number of kernels, and each setting's slowdown over the fair
    share of the cores there."""
    kernels = max(run["kernels"] for runs in together["runs"].values() for run in runs)
    shares = {
        name: run["over_fair_share"]
        for name, runs in together["runs"].items()
        for run in runs
        if run["kernels"] == kernels and "over_fair_share" in run
    }
    return kernels, shares


def class_slowdown(together: dict) -> tuple[str, float]:
    """(setting, factor): of class_at_once.json's thread settings at its most kernels, the one
    whose slowest kernel came nearest its fair share of the cores, and that ratio (at least 1)."""
    shares = _most_kernels(together)[1]
    setting = min(shares, key=shares.get)
    return setting, max(1.0, shares[setting])
