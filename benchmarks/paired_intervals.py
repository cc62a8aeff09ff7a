"""Each pretrained model against random weights on the same test items: the paired difference, its
95% bootstrap interval and a sign-flip p-value, from the test predictions the benchmarks stored.

    python benchmarks/paired_intervals.py      # seconds; reads benchmarks/results/finetuning.json

The fine-tuning benchmark (benchmarks/finetuning.py) keeps every all-data run's test predictions
on Rotten Tomatoes' 1,272 test snippets, one run per seed. For each row, per-item correctness
(seeds, items) is compared with the scratch row's: the test snippets are resampled (2,000 times)
with both rows scored on each resample and the three seeds averaged within it, so the interval says
how much of the gap the choice of test snippets alone could make (not how much a fourth seed
would move it). The p-value flips the sign of each snippet's seed-averaged difference at random
(10,000 times). Written to benchmarks/results/paired_intervals.json and printed.
"""

from __future__ import annotations

import json
from pathlib import Path

from minibert import corpora, finetuning

RESULTS = Path(__file__).resolve().parent / "results"


def correctness(runs: list[dict], labels: list[int]) -> list[list[int]]:
    """(seeds, items): 1 where a run's stored test prediction is the label."""
    return [[int(p == str(y)) for p, y in zip(run["test_predictions"], labels)] for run in runs]


def main() -> None:
    table = json.loads((RESULTS / "finetuning.json").read_text())
    labels = [r.label for r in corpora.rotten_tomatoes("test")]
    rows = table["fine_tuned"]
    base = correctness(rows["scratch"]["runs"], labels)
    out: dict = {
        "what": "Rotten Tomatoes test accuracy, all 10,233 training snippets, 3 seeds: each row "
        "minus random weights (scratch), paired on the 1,272 test snippets",
        "rows": {},
    }
    print(f"{'row minus scratch':<18}{'difference':>11}{'95% interval':>20}{'p':>8}")
    for name, row in rows.items():
        if name == "scratch":
            continue
        runs = correctness(row["runs"], labels)
        if len(runs) != len(base) or any(len(r) != len(labels) for r in runs):
            print(f"{name:<18} skipped: {len(runs)} runs with predictions, scratch has {len(base)}")
            continue
        diff, low, high = finetuning.paired_bootstrap(base, runs)
        p = finetuning.paired_sign_flip_test(base, runs)
        out["rows"][name] = {"difference": diff, "low": low, "high": high, "p": p}
        shown = f"{p:.3f}" if p >= 0.001 else "<0.001"  # the smallest it can give: 1 / 10,001
        print(f"{name:<18}{diff:>+11.1%}   [{low:>+6.1%}, {high:>+6.1%}]{shown:>8}")
    (RESULTS / "paired_intervals.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
