"""Tiny pretraining runs for tests/test_distributed.py:

    python tests/ddp_run.py OUT [options] [--then OUT [options] ...]

Run as is (one process) or under torchrun (several): the global batch, the data and the seed are
the same, so the weights and history each run saves to its OUT (from process 0) must be the same
too. Runs joined by --then go one after another in the same processes: each starts from the seed
with a new model and new datasets, so it is the run a process of its own would make (one start of
Python, torch and the process group for them all).
"""

import argparse
import functools
import json
import sys

import torch
from conftest import SYNTHETIC_VOCAB as VOCAB
from conftest import make_tiny_config, synthetic_documents

from minibert import distributed, set_seed
from minibert import pretraining as P
from minibert.model import BertForPreTraining
from minibert.training import train

parser = argparse.ArgumentParser()
parser.add_argument("out")
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--grad-accum-steps", type=int, default=1)
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--stop-after", type=int, default=None)
parser.add_argument("--run-dir", default=None)
parser.add_argument("--resume", action="store_true")


def run(args: argparse.Namespace) -> None:
    examples = P.create_examples(synthetic_documents(), max_len=32, seed=0)
    data = P.PretrainingDataset(examples[:96], 2, 3, 4, list(range(5, VOCAB)), seed=0)
    held_out = P.PretrainingDataset(examples[96:128], 2, 3, 4, list(range(5, VOCAB)), seed=0)
    set_seed(0)
    model = BertForPreTraining(
        make_tiny_config(vocab_size=VOCAB, hidden_dropout=0.0, attention_dropout=0.0)
    )
    history = train(
        model, data, held_out, steps=args.steps, batch_size=args.batch_size,
        grad_accum_steps=args.grad_accum_steps, lr=3e-3, warmup_steps=1, eval_every=2, threads=1,
        collate_fn=P.collate, metrics_fn=functools.partial(P.pretraining_metrics, mask_token_id=4),
        out_dir=args.run_dir, resume=args.resume, stop_after=args.stop_after, progress=False,
    )  # fmt: skip
    if distributed.is_main():
        weights = torch.cat([p.detach().flatten() for p in model.parameters()])
        world = distributed.world()[1]
        torch.save({"history": history, "weights": weights, "world": world}, args.out)
        json.dump({"processes": world}, sys.stdout)


def runs(argv: list[str]) -> list[argparse.Namespace]:
    """Each run's arguments: argv split at --then."""
    segments, current = [], []
    for arg in argv:
        if arg == "--then":
            segments.append(current)
            current = []
        else:
            current.append(arg)
    return [parser.parse_args(segment) for segment in [*segments, current]]


if __name__ == "__main__":
    for each in runs(sys.argv[1:]):  # every run's arguments checked before the first starts
        run(each)
