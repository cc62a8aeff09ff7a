"""The package at full speed: one call that measures minibert on a GPU against `transformers` and
against the card's physical limit (or, with --smoke, runs every part at toy sizes on the CPU).

What it measures, in this order (each part is timed against --budget; what does not fit is listed
as skipped, never guessed; --smoke runs every part, whatever the budget leaves):

1. The card: its name, the data sheet's dense peaks (bf16, TF32, FP32) and the rates measured here
   (an 8192^3 matrix product in bf16 and TF32).
2. Its own equivalences first: the bf16-autocast loss against fp32 after 50 pretraining steps on the
   course's Wikipedia batches (within BF16_TOLERANCE), and the compiled model against the eager one
   (forward and gradients, float32, within COMPILE_TOLERANCE).
3. Pretraining steps (MLM + NSP heads, AdamW) and inference (the encoder), minibert and
   transformers side by side on the same weights and batches, for BERT-base (110M) and the course's
   mini and tiny shapes at 128 and 512 tokens: fp32, TF32 and bf16 autocast; SDPA and explicit
   attention; eager and torch.compile. Tokens per second, peak memory, and model FLOPs utilisation
   (MFU): the model's FLOPs per token (flops_per_token, counted below) times tokens per second, over
   the data sheet's peak for the row's precision.
4. Levers: an all-ones attention mask dropped (which SDPA kernel runs, read from the profiler);
   fused vs for-each AdamW; the host's share of a pretraining step (collating a batch while the GPU
   waits); the padding a length-grouped batch would save.
5. Wall times: the course checkpoint's recipe (its card's command) and MiniLM's wiki-qa fine-tune
   (30 epochs), each run for --recipe-steps steps of its schedule and extrapolated from the measured
   seconds per step plus the measured set-up time (the JSON says which).

    python benchmarks/gpu_suite.py --out DIR            # on a GPU; writes DIR/gpu_suite.json
    python benchmarks/gpu_suite.py --smoke --out DIR    # every part at toy sizes, on the CPU
    python benchmarks/gpu_suite.py --plot benchmarks/results/gpu_suite.json   # the figure
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # a plain checkout on a lent machine: no install needed

from common import steps  # noqa: E402  (benchmarks/common, beside this file)

from minibert import assets  # noqa: E402
from minibert.config import BertConfig  # noqa: E402
from minibert.model import BertForPreTraining  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BF16_TOLERANCE = 0.02  # |mean loss of the last 10 of 50 steps, bf16 - fp32| / fp32's
SMOKE_RUN_SECONDS = 900  # a smoke run's command may take this long: a guard against a hang only
COMPILE_TOLERANCE = 1e-4  # max |compiled - eager| / max |eager|, logits and gradients, float32
MASKED_SHARE = 0.15  # labelled MLM positions per sequence, as BERT's recipe
COURSE_VOCAB = 8000  # the course checkpoint's WordPiece vocabulary
IMPLS = ("minibert", "transformers")

# dense (no sparsity) peaks in TFLOP/s from NVIDIA's data sheets: bf16 and TF32 tensor cores, FP32
PEAKS: dict[str, dict[str, float]] = {
    "H100 PCIe": {"bf16": 756.0, "tf32": 378.0, "fp32": 51.0},
    "H100 NVL": {"bf16": 835.5, "tf32": 417.5, "fp32": 60.0},
    "H100": {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9},  # SXM5 ("H100 80GB HBM3")
    "H200 NVL": {"bf16": 835.5, "tf32": 417.5, "fp32": 60.0},
    "H200": {"bf16": 989.4, "tf32": 494.7, "fp32": 66.9},  # SXM
    "A100": {"bf16": 312.0, "tf32": 156.0, "fp32": 19.5},
    "L40S": {"bf16": 362.05, "tf32": 183.0, "fp32": 91.6},
    "L4": {"bf16": 121.0, "tf32": 60.0, "fp32": 30.3},
    "A10": {"bf16": 125.0, "tf32": 62.5, "fp32": 31.2},
}


@dataclass(frozen=True)
class Shape:
    """A model size of the grid: BertConfig.preset name, vocabulary, and the rows it gets."""

    name: str
    preset: str
    vocab: int


@dataclass(frozen=True)
class Plan:
    """The sizes of one suite run: the full grid on a GPU, or toy sizes on a CPU (--smoke)."""

    shapes: tuple[Shape, ...]
    lengths: tuple[int, ...]
    batch_tokens: int  # tokens per batch: batch size = batch_tokens // length
    compile_shapes: tuple[str, ...]  # the shapes whose train step is also compiled
    compile_backend: str  # torch.compile's: inductor, or aot_eager (no code generation) to test
    compile_impls: tuple[str, ...]  # the implementations whose compiled rows are measured
    articles: int  # training articles whose pretraining examples feed the equivalence and host
    equivalence_preset: str  # the model of the bf16 equivalence (trained equivalence_steps)
    finetune_task: str
    equivalence_steps: int
    equivalence_batch: int  # sequences of 128 tokens per step of the bf16 equivalence
    compile_check_vocab: int  # the compile equivalence's tiny model: its vocabulary
    compile_check_batch: tuple[int, int]  # and its batch: sequences x tokens
    recipe_steps: int  # steps of each pretraining run (the schedule's whole length is the card's)
    recipe_extra: tuple[str, ...]  # arguments added to the card's command
    finetune_extra: tuple[str, ...]
    min_seconds: float  # time each row for at least this long


GPU_PLAN = Plan(
    shapes=(
        Shape("base", "base", 30522),
        Shape("mini", "mini", COURSE_VOCAB),
        Shape("tiny", "tiny", COURSE_VOCAB),
    ),
    lengths=(128, 512),
    batch_tokens=8192,
    compile_shapes=("base", "tiny"),
    compile_backend="inductor",
    compile_impls=("minibert", "transformers"),
    articles=30,
    equivalence_preset="mini",
    finetune_task="wiki-qa",
    equivalence_steps=50,
    equivalence_batch=32,
    compile_check_vocab=COURSE_VOCAB,
    compile_check_batch=(8, 64),
    recipe_steps=1000,
    recipe_extra=(),
    finetune_extra=("--epochs", "30", "--checkpoint-every", "200"),
    min_seconds=0.5,
)
SMOKE_PLAN = Plan(  # every part at toy size, the compiler without code generation: ~1 min on a CPU
    shapes=(Shape("tiny", "tiny", 1000),),
    lengths=(32,),
    batch_tokens=128,
    compile_shapes=("tiny",),
    compile_backend="aot_eager",
    compile_impls=("minibert",),
    articles=3,
    equivalence_preset="tiny",
    finetune_task="rotten-tomatoes",  # wiki-qa's evaluation alone takes 20 s on a CPU
    equivalence_steps=6,
    equivalence_batch=8,  # bf16 on a CPU without bf16 instructions is emulated: slow
    # the grid's own sizes: the compiled row compiles the same frames again, at the same sizes,
    # so torch.compile keeps them static (new sizes would make it trace them with symbolic ones)
    compile_check_vocab=1000,
    compile_check_batch=(4, 32),
    recipe_steps=1,
    recipe_extra=(
        "--vocab",
        str(assets.course_checkpoint().relative_to(ROOT)),
        "--text-fraction",
        "0.05",
        "--batch-size",
        "8",
    ),
    finetune_extra=(
        "--epochs",
        "1",
        "--train-examples",
        "32",
        "--steps",
        "2",
        "--eval-batches",
        "1",
    ),
    min_seconds=0.02,
)


# --- FLOPs -------------------------------------------------------------------------------------


def layer_flops(hidden: int, intermediate: int, seq: int) -> int:
    """Forward FLOPs per token of one encoder layer (multiply-adds count 2): Q, K, V and output
    projections 8H^2, feed-forward 4HI, scores and weighted values 4SH."""
    return 8 * hidden * hidden + 4 * hidden * intermediate + 4 * seq * hidden


def flops_per_token(config: BertConfig, seq: int, train: bool) -> float:
    """Model FLOPs per token: the encoder's matrix products, plus (train) the MLM head at the
    masked share of positions and the pooler + NSP per sequence, times 3 (forward + backward)."""
    H, V = config.hidden_size, config.vocab_size
    forward = config.num_layers * layer_flops(H, config.intermediate_size, seq)
    if not train:
        return float(forward)
    mlm = MASKED_SHARE * (2 * H * H + 2 * H * V)  # dense + tied decoder, at labelled positions
    nsp = (2 * H * H + 2 * H * 2) / seq  # pooler + classifier, once per sequence
    return 3.0 * (forward + mlm + nsp)


def peaks_for(name: str) -> dict[str, float] | None:
    """The data sheet's dense peaks (TFLOP/s) for a card's name, or None for a card not listed."""
    for key, peaks in PEAKS.items():  # most specific names first
        if key in name:
            return peaks
    return None


# --- timing ------------------------------------------------------------------------------------


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn: Callable[[], object], device: torch.device, min_seconds: float) -> float:
    """Median seconds per call over 3 blocks of calls, each block at least min_seconds / 3 long."""
    fn()  # warm-up (allocator, kernels' autotuning)
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    once = max(time.perf_counter() - start, 1e-6)
    calls = max(2, int(min_seconds / 3 / once))
    blocks = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        sync(device)
        blocks.append((time.perf_counter() - start) / calls)
    return statistics.median(blocks)


@contextlib.contextmanager
def precision_mode(precision: str, device: torch.device) -> Iterator[None]:
    """fp32 (no TF32), tf32 (float32 matrix products on TF32 tensor cores), or bf16 autocast."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
    try:
        with torch.autocast(device.type, torch.bfloat16, enabled=precision == "bf16"):
            yield
    finally:
        torch.set_float32_matmul_precision(before)


