"""Recipes: text in, a saved model folder out. The CLI, the notebooks and the benchmarks call these.

    from minibert.recipes import pretrain
    result = pretrain("runs/mini", steps=2000, preset="mini")   # corpus -> vocabulary -> examples
    result.history[-1]                                          #   -> model -> loop -> folder

``pretrain`` composes the package's pieces in order: read the corpus and split it into training
and held-out documents, train a WordPiece vocabulary (or load one), cut the documents into
NSP pairs and mask them (``pretraining``), build a ``BertForPreTraining`` (``model``), run the
loop (``training``) and save the folder (``checkpoint``): config.json, model.safetensors,
vocab.txt, tokenizer files and history.json, which ``from_pretrained`` and transformers load.

Nothing is written until every argument has been checked. The output folder is one
``outputs.OutputFolder``: one run writes to it at a time; a folder that already holds a model is
refused unless ``overwrite=True``, which replaces only the files a run of ours wrote (its
manifest); while training, the run's files (its vocabulary and resumable state) live in a hidden
``.run`` subfolder, and the model is put in place atomically when training has finished, so a
failed or interrupted run never changes the model already there.
"""

from __future__ import annotations

from minibert.recipes.distill_recipe import DistillOptions, DistillResult, distill
from minibert.recipes.finetune_recipe import (
    LARGE_MODEL_LR,
    MAX_EVALUATIONS,
    SMALL_MODEL_LR,
    FinetuneOptions,
    FinetuneResult,
    default_lr,
    finetune,
)
from minibert.recipes.outputs import RUN_FOLDER
from minibert.recipes.pretrain_recipe import (
    VOCAB_SIZE,
    PretrainOptions,
    PretrainResult,
    pretrain,
)
from minibert.recipes.shared import load_corpus, model_folder
from minibert.recipes.sweep_recipe import Sweep, Trial, choose_lr, sweep

__all__ = [
    "LARGE_MODEL_LR",
    "MAX_EVALUATIONS",
    "RUN_FOLDER",
    "SMALL_MODEL_LR",
    "VOCAB_SIZE",
    "DistillOptions",
    "DistillResult",
    "FinetuneOptions",
    "FinetuneResult",
    "PretrainOptions",
    "PretrainResult",
    "Sweep",
    "Trial",
    "choose_lr",
    "default_lr",
    "distill",
    "finetune",
    "load_corpus",
    "model_folder",
    "pretrain",
    "sweep",
]
