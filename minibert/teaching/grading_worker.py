"""The program that runs a submission for the grader: inside the sandbox, or in a child process.

It imports the student's file and answers the grader's requests, one frame at a time, on the
standard input and output it was started with: get a name from the student's module, call a
function, an object or a method, lend an object one of the grader's helpers, make one of the
objects a check hands to the student's code (``MADE``: the fine-tuning loop's model and measure). It computes no
score: it sends back what the student's code returned, and the grader, outside, compares that
with the reference. Whatever the student's code does to this process, it can at worst send wrong
or malformed frames, which the grader counts as that submission's failure.

This file imports only the standard library, numpy, torch and safetensors, never minibert: the
sandbox does not hold minibert. The grader (``minibert.teaching.assignments``) imports it too,
for the wire format, and so does the fine-tuning exercise (``exercises.classifier``), for the
objects in ``MADE``: it sits beside both packages, in neither, so that the exercises never
import the grader that imports them. In the sandbox, it is bound at /grader/worker.py.

A frame is an 8-byte header (the lengths of the JSON text and of the tensors, big-endian), the
JSON text (UTF-8) and the tensors as safetensors bytes. In the JSON, a value is None, a bool, an
int, a float or a str as itself, or one of {"tuple": [...]}, {"list": [...]}, {"dict": {...}},
{"tensor": key}, {"ndarray": key}, {"fields": {...}} (a dataclass, a namespace inside),
{"rng": state} (a numpy Generator), {"random": state} (a random.Random, as getstate gives it)
or {"handle": n, "type": ..., "name": ...} (an object that stays in the worker: a function, a
class, a module instance).
"""

from __future__ import annotations

import dataclasses
import importlib.abc
import importlib.util
import json
import os
import random
import shutil
import site
import struct
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # the worker's process, run with -I: the grader's package folders
    for _folder in sys.argv[2:]:  # (a user's site among them) before torch is imported
        site.addsitedir(_folder)

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors.torch import load as load_tensors  # noqa: E402
from safetensors.torch import save as save_tensors  # noqa: E402

HEADER = struct.Struct(">II")  # the lengths of the JSON text and of the tensors that follow
MAX_TEXT = 64 * 2**20  # the longest JSON text a frame may carry
MAX_TENSORS = 1024 * 2**20  # the most tensor bytes (MiniLM's weights are about 90 MB)
MAX_DEPTH = 32  # how deeply values may nest
PLAIN = {type(None), bool, int, float, str}  # sent as themselves
FILE_BYTES = 64 * 2**20  # the largest file the student's code may write
FORBIDDEN = ("minibert", "transformers", "d2l")  # hold reference code; never importable here
SAFE_DTYPES = {
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int16,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
}


# --- the wire format ---------------------------------------------------------------------------