def peak_memory(device: torch.device) -> float | None:
    return torch.cuda.max_memory_allocated() / 2**30 if device.type == "cuda" else None


def reset_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


# --- models and batches ------------------------------------------------------------------------


def config_for(shape: Shape) -> BertConfig:
    """The shape's config: BERT's 512 positions and pretraining dropout (0.1)."""
    return BertConfig.preset(shape.preset, vocab_size=shape.vocab)


def model_pair(config: BertConfig, device: torch.device):
    """minibert's and transformers' BertForPreTraining with the same random weights, training mode."""
    import transformers

    torch.manual_seed(0)
    fields = {k: v for k, v in config.to_hf_config().items() if k != "model_type"}
    theirs = transformers.BertForPreTraining(
        transformers.BertConfig(**fields, attn_implementation="sdpa")
    )
    with tempfile.TemporaryDirectory() as folder:
        theirs.save_pretrained(folder)
        ours = BertForPreTraining.from_pretrained(folder)
    return ours.to(device).train(), theirs.to(device).train()


def random_batch(config: BertConfig, batch: int, seq: int, device: torch.device, seed: int = 0):
    """Full-length pairs of random ids: two segments, 15% of positions labelled, an NSP label, and
    the attention mask passed (all ones), as a padded loader passes it."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (batch, seq), generator=g)
    segments = (torch.arange(seq) >= seq // 2).long().expand(batch, seq).clone()
    labels = torch.full((batch, seq), -100)
    count = max(1, round(MASKED_SHARE * seq))
    for row in range(batch):
        where = torch.randperm(seq - 1, generator=g)[:count] + 1
        labels[row, where] = ids[row, where]
    nsp = torch.randint(0, 2, (batch,), generator=g)
    b = {
        "input_ids": ids,
        "token_type_ids": segments,
        "attention_mask": torch.ones_like(ids),
        "mlm_labels": labels,
        "next_sentence_label": nsp,
    }
    return {k: v.to(device) for k, v in b.items()}


def loss_of(impl: str, model, batch: dict, explicit: bool, sparse: bool = True) -> torch.Tensor:
    """The pretraining loss (MLM + NSP) of one implementation on a batch."""
    return steps.pretraining_loss(impl, model, batch, sparse_mlm=sparse, explicit=explicit)


def set_explicit(impl: str, model, explicit: bool) -> None:
    """transformers: eager (explicit) or sdpa attention; minibert chooses per call."""
    want = "eager" if explicit else "sdpa"
    if impl == "transformers" and model.config._attn_implementation != want:
        model.set_attn_implementation(want)


# --- the suite ---------------------------------------------------------------------------------


class Suite:
    """Parts run in order against a deadline; results go into one JSON, written after each part."""

    def __init__(self, plan: Plan, device: torch.device, out: Path, budget: float, smoke: bool):
        self.plan, self.device, self.out, self.smoke = plan, device, out, smoke
        self.deadline = time.perf_counter() + budget
        self._models: tuple = (None, None, None)  # (shape name, config, {impl: model})
        self.work = Path(tempfile.mkdtemp(prefix="gpu_suite_"))  # the runs' folders
        self.result: dict = {
            "smoke": smoke,
            "rows": [],
            "skipped": [],
            "errors": [],
            "settings": _settings(plan, budget),
        }

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def run_limit(self, most: float) -> float:
        """Seconds a command a part runs may take: what the budget leaves, at most `most`; a smoke
        run's is fixed (a guard against a hang, not a budget a busy machine can spend)."""
        return SMOKE_RUN_SECONDS if self.smoke else min(self.left() - 5, most)

    def part(self, name: str, fn: Callable[[], object], needs: float = 0.0) -> None:
        """Run one part unless under `needs` seconds are left; an error is recorded, not raised.

        A smoke run runs every part whatever is left: it checks that each part works, and a busy
        machine must not turn that check into a skip.
        """
        if not self.smoke and self.left() < needs:
            self.result["skipped"].append(f"{name}: {self.left():.0f} s left, needs ~{needs:.0f}")
            print(f"skipped {name}: out of budget", flush=True)
            return
        started = time.perf_counter()
        print(f"--- {name} ({self.left():.0f} s left)", flush=True)
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - one part's failure must not lose the others
            self.result["errors"].append(f"{name}: {type(exc).__name__}: {exc}"[:2000])
            traceback.print_exc()
        self.result.setdefault("part_seconds", {})[name] = round(time.perf_counter() - started, 1)
        self.write()

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "gpu_suite.json").write_text(json.dumps(self.result, indent=1) + "\n")

    # --- 1. the card --------------------------------------------------------------------------

    def machine(self) -> None:
        import transformers

        d = self.device
        name = torch.cuda.get_device_name() if d.type == "cuda" else platform.processor() or "cpu"
        info = {
            "device": name,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "peaks_tflops": peaks_for(name),
        }
        if d.type == "cuda":
            props = torch.cuda.get_device_properties(d)
            info |= {
                "cuda": torch.version.cuda,
                "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
                "memory_gib": round(props.total_memory / 2**30, 1),
                "cudnn": torch.backends.cudnn.version(),
            }
        n = 8192 if d.type == "cuda" else 256
        a, b = torch.randn(n, n, device=d), torch.randn(n, n, device=d)
        measured = {}
        for precision in ("bf16", "tf32"):
            with precision_mode(precision, d):
                seconds = timed(lambda: a @ b, d, self.plan.min_seconds)
            measured[precision] = round(2 * n**3 / seconds / 1e12, 1)
        info["measured_matmul_tflops"] = measured | {"n": n}
        self.result["machine"] = info
        print(json.dumps(info), flush=True)

    # --- 2. equivalences ----------------------------------------------------------------------

    def bf16_equivalence(self) -> None:
        """50 steps from the same weights on the same real batches, fp32 and bf16 autocast."""
        from minibert.tokenization import BertTokenizer

        tok = BertTokenizer.from_pretrained(assets.course_checkpoint())
        config = BertConfig.preset(
            self.plan.equivalence_preset,
            vocab_size=len(tok.vocab),
            max_position_embeddings=128,
            hidden_dropout=0.0,
            attention_dropout=0.0,
        )
        batches = course_batches(tok, self.plan, self.plan.equivalence_batch, self.device)
        losses = {}
        for precision in ("fp32", "bf16"):
            torch.manual_seed(0)
            model = BertForPreTraining(config).to(self.device).train()
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
            trace = []
            for batch in batches:
                with precision_mode(precision, self.device):
                    loss = model(**batch, sparse_mlm=True).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                trace.append(float(loss))
            losses[precision] = trace
        last = {p: statistics.mean(t[-10:]) for p, t in losses.items()}
        gap = abs(last["bf16"] - last["fp32"]) / last["fp32"]
        self.result["bf16_equivalence"] = {
            "model": f"{self.plan.equivalence_preset}, course vocabulary, dropout 0, "
            f"batch {self.plan.equivalence_batch}",
            "steps": len(batches),
            "mean_loss_last_10": last,
            "relative_gap": gap,
            "tolerance": BF16_TOLERANCE,
            "holds": gap <= BF16_TOLERANCE,
            "losses": losses,
        }
        print(f"bf16 vs fp32 after {len(batches)} steps: {last}, gap {gap:.4f}", flush=True)

    def compile_equivalence(self) -> None:
        """The compiled tiny model's logits and gradients against the eager model's (float32)."""
        vocab, (sequences, tokens) = self.plan.compile_check_vocab, self.plan.compile_check_batch
        words = "course vocabulary" if vocab == COURSE_VOCAB else f"{vocab:,} words"
        config = BertConfig.preset(
            "tiny", vocab_size=vocab, hidden_dropout=0.0, attention_dropout=0.0
        )
        torch.manual_seed(0)
        eager = BertForPreTraining(config).to(self.device).train()
        batch = random_batch(config, sequences, tokens, self.device, seed=1)
        started = time.perf_counter()
        compiled = torch.compile(eager, backend=self.plan.compile_backend)
        gaps = {}
        with precision_mode("fp32", self.device):
            outputs = []
            for model in (eager, compiled):
                model.zero_grad(set_to_none=True)
                out = model(**batch, sparse_mlm=True)
                out.loss.backward()
                grads = torch.cat([p.grad.flatten() for p in eager.parameters()])
                outputs.append((out.mlm_logits.detach(), grads))
        for i, name in enumerate(("logits", "gradients")):
            reference = outputs[0][i]
            gaps[name] = float((outputs[1][i] - reference).abs().max() / reference.abs().max())
        self.result["compile_equivalence"] = {
            "model": f"tiny, {words}, dropout 0, {sequences} x {tokens} tokens",
            "relative_gap": gaps,
            "tolerance": COMPILE_TOLERANCE,
            "holds": max(gaps.values()) <= COMPILE_TOLERANCE,
            "compile_and_first_step_seconds": round(time.perf_counter() - started, 1),
        }
        print(f"compiled vs eager: {gaps}", flush=True)

    # --- 3. the grid --------------------------------------------------------------------------

    def row(
        self,
        shape: Shape,
        seq: int,
        mode: str,
        precision: str,
        impls: tuple[str, ...] = IMPLS,
        attention: str = "sdpa",
        compiled: bool = False,
    ) -> None:
        """One cell of the grid for each implementation: the same weights, batch and settings."""
        config, models = self.models(shape)
        batch_size = max(1, self.plan.batch_tokens // seq)
        batch = random_batch(config, batch_size, seq, self.device)
        for impl in impls:
            self.result["rows"].append(
                self.measure(
                    shape, config, models[impl], impl, batch, mode, precision, attention, compiled
                )
            )
            print(_row_line(self.result["rows"][-1]), flush=True)
        reset_memory(self.device)

    def models(self, shape: Shape) -> tuple[BertConfig, dict]:
        """The shape's pair of models (the same weights), made once: a row trains them on."""
        if self._models[0] != shape.name:
            self._models = (shape.name, None, None)  # the last shape's pair goes first
            reset_memory(self.device)
            config = config_for(shape)
            pair = dict(zip(("minibert", "transformers"), model_pair(config, self.device)))
            self._models = (shape.name, config, pair)
        return self._models[1], self._models[2]

    def measure(self, shape, config, model, impl, batch, mode, precision, attention, compiled):
        """Tokens per second, peak memory and MFU of one implementation in one setting."""
        explicit = attention == "explicit"
        set_explicit(impl, model, explicit)
        net = torch.compile(model, backend=self.plan.compile_backend) if compiled else model
        fused = self.device.type == "cuda"
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused or None)
        seq = batch["input_ids"].shape[1]

        def train_step() -> None:
            with precision_mode(precision, self.device):
                loss = loss_of(impl, net, batch, explicit)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        def infer() -> None:  # the encoder alone, in evaluation mode (no dropout)
            kwargs = {"output_attentions": True} if impl == "minibert" and explicit else {}
            with torch.inference_mode(), precision_mode(precision, self.device):
                model.bert(
                    input_ids=batch["input_ids"],
                    token_type_ids=batch["token_type_ids"],
                    attention_mask=batch["attention_mask"],
                    **kwargs,
                )

        reset_memory(self.device)
        model.train(mode == "train")
        started = time.perf_counter()
        fn = train_step if mode == "train" else infer
        fn()  # the first call compiles
        sync(self.device)
        first = time.perf_counter() - started
        seconds = timed(fn, self.device, self.plan.min_seconds)
        model.train()
        tokens = batch["input_ids"].numel() / seconds
        flops = flops_per_token(config, seq, mode == "train")
        peaks = self.result.get("machine", {}).get("peaks_tflops") or {}
        achieved = flops * tokens / 1e12
        return {
            "shape": shape.name,
            "seq": seq,
            "batch": batch["input_ids"].shape[0],
            "mode": mode,
            "impl": impl,
            "precision": precision,
            "attention": attention,
            "compiled": compiled,
            "tokens_per_s": round(tokens, 1),
            "step_ms": round(seconds * 1e3, 3),
            "first_call_s": round(first, 2),
            "peak_memory_gib": peak_memory(self.device),
            "flops_per_token": flops,
            "achieved_tflops": round(achieved, 2),
            "mfu": round(achieved / peaks[precision], 4) if precision in peaks else None,
            "adamw": "fused" if fused else "for-each",
        }

    # --- 4. levers ----------------------------------------------------------------------------

    def mask_lever(self) -> None:
        """minibert with the all-ones mask passed and dropped: speed, and the kernels SDPA runs."""
        shape, seq = self.plan.shapes[0], self.plan.lengths[0]
        config, models = self.models(shape)
        batch = random_batch(config, max(1, self.plan.batch_tokens // seq), seq, self.device)
        model = models["minibert"]
        precision = "bf16"
        report = {}
        for label, b in (("mask passed", batch), ("no mask", _without(batch, "attention_mask"))):

            def step(b=b) -> None:
                with precision_mode(precision, self.device):
                    loss_of("minibert", model, b, explicit=False).backward()
                model.zero_grad(set_to_none=True)

            seconds = timed(step, self.device, self.plan.min_seconds)
            report[label] = {
                "forward_backward_ms": round(seconds * 1e3, 3),
                "attention_kernels": attention_kernels(step, self.device),
            }
        self.result["mask_lever"] = {
            "shape": shape.name,
            "seq": seq,
            "precision": precision,
            **report,
        }
        print(json.dumps(self.result["mask_lever"]), flush=True)

    def adamw_lever(self) -> None:
        """One AdamW update of BERT-base's (or the smoke shape's) parameters: fused vs for-each."""
        config = config_for(self.plan.shapes[0])
        model = BertForPreTraining(config).to(self.device)
        for p in model.parameters():
            p.grad = torch.randn_like(p) * 1e-3
        report = {}
        for name, kwargs in (("for-each", {"foreach": True}), ("fused", {"fused": True})):
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, **kwargs)
            report[name] = round(timed(optimizer.step, self.device, self.plan.min_seconds) * 1e3, 3)
        self.result["adamw_lever"] = {"shape": self.plan.shapes[0].name, "update_ms": report}
        print(json.dumps(self.result["adamw_lever"]), flush=True)

    def host_share(self) -> None:
        """The host's work per pretraining step of the course recipe (a batch drawn and collated,
        masking included) and the padding of random vs length-grouped batches."""
        from minibert import pretraining
        from minibert.tokenization import BertTokenizer

        tok = BertTokenizer.from_pretrained(assets.course_checkpoint())
        data = course_dataset(tok, self.plan.articles)
        rng = random.Random(0)
        order = list(range(len(data)))
        rng.shuffle(order)

        def collate_one() -> None:
            start = rng.randrange(0, len(order) - 32)
            pretraining.collate([data[i] for i in order[start : start + 32]], tok.pad_token_id)

        seconds = timed(collate_one, torch.device("cpu"), 1.0 if not self.smoke else 0.1)
        lengths = [len(data[i]["input_ids"]) for i in range(len(data))]
        self.result["host_share"] = {
            "collate_ms_per_batch_of_32": round(seconds * 1e3, 3),
            "padding_share_random_batches": padding_share(lengths, 32, grouped=False),
            "padding_share_length_grouped": padding_share(lengths, 32, grouped=True),
            "examples": len(lengths),
        }
        print(json.dumps(self.result["host_share"]), flush=True)

    # --- 5. wall times ------------------------------------------------------------------------

    def recipe(self, label: str, extra: tuple[str, ...]) -> None:
        """The course checkpoint's pretraining command (its card's: `--recipe english`, which needs
        the english corpus fetched), paused after recipe_steps steps of its 30,000-step schedule;
        extra arguments change it (a variant to compare)."""
        card = json.loads((assets.course_checkpoint() / "card.json").read_text())
        command = card["command"].split()[1:]  # after 'minibert'
        total = card["steps"]  # the schedule's length (a --recipe's command may not name it)
        folder = self.work / "recipe_run"
        stop = ("--stop-after", str(self.plan.recipe_steps), "--device", self.device.type)
        stop += () if "--overwrite" in command else ("--overwrite",)  # each variant starts afresh
        args = [*_replaced(command, "--out", str(folder)), *stop, *self.plan.recipe_extra, *extra]
        report = run_and_extrapolate(args, folder, total, self.run_limit(100))
        self.result.setdefault("recipe", {})[label] = report

    def recipe_estimate(self) -> None:
        """The whole recipe's time on this device: set-up, then the neighbour-guided steps at the
        card run's pace and the plain steps at the plain run's pace (both measured here)."""
        runs, card = self.result.get("recipe", {}), _card_recipe()
        guided, plain = runs.get("card"), runs.get("plain steps")
        if not (guided and plain and guided.get("ms_per_step") and plain.get("ms_per_step")):
            return
        neighbour, total = card["neighbour_steps"], card["steps"]
        seconds = (
            guided["setup_s"]
            + neighbour * guided["ms_per_step"] / 1e3
            + (total - neighbour) * plain["ms_per_step"] / 1e3
        )
        self.result["recipe_estimate_s"] = round(seconds, 1)
        print(f"the course recipe, estimated: {seconds / 60:.1f} minutes", flush=True)

    def finetune(self) -> None:
        """MiniLM's shape on wiki-qa (30 epochs on a GPU). Random weights of its size: the
        values do not change the time, and the weights file (91 MB) does not fit what travels
        to a lent machine; the smoke test uses the course checkpoint's shape (MiniLM's is slow
        on a CPU)."""
        folder = minilm_shape_folder(self.work / "minilm_shape")
        if self.smoke:
            folder = ROOT / "data" / "course_checkpoint"
        out = self.work / "finetune_run"
        args = [
            "finetune",
            "--task",
            self.plan.finetune_task,
            "--model",
            str(folder),
            "--scratch",
            "--seed",
            "0",
            "--device",
            self.device.type,
            "--out",
            str(out),
            "--overwrite",
            *self.plan.finetune_extra,
        ]
        self.result["finetune"] = run_and_extrapolate(args, out, None, self.run_limit(150))


def _card_recipe() -> dict:
    card = json.loads((assets.course_checkpoint() / "card.json").read_text())
    return card["recipe"]


# --- helpers -----------------------------------------------------------------------------------


def _settings(plan: Plan, budget: float) -> dict:
    return {
        "shapes": [vars(s) for s in plan.shapes],
        "lengths": list(plan.lengths),
        "batch_tokens": plan.batch_tokens,
        "masked_share": MASKED_SHARE,
        "dropout": 0.1,
        "optimizer": "AdamW (fused on CUDA), lr 1e-4",
        "batches": "random ids, full length, 2 segments, attention mask passed (all ones)",
        "model_flops": "flops_per_token: encoder matmuls + MLM head at the masked share + "
        "pooler/NSP, x3 for training; the same count for both implementations",
        "budget_s": budget,
        "bf16_tolerance": BF16_TOLERANCE,
        "compile_tolerance": COMPILE_TOLERANCE,
    }


def _row_line(r: dict) -> str:
    mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "-"
    return (
        f"{r['shape']:>5} {r['seq']:>4} {r['mode']:>5} {r['precision']:>4} {r['attention']:>8} "
        f"{'compiled' if r['compiled'] else 'eager':>8} {r['impl']:>12}: "
        f"{r['tokens_per_s']:>12,.0f} tok/s  MFU {mfu:>6}  {r['peak_memory_gib'] or 0:.1f} GiB"
    )


def _without(batch: dict, key: str) -> dict:
    return {k: v for k, v in batch.items() if k != key}


def _replaced(args: list[str], flag: str, value: str) -> list[str]:
    i = args.index(flag)
    return [*args[: i + 1], value, *args[i + 2 :]]


def attention_kernels(step: Callable[[], None], device: torch.device) -> list[str]:
    """The names of the attention kernels one call runs, read from the profiler."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        step()
        sync(device)
    words = ("flash", "fmha", "efficient", "attention", "softmax", "sdpa", "mha", "cudnn")
    names = {e.key for e in prof.key_averages() if any(w in e.key.lower() for w in words)}
    return sorted(names)[:12]


def padding_share(lengths: list[int], batch: int, grouped: bool) -> float:
    """Padding tokens / all tokens when batches are padded to their longest example."""
    order = sorted(lengths) if grouped else lengths
    padded = real = 0
    for i in range(0, len(order), batch):  # the last, partial batch too
        part = order[i : i + batch]
        padded += max(part) * len(part)
        real += sum(part)
    return round(1 - real / padded, 4) if padded else 0.0


def course_dataset(tok, articles: int):
    """The course recipe's pretraining examples from the first training articles (masked on read)."""
    from minibert import corpora, pretraining

    docs = pretraining.tokenize_documents(corpora.wikipedia_articles("train")[:articles], tok)
    examples = pretraining.create_examples(docs, 128)
    return pretraining.PretrainingDataset.from_tokenizer(examples, tok)


def course_batches(tok, plan: Plan, batch: int, device: torch.device) -> list[dict]:
    """equivalence_steps batches of the course recipe's real pretraining examples, on the device."""
    from minibert import pretraining

    count = plan.equivalence_steps
    data = course_dataset(tok, plan.articles)
    return [
        {
            k: v.to(device)
            for k, v in pretraining.collate(
                [data[i] for i in range(b * batch, (b + 1) * batch)], tok.pad_token_id
            ).items()
        }
        for b in range(count)
    ]


def minilm_shape_folder(folder: Path) -> Path:
    """MiniLM-L6-H384's config and vocabulary (carried; no weights) as a model folder."""
    source = ROOT / ".gpu" / "minilm"
    if not source.is_dir():
        from minibert import assets

        source = assets.path("minilm")
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (source / name).is_file():
            (folder / name).write_bytes((source / name).read_bytes())
    return folder


def run_and_extrapolate(args: list[str], folder: Path, total: int | None, limit: float) -> dict:
    """Run `minibert ARGS` writing into folder (emptied first); its wall time, its loop's seconds
    and steps (read from the run's saved state or history), and for a paused run the whole
    schedule's time extrapolated."""
    command = [sys.executable, "-m", "minibert", *args]
    shutil.rmtree(folder, ignore_errors=True)  # what is read below is this run's, or nothing
    started = time.perf_counter()
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = os.environ | {"PYTHONPATH": os.pathsep.join(paths)}
    try:
        proc = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=max(limit, 10)
        )
        code, tail = proc.returncode, (proc.stdout + proc.stderr)[-1500:]
    except subprocess.TimeoutExpired as exc:
        code, tail = "timeout", str(exc.stdout or "")[-800:]
    wall = time.perf_counter() - started
    steps, loop = _loop_progress(folder)
    report = {
        "command": "minibert " + " ".join(args),
        "exit": code,
        "wall_s": round(wall, 1),
        "steps_done": steps,
        "loop_s": loop,
    }
    if code != 0:
        report["output_tail"] = tail
    if steps and loop and total:
        setup = max(wall - loop, 0.0)
        report |= {
            "setup_s": round(setup, 1),
            "ms_per_step": round(1e3 * loop / steps, 2),
            "schedule_steps": total,
            "estimated_whole_s": round(setup + loop * total / steps, 1),
        }
    print(json.dumps({k: v for k, v in report.items() if k != "output_tail"}), flush=True)
    return report


