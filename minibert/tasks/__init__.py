"""The fine-tuning tasks as data: each task owns its data, input shape, model, measures, baselines
and use.

    task = tasks.get("rotten-tomatoes")            # an unknown name is an error naming the known ones
    train, dev, test = task.datasets(tok, max_length=128, train_examples=1024, seed=0)
    net = task.model_class.from_pretrained(folder, num_labels=len(task.labels), label_names=task.labels)
    task.selection.of(history[-1])                 # the dev measure that keeps the best evaluation
    task.scores(labels, predictions)               # the final scores, by the task's own names
    task.baseline_scores((train, dev, test), tok)  # its baselines, scored at the same positions
    tasks.of_folder("runs/rt")                     # the task a fine-tuned folder was trained on

What a task declares (``registry.Task``): its labels, its shape ("text": a label per text, or per
text pair; "words": a label per word; "span": a span of a context; "choice": one of several
choices; "vector": one vector per text, wiki-search's, searched by ``minibert search``), whose ``shapes.Shape`` brings the model class, head size, collate, predictions, result
line and command, its training measures (``metrics``,
summed by the loop), the dev measure that picks the best evaluation (``selection``, with its
direction: not accuracy, which a model answering the majority label everywhere can win on an
imbalanced dev set), the final scores (``scores``), the unit they count and its baselines.
``minibert finetune --task`` offers the registered names; ``recipes.finetune``, the commands
(``minibert classify``, ``minibert tag``) and the fine-tuning benchmark read everything else from
here. A new task is one module here: a function that returns its three datasets and one
``register(Task(...))`` call (``reviews.py``, ``capitalisation.py``, ``qa.py``, ``qnli.py``,
``wiki_rerank.py``),
imported below; a new input shape is one ``register_shape`` in its task module (``qa.py``'s span
of a context, ``swag.py``'s multiple choice) and, in ``model.py``, its head (the vector shape
has none: ``wiki_search.py``'s model is ``retrieval.bi_encoder.BiEncoder``).
"""

from __future__ import annotations

from minibert.tasks import (  # noqa: E402, F401  (each registers its tasks)
    capitalisation,
    mentions,
    qa,
    qnli,
    reviews,
    swag,
    wiki_rerank,
    wiki_search,
    wiki_selfsup,
)
from minibert.tasks.registry import (
    SHAPES,
    TASKS,
    TRIVIAL_MARGIN,
    Baseline,
    Selection,
    Shape,
    Task,
    check_name,
    get,
    label_scores,
    of_folder,
    register,
    register_shape,
    subset,
)

__all__ = [  # the registry's names (its Loader type alias aside)
    "SHAPES",
    "TASKS",
    "TRIVIAL_MARGIN",
    "Baseline",
    "Selection",
    "Shape",
    "Task",
    "check_name",
    "get",
    "label_scores",
    "of_folder",
    "register",
    "register_shape",
    "subset",
]