class Packer:
    """Values -> JSON trees, the tensors set aside; objects it cannot send kept as handles."""

    def __init__(self, keep: Callable[[Any], dict] | None = None):
        self.tensors: dict[str, torch.Tensor] = {}
        self.keep = keep  # an object -> its {"handle": ...} tree (the worker keeps the object)

    def tensor(self, value: torch.Tensor) -> str:
        key = str(len(self.tensors))
        self.tensors[key] = value.detach().cpu().contiguous().clone()  # no shared storage
        return key

    def pack(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError(f"values nest deeper than {MAX_DEPTH} levels")
        if type(value) in PLAIN:
            return value
        if type(value) in (tuple, list):
            if set(map(type, value)) <= PLAIN:  # numbers or text only: as they are, at C speed
                return {type(value).__name__: list(value)}
            return {type(value).__name__: [self.pack(v, depth + 1) for v in value]}
        if isinstance(value, dict) and all(type(k) is str for k in value):
            return {"dict": {k: self.pack(v, depth + 1) for k, v in value.items()}}
        if (
            isinstance(value, torch.Tensor)
            and value.dtype in SAFE_DTYPES
            and value.layout == torch.strided
        ):
            return {"tensor": self.tensor(value)}
        if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            return {"ndarray": self.tensor(torch.from_numpy(np.ascontiguousarray(value)))}
        if isinstance(value, (np.bool_, np.integer, np.floating)):
            return value.item()
        if isinstance(value, np.random.Generator) and isinstance(
            value.bit_generator, np.random.PCG64
        ):
            return {"rng": value.bit_generator.state}
        if type(value) is random.Random:  # Python's generator: its state, as getstate gives it
            version, state, gauss = value.getstate()
            return {"random": {"version": version, "state": list(state), "gauss": gauss}}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {"fields": self.pack(fields, depth + 1)["dict"]}
        if self.keep is None:
            raise TypeError(f"cannot send a {type(value).__name__}")
        return self.keep(value)


def unpack(
    tree: Any, tensors: dict[str, torch.Tensor], resolve: Callable[[dict], Any], depth: int = 0
) -> Any:
    """A JSON tree -> the value; resolve turns a {"handle": ...} tree into an object.

    Raises ValueError for anything this format does not define (an unknown tag, an extra key, a
    missing tensor): a frame that says more or other than values is malformed.
    """
    if depth > MAX_DEPTH:
        raise ValueError(f"values nest deeper than {MAX_DEPTH} levels")
    if type(tree) in PLAIN:
        return tree
    if type(tree) is dict and set(tree) == {"handle", "type", "name"}:
        if type(tree["handle"]) is not int:
            raise ValueError("not a handle")
        return resolve(tree)
    if type(tree) is not dict or len(tree) != 1:
        raise ValueError(f"not a value: {type(tree).__name__}")
    (tag, body), deeper = next(iter(tree.items())), depth + 1
    if tag in ("tuple", "list") and type(body) is list:
        plain = set(map(type, body)) <= PLAIN
        items = body if plain else [unpack(v, tensors, resolve, deeper) for v in body]
        return tuple(items) if tag == "tuple" else items
    if tag in ("dict", "fields") and type(body) is dict:
        items = {str(k): unpack(v, tensors, resolve, deeper) for k, v in body.items()}
        return items if tag == "dict" else types.SimpleNamespace(**items)
    if tag in ("tensor", "ndarray") and type(body) is str and body in tensors:
        return tensors[body] if tag == "tensor" else tensors[body].numpy()
    if tag == "rng" and type(body) is dict and body.get("bit_generator") == "PCG64":
        rng = np.random.Generator(np.random.PCG64())
        rng.bit_generator.state = body
        return rng
    if tag == "random" and type(body) is dict and set(body) == {"version", "state", "gauss"}:
        rng = random.Random()
        try:  # setstate checks the version and the state's length and values
            rng.setstate((body["version"], tuple(body["state"]), body["gauss"]))
        except (TypeError, ValueError, OverflowError):
            raise ValueError("not a random state") from None
        return rng
    raise ValueError(f"not a value: {tag!r}")


def encode(message: dict, tensors: dict[str, torch.Tensor]) -> bytes:
    """One frame: header, JSON text, tensors."""
    text = json.dumps(message).encode("utf-8")
    blob = save_tensors(tensors) if tensors else b""
    return HEADER.pack(len(text), len(blob)) + text + blob


def decode_body(text: bytes, blob: bytes) -> tuple[dict, dict[str, torch.Tensor]]:
    """The message and tensors of a frame's body; ValueError if they are not well formed."""
    try:
        message = json.loads(text.decode("utf-8"))
        tensors = load_tensors(blob) if blob else {}
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:  # JSON and int-size errors
        raise ValueError(f"not a frame ({type(exc).__name__})") from None
    except Exception as exc:  # safetensors' own error types for damaged bytes
        raise ValueError(f"damaged tensors ({type(exc).__name__})") from None
    if type(message) is not dict:
        raise ValueError("a frame's text must be a JSON object")
    return message, tensors


def _read_exactly(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 2**20))
        if not chunk:
            raise EOFError("the grader closed the channel")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int) -> tuple[dict, dict[str, torch.Tensor]]:
    """Read one frame (blocking)."""
    text_size, blob_size = HEADER.unpack(_read_exactly(fd, HEADER.size))
    return decode_body(_read_exactly(fd, text_size), _read_exactly(fd, blob_size))


def send(fd: int, frame: bytes) -> None:
    """Write one frame (blocking)."""
    view = memoryview(frame)
    while view:
        view = view[os.write(fd, view) :]


# --- the worker --------------------------------------------------------------------------------


def stopped(exc: BaseException) -> str:
    """A submission's way of ending its own run, in words (sys.exit, an interrupt, ...)."""
    if isinstance(exc, SystemExit):
        return f"stopped: it called sys.exit({exc.code!r})"
    return f"stopped: it raised {type(exc).__name__}"