def _loop_progress(folder: Path) -> tuple[int | None, float | None]:
    """(steps, training-loop seconds) of a paused run (.run/training_state.pt) or a finished one."""
    state = folder / ".run" / "training_state.pt"
    if state.is_file():
        saved = torch.load(state, map_location="cpu", weights_only=False)
        return int(saved["step"]), float(saved["seconds"])
    history = folder / "history.json"
    if history.is_file():
        records = json.loads(history.read_text())
        records = records.get("history", records) if isinstance(records, dict) else records
        timed_records = [r for r in records if "seconds" in r]
        if timed_records:
            return int(records[-1]["step"]), float(timed_records[-1]["seconds"])
    return None, None


# --- the figure --------------------------------------------------------------------------------


def plot(path: Path) -> Path:
    """Tokens per second and MFU of the train step at the first length, by shape and setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    result = json.loads(path.read_text())
    rows = [r for r in result["rows"] if r["mode"] == "train" and r["attention"] == "sdpa"]
    seq = min(r["seq"] for r in rows)
    rows = [r for r in rows if r["seq"] == seq]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    settings = list(dict.fromkeys((r["precision"], r["compiled"]) for r in rows))
    fig, axes = plt.subplots(1, len(shapes), figsize=(4.2 * len(shapes), 3.6), squeeze=False)
    for ax, shape in zip(axes[0], shapes):
        labels = []
        for i, (precision, compiled) in enumerate(settings):
            labels.append(precision + (" +compile" if compiled else ""))
            for j, impl in enumerate(("minibert", "transformers")):
                match = [
                    r
                    for r in rows
                    if (r["shape"], r["precision"], r["compiled"], r["impl"])
                    == (shape, precision, compiled, impl)
                ]
                if match:
                    r = match[0]
                    bar = ax.bar(
                        i + 0.4 * j - 0.2,
                        r["tokens_per_s"] / 1e3,
                        0.4,
                        color=("C0", "C7")[j],
                        label=impl if i == 0 else None,
                    )
                    if r["mfu"] is not None:
                        ax.bar_label(bar, [f"{r['mfu']:.0%}"], fontsize=7)
        ax.set_xticks(range(len(settings)), labels, rotation=30, fontsize=8)
        ax.set_title(f"{shape}, train step, {seq} tokens", fontsize=10)
        ax.set_ylabel("thousand tokens / s")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(
        f"{result['machine']['device']}: bars labelled with model FLOPs utilisation", fontsize=10
    )
    fig.tight_layout()
    png = path.with_suffix(".png")
    fig.savefig(png, dpi=110)
    return png


# --- main --------------------------------------------------------------------------------------


def run_suite(suite: Suite) -> None:
    """Every part, most important first, each against the budget."""
    plan, lengths, shapes = suite.plan, suite.plan.lengths, suite.plan.shapes
    first = shapes[0]
    suite.part("machine", suite.machine)
    suite.part("bf16 equivalence", suite.bf16_equivalence, needs=20)
    suite.part("compile equivalence", suite.compile_equivalence, needs=40)
    for compiled in (False, True):  # the targets: base, bf16, 128 tokens, eager and compiled
        suite.part(
            f"{first.name} train bf16 compiled={compiled}",
            lambda c=compiled: suite.row(
                first, lengths[0], "train", "bf16", plan.compile_impls if c else IMPLS, compiled=c
            ),
            needs=60 if compiled else 10,
        )
    suite.part("recipe (card)", lambda: suite.recipe("card", ()), needs=60)
    suite.part(
        "recipe (plain steps)",
        lambda: suite.recipe("plain steps", ("--neighbour-steps", "0")),
        needs=40,
    )
    suite.part("recipe estimate", suite.recipe_estimate)
    suite.part("finetune", suite.finetune, needs=60)
    for shape in shapes:  # shape by shape: each pair of models is made once
        for seq in lengths:
            for mode in ("train", "infer"):
                for precision in ("bf16", "tf32", "fp32"):
                    if (shape, seq, mode, precision) == (first, lengths[0], "train", "bf16"):
                        continue
                    suite.part(
                        f"{shape.name} {seq} {mode} {precision}",
                        lambda a=(shape, seq, mode, precision): suite.row(*a),
                        needs=8,
                    )
        suite.part(
            f"{shape.name} explicit attention",
            lambda s=shape: [
                suite.row(s, lengths[0], m, "bf16", attention="explicit")
                for m in ("train", "infer")
            ],
            needs=10,
        )
        if shape == first:
            suite.part("mask lever", suite.mask_lever, needs=10)
            suite.part("adamw lever", suite.adamw_lever, needs=10)
        elif shape.name in plan.compile_shapes:
            suite.part(
                f"{shape.name} train bf16 compiled",
                lambda s=shape: suite.row(
                    s, lengths[0], "train", "bf16", plan.compile_impls, compiled=True
                ),
                needs=60,
            )
    suite.part("host share", suite.host_share, needs=10)
    # the recipe's plain steps with bf16 and (on a GPU) compiled: compiling is slow on a CPU
    levers = ("--precision", "bf16") + (() if suite.smoke else ("--compile",))
    suite.part(
        "recipe (plain steps, levers)",
        lambda: suite.recipe(
            "plain steps, " + " ".join(levers), ("--neighbour-steps", "0", *levers)
        ),
        needs=60,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for gpu_suite.json")
    parser.add_argument("--smoke", action="store_true", help="toy sizes on the CPU (a test)")
    parser.add_argument(
        "--budget",
        type=float,
        default=450.0,
        help="seconds for the whole suite; parts that do not fit are skipped",
    )
    parser.add_argument("--plot", type=Path, help="draw the figure of a results JSON and stop")
    args = parser.parse_args(argv)
    if args.plot:
        print(f"figure: {plot(args.plot)}")
        return 0
    cuda = torch.cuda.is_available() and not args.smoke
    if not cuda and not args.smoke:
        parser.error("no CUDA GPU here: run with --smoke (toy sizes on the CPU) or on a GPU")
    device = torch.device("cuda" if cuda else "cpu")
    suite = Suite(SMOKE_PLAN if args.smoke else GPU_PLAN, device, args.out, args.budget, args.smoke)
    started = time.perf_counter()
    run_suite(suite)
    suite.result["wall_s"] = round(time.perf_counter() - started, 1)
    suite.write()
    print(
        f"done in {suite.result['wall_s']} s; {len(suite.result['rows'])} rows, "
        f"{len(suite.result['skipped'])} parts skipped, {len(suite.result['errors'])} errors"
    )
    return 1 if suite.result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
