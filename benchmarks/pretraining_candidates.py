"""What pretraining buys on reviews: the candidate starting points and their [MASK] top-1 on reviews.

    python benchmarks/pretraining_candidates.py --candidate self=runs/self --models course course-reviews self

The candidates for the course's small model, each made by `minibert pretrain` (1 thread, 2-core
CPU, about 20 minutes each), fine-tuned and compared by benchmarks/finetuning_shapes.py (seed 0
chooses each row's learning rate on dev, seeds 1 and 2 are reported; `--models self` there runs
the uncommitted one from runs/self):

- scratch: random weights of the course checkpoint's size and vocabulary;
- course: the course checkpoint (Wikipedia, MLM + NSP);
- course-reviews (committed, data/course_reviews): the course checkpoint continued on the review
  text of the training movies, MLM only (task-adaptive pretraining, Gururangan et al. 2020):
  `minibert pretrain --init course --corpus reviews --objective none --steps 6000 --lr 1e-3
  --dropout 0 --threads 1 --eval-every 500 --out runs/adapted`;
- self: the same architecture pretrained on the review text only, with a vocabulary trained on
  it (self-pretraining, Krishna et al. 2023): `minibert pretrain --preset tiny --corpus reviews
  --objective none --vocab-size 8000 --steps 6000 --neighbour-steps 1000 --lr 2e-3
  --warmup-steps 500 --dropout 0 --threads 1 --eval-every 500 --out runs/self` (not committed:
  1,622 s on one thread of this CPU beside another run; [MASK] top-1 21.6% here, 21.3% before).

This script measures [MASK] top-1 on the held-out movies' review text (training movies only, held
out by title) beside an n-gram table fitted on the rest of it and the most frequent token, at the
same positions (each model with its own vocabulary). Writes (and adds to)
benchmarks/results/pretraining_candidates.json.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

import torch
from common.measures import mlm_on_reviews

RESULTS = Path(__file__).resolve().parent / "results" / "pretraining_candidates.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidate", action="append", default=[], help="NAME=FOLDER to add")
    parser.add_argument("--models", nargs="+", required=True, help="course, course-reviews, ...")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    folders = {"course": "course", "course-reviews": "course-reviews"}
    folders |= dict(spec.partition("=")[::2] for spec in args.candidate)
    if unknown := set(args.models) - set(folders):
        parser.error(f"unknown model(s) {sorted(unknown)}: add them with --candidate NAME=FOLDER")
    results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    results["machine"] = (
        f"{platform.machine()}, {args.threads} thread(s), torch {torch.__version__}"
    )
    mlm = results.setdefault("mlm_heldout_reviews", {})
    for name in args.models:
        mlm[name] = mlm_on_reviews(folders[name])
        print(name, json.dumps(mlm[name]), flush=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