def _words(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except Exception:  # a student's exception whose __str__ fails
        return "(its message cannot be printed)"


class Lent(torch.nn.Module):
    """One of the grader's helpers, lent to a student's object: each call asks the grader."""

    def __init__(self, helper: str, ask: Callable[[str, tuple, dict], Any]):
        super().__init__()
        self.helper, self.ask = helper, ask

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.ask(self.helper, args, kwargs)


# --- objects the grader has made here for a check, and hands to the student's code -----------


class LoopClassifier(torch.nn.Module):
    """The fine-tuning loop's model: the mean of its token embeddings, a LayerNorm and a linear
    head over two labels, the same weights for the same seed. It notes every forward pass as
    ("train" or "eval", self.training): "eval" inside a DevAccuracy evaluation."""

    def __init__(self, seed: int):
        super().__init__()
        # the weights drawn from a generator of its own, never torch's global one: a grader with
        # --jobs builds its reference models in threads at once, and a global seed set in one
        # thread is drawn from by another (the reference then differs from the student's model)
        g = torch.Generator().manual_seed(seed)
        self.embed = torch.nn.utils.skip_init(torch.nn.Embedding, 40, 12)
        self.norm = torch.nn.LayerNorm(12)
        self.head = torch.nn.utils.skip_init(torch.nn.Linear, 12, 2)
        bound = 12**-0.5  # torch's default range for a Linear's weights and bias: 1/sqrt(fan-in)
        with torch.no_grad():
            self.embed.weight.normal_(generator=g)  # (40, 12), as nn.Embedding's default
            self.head.weight.uniform_(-bound, bound, generator=g)  # (2, 12)
            self.head.bias.uniform_(-bound, bound, generator=g)  # (2,)
        self.calls: list[tuple[str, bool]] = []
        self.evaluating = False

    def forward(self, input_ids: torch.Tensor, labels: torch.Tensor | None = None) -> Any:
        self.calls.append(("eval" if self.evaluating else "train", self.training))
        logits = self.head(self.norm(self.embed(input_ids).mean(1)))  # (batch, 2)
        loss = torch.nn.functional.cross_entropy(logits, labels) if labels is not None else None
        return types.SimpleNamespace(logits=logits, loss=loss)

    def calls_made(self) -> list[tuple[str, bool]]:
        """Every forward pass so far: (kind, training)."""
        return list(self.calls)


class DevAccuracy:
    """evaluate(model) for the fine-tuning loop: accuracy on a dev set (input_ids (n, seq),
    labels (n,)), rounded to two decimals so that ties happen and their rule matters."""

    def __init__(self, input_ids: torch.Tensor, labels: torch.Tensor):
        self.input_ids, self.labels = input_ids, labels

    def __call__(self, model: LoopClassifier) -> float:
        model.evaluating = True
        try:
            with torch.no_grad():
                right = model(self.input_ids).logits.argmax(-1) == self.labels
        finally:
            model.evaluating = False
        return round(float(right.float().mean()), 2)


MADE = {"LoopClassifier": LoopClassifier, "DevAccuracy": DevAccuracy}  # what "make" may build


class Worker:
    """Answers the grader's requests about one student's module.

    ask(helper, args, kwargs) asks the grader to run a lent helper; passthrough are exception
    types that must reach the caller unchanged (the in-process grader's time limit).
    """

    def __init__(
        self, ask: Callable[[str, tuple, dict], Any] | None = None, passthrough: tuple = ()
    ):
        self.module: types.ModuleType | None = None
        self.objects: list[Any] = []  # handle n -> object
        self.handles: dict[int, int] = {}  # id(object) -> handle
        self.ask = ask
        self.passthrough = passthrough

    def keep(self, value: Any) -> dict:
        """The handle of value (the same one each time it comes back)."""
        n = self.handles.get(id(value))
        if n is None or self.objects[n] is not value:
            n = self.handles[id(value)] = len(self.objects)
            self.objects.append(value)
        name = (
            getattr(value, "__name__", None)
            if isinstance(value, (type, types.FunctionType))
            else None
        )
        return {
            "handle": n,
            "type": type(value).__name__,
            "name": name if type(name) is str else None,
        }

    def answer(self, request: dict, tensors: dict) -> tuple[dict, dict]:
        """One reply (message, tensors) to one request; the student's code runs here."""
        packer = Packer(self.keep)
        try:
            reply = self._run(request, tensors, packer)
        except self.passthrough:
            raise
        except (SystemExit, KeyboardInterrupt) as exc:
            return {"stopped": stopped(exc)}, {}
        except SyntaxError as exc:
            return {"raised": ["SyntaxError", _words(exc), exc.lineno or 0]}, {}
        except Exception as exc:  # the student's code may raise anything: that is its answer
            return {"raised": [type(exc).__name__, _words(exc)]}, {}
        except BaseException as exc:  # a student's own BaseException: it ended the call
            return {"stopped": stopped(exc)}, {}
        return reply, packer.tensors

    def _run(self, request: dict, tensors: dict, packer: Packer) -> dict:
        op = request.get("op")
        if op == "import":
            self.module = _import(Path(str(request["file"])), str(request["name"]))
            return {"ok": True}
        if op == "get":
            name = str(request["name"])
            if not hasattr(self.module, name):
                return {"missing": True}
            return {"value": packer.pack(getattr(self.module, name))}
        if op == "make":  # one of the grader's objects, kept here for the student's code
            made = MADE[str(request["kind"])]
            return {"value": packer.pack(made(*unpack(request["args"], tensors, self._object)))}
        target = self.objects[int(request["target"])]
        if op == "call":
            args = unpack(request["args"], tensors, self._object)
            kwargs = unpack(request["kwargs"], tensors, self._object)
            method = request.get("method")
            call = getattr(target, str(method)) if method else target
            return {"value": packer.pack(call(*args, **kwargs))}
        if op == "lend":
            setattr(target, str(request["attribute"]), Lent(str(request["helper"]), self.ask))
            return {"ok": True}
        raise ValueError(f"unknown request {op!r}")

    def _object(self, tree: dict) -> Any:
        return self.objects[tree["handle"]]


def _import(path: Path, name: str) -> types.ModuleType:
    """Import the student's file as module name."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path.name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    spec.loader.exec_module(module)
    return module


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses the packages that hold reference code (where no sandbox already hides them)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname.split(".")[0] in FORBIDDEN:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def _limit() -> None:
    """No file over FILE_BYTES, no core dumps (POSIX; elsewhere no limit). Memory is the grader's
    to watch (runner._MemoryWatch: resident memory, not address space, which a CUDA build of
    torch reserves by the gigabyte without using it)."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, OSError, ValueError):  # not POSIX: no limit
        pass


def main(argv: list[str]) -> None:
    """Serve the grader: `python -I worker.py MEGABYTES SITE...`, in the submission's folder.

    SITE are the grader's package folders, added before torch is imported (-I leaves out a
    user's site, where torch may be).
    """
    handed_in = os.environ.get("MINIBERT_HANDED_IN")  # in the sandbox: the folder, read-only
    if handed_in:  # copied into the in-memory folder the worker runs in (runner._command)
        shutil.copytree(handed_in, os.getcwd(), symlinks=True, dirs_exist_ok=True)
    requests, replies = os.dup(0), os.dup(1)  # the channel; the student's prints go nowhere
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.meta_path.insert(0, _Refuse())
    sys.path.insert(0, os.getcwd())  # the submission may import its own helper modules
    _limit()  # argv[0], the megabytes, is the grader's to enforce

    def ask(helper: str, args: tuple, kwargs: dict) -> Any:
        packer = Packer()
        message = {
            "callback": helper,
            "args": packer.pack(list(args)),
            "kwargs": packer.pack(kwargs),
        }
        send(replies, encode(message, packer.tensors))
        reply, tensors = receive(requests)
        if "value" not in reply:
            raise RuntimeError(str(reply.get("refused", "the grader refused")))
        return unpack(reply["value"], tensors, lambda tree: None)

    worker = Worker(ask)
    send(replies, encode({"ready": True}, {}))
    os.dup2(null, 2)  # from here on, nothing reaches the grader but frames
    while True:
        request, tensors = receive(requests)
        if request.get("op") == "bye":
            break
        send(replies, encode(*worker.answer(request, tensors)))
    os._exit(0)  # no atexit hook or thread of the student's keeps the process alive


if __name__ == "__main__":
    main(sys.argv[1:])
