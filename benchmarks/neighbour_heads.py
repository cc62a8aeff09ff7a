"""Is learning "look at your neighbours" what holds the course checkpoint back? A controlled test.

Two tiny BERTs (2 layers, 128 hidden, 2 heads), the same initial weights, data, batches and recipe
as `minibert pretrain` (MLM + NSP on the Wikipedia training articles, the course vocabulary,
dropout 0, AdamW lr 3e-3 with warm-up and linear decay). One is plain BERT. In the other, layer
0's two heads get a fixed bonus on their attention scores: +8 for the previous token (head 0) and
for the next token (head 1), so they start as the positional heads that pretrained BERTs have
(Clark et al., 2019) and the plain model never learns within our CPU budget. Everything else is
learned. Held-out MLM accuracy on the first 512 held-out examples, every --eval-every steps.
The n-gram table of the model card (22.2%) is the bar to pass.

    python benchmarks/neighbour_heads.py            # about 6 minutes on 2 cores
"""

from __future__ import annotations

import argparse
import copy
import json
from pathlib import Path

import torch

from minibert import corpora, pretraining, set_seed
from minibert.attention import MultiHeadSelfAttention
from minibert.config import BertConfig
from minibert.model import BertForPreTraining
from minibert.tokenization import BertTokenizer
from minibert.training import evaluate, linear_schedule, make_optimizer

CHECKPOINT = Path(__file__).resolve().parent.parent / "data" / "course_checkpoint"
RESULTS = Path(__file__).resolve().parent / "results" / "neighbour_heads.json"


class NeighbourBiasedAttention(MultiHeadSelfAttention):
    """Self-attention whose head 0 prefers the previous token and head 1 the next (fixed bonus).

    The bonus is added to the additive mask the model hands the layer; the rest is the package's.
    """

    bonus = 8.0

    def forward(self, x, mask=None, output_attentions=False):
        seq = x.shape[1]
        i = torch.arange(seq)
        bias = torch.zeros(1, self.num_heads, seq, seq, dtype=x.dtype)  # (1, heads, query, key)
        bias[0, 0, i[1:], i[:-1]] = self.bonus  # head 0: the previous token
        bias[0, 1, i[:-1], i[1:]] = self.bonus  # head 1: the next token
        mask = bias if mask is None else bias + mask  # (batch, heads, seq, seq)
        return super().forward(x, mask, output_attentions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="optimizer steps per model")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between evaluations")
    args = parser.parse_args()

    set_seed(0)
    tok = BertTokenizer.from_pretrained(CHECKPOINT)
    docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train"), tok)
    data = pretraining.PretrainingDataset.from_tokenizer(
        pretraining.create_examples(docs, 128, dupe_factor=5, seed=0), tok, seed=0
    )
    heldout = pretraining.heldout_dataset(corpora.wikipedia_articles("heldout"), tok, seed=1)
    heldout = torch.utils.data.Subset(heldout, range(512))
    collate = lambda batch: pretraining.collate(batch, tok.pad_token_id)  # noqa: E731
    config = BertConfig.preset(
        "tiny", vocab_size=len(tok.vocab), hidden_dropout=0.0, attention_dropout=0.0
    )
    plain = BertForPreTraining(config)
    biased = copy.deepcopy(plain)  # the same initial weights
    layer0 = biased.bert.encoder.layers[0]
    attention = NeighbourBiasedAttention(config.hidden_size, config.num_heads)
    attention.load_state_dict(layer0.attention.state_dict())  # same weights, biased scores
    layer0.attention = attention
    models = {"plain BERT": plain, "layer-0 heads fixed on the neighbours": biased}
    optimizers = {name: make_optimizer(m, 3e-3) for name, m in models.items()}
    schedules = {
        name: torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: linear_schedule(s, args.steps // 10, args.steps)
        )
        for name, opt in optimizers.items()
    }
    results: dict[str, list[dict]] = {name: [] for name in models}
    order = torch.randperm(len(data), generator=torch.Generator().manual_seed(0)).tolist()
    for step in range(1, args.steps + 1):
        start = (step - 1) * 32 % (len(order) - 32)
        batch = collate([data[i] for i in order[start : start + 32]])
        for name, model in models.items():  # the same batch for both, one after the other
            model.train()
            model(**batch, sparse_mlm=True).loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizers[name].step()
            optimizers[name].zero_grad(set_to_none=True)
            schedules[name].step()
        if step % args.eval_every == 0 or step == args.steps:
            for name, model in models.items():
                metrics = evaluate(
                    model, heldout, 64, collate, metrics_fn=pretraining.pretraining_metrics
                )
                results[name].append({"step": step, **metrics})
                print(
                    f"step {step:>5}  {name:>38}: held-out MLM accuracy "
                    f"{metrics['mlm_accuracy']:.1%}, MLM loss {metrics['mlm_loss']:.2f}",
                    flush=True,
                )
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
