"""Reproducibility, devices and safe file writes: the helpers every other module uses."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import random
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

T = TypeVar("T")
UNIT_TOLERANCE = 1e-3  # how far from 1 a unit vector read back may be (float32 rounding: ~1e-7)


def set_seed(seed: int) -> None:
    """Seed Python's random, NumPy and PyTorch (CPU and every GPU) with one integer."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    import numpy as np
    import torch

    random.seed(
        seed
    )  # (PYTHONHASHSEED is read only when Python starts: setting it here does nothing)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # also seeds every CUDA device


def default_device() -> torch.device:
    """The device to use: CUDA when a GPU is present, else Apple's MPS, else the CPU."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def _umask() -> int:
    mask = os.umask(0o022)  # reading the umask means setting it; put it straight back
    os.umask(mask)
    return mask


def atomic_write(target: str | Path, content: str | bytes | Callable[[str], None]) -> Path:
    """Write a file all at once: into a hidden temporary file beside it, then rename it in place.

    ``content`` is the text (UTF-8, "\\n" line ends), the bytes, or a function that writes the
    temporary path it is given. An interrupted write leaves the old file (or none), never half a
    file. The file gets the permissions a plain ``open()`` would give (0o666 less the umask),
    so a teacher's shared folder stays readable.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as f:
            if isinstance(content, str):
                f.write(content.encode("utf-8"))
            elif isinstance(content, bytes):
                f.write(content)
        if callable(content):
            content(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except Exception as exc:  # a full disk, a read-only folder: one message naming the file
        Path(tmp).unlink(missing_ok=True)
        raise OSError(f"cannot write {target}: {type(exc).__name__}: {exc}") from exc
    except BaseException:  # Ctrl-C: no half-written file left behind
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def remove_partial_files(folder: str | Path) -> list[Path]:
    """Delete the hidden ``.*.partial`` files that a hard-killed atomic_write left in folder."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    leftovers = sorted(folder.glob(".*.partial"))
    for file in leftovers:
        file.unlink(missing_ok=True)
    return leftovers


def read_json_object(path: str | Path) -> dict[str, Any]:
    """A JSON file holding an object, as a dict; a damaged file raises a ValueError naming it."""
    path = Path(path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); fix it or save it again") from None
    if not isinstance(value, dict):
        raise ValueError(f"{path} must hold a JSON object, got {type(value).__name__}")
    return value


@contextlib.contextmanager
def evaluating(model: Any) -> Iterator[Any]:
    """Inside, the model is in eval mode (no dropout); after, in the mode it was in before."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def lazy_submodules(package: str, names: Sequence[str]) -> tuple[Callable, Callable]:
    """A package's ``__getattr__`` and ``__dir__`` (PEP 562) that import each of its submodules
    (names) the first time it is used: ``minibert.teaching.exercises``."""

    def submodule(name: str) -> Any:
        if name in names:
            return importlib.import_module(f"{package}.{name}")
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def listing() -> list[str]:
        return sorted([*vars(sys.modules[package]), *names])

    return submodule, listing


def check_text(text: object, what: str = "the text") -> str:
    """text, when it holds something to read; else a TypeError naming what came (an int, a list,
    bytes, an array, a dict: not a str) or a ValueError (empty, or only spaces, control and
    zero-width characters). The one check of every command's and entry point's text."""
    if not isinstance(text, str):
        raise TypeError(
            f"{what} must be a str, got {type(text).__name__}; give the words as text, in quotes"
        )
    if not any(c.isprintable() and not c.isspace() for c in text):  # zero-width: not printable
        raise ValueError(
            f"{what} is empty (or only spaces and control characters): give some words"
        )
    return text


def check_top_k(top_k: object, most: int | None = None, of: str = "") -> int:
    """top_k, when it is an int from 1 to most (how many there are to rank: of names them; None:
    not known yet); else a ValueError in one line with the bounds. The one check of every k."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive int, got {top_k!r}")
    if most is not None and top_k > most:
        raise ValueError(f"top_k must be at most {most:,} (the {of}), got {top_k:,}")
    return top_k


def vectors_problem(
    vectors: object, rows: int, width: int, of: str = "rows", unit: bool = False
) -> str | None:
    """Why vectors read back from a cache cannot be the (rows, width) float32 vectors expected (not
    a tensor, another shape, a NaN or inf, with unit a row not of length 1: a damaged file), or
    None; of names the rows ("passages"). The one check of every cache of vectors on load."""
    import torch

    if not isinstance(vectors, torch.Tensor):
        return f"it holds a {type(vectors).__name__}, not a tensor of vectors"
    if tuple(vectors.shape) != (rows, width):
        return f"its vectors are {tuple(vectors.shape)}, not ({rows:,} {of}, {width})"
    if vectors.dtype != torch.float32 or not torch.isfinite(vectors).all():
        return "some of its vectors are not float32 numbers (NaN, inf or another type)"
    if unit and not torch.allclose(vectors.norm(dim=1), torch.ones(rows), atol=UNIT_TOLERANCE):
        return "some of its vectors are not of length 1 (all zeros, or scaled)"
    return None


def read_kept(path: Path, load: Callable[[Path], T | None], what: str, again: str) -> T | None:
    """What a cache keeps at path, read by load; None (make it again) when there is no file, when
    load returns None (made from other inputs: stale, said nothing) or when it raises ValueError
    or OSError (damaged: said in one line on stderr naming the file, "the WHAT PATH is damaged
    (why): AGAIN"). The one rule of every cache kept on disk (the search index, the teacher's
    vectors): checked on load, never used damaged, made again."""
    if not path.is_file():
        return None
    try:
        return load(path)
    except (OSError, ValueError) as exc:
        print(f"the {what} {path} is damaged ({exc}): {again}", file=sys.stderr)
        return None


def is_plain_name(name: object) -> bool:
    """Whether name is one entry of a folder: no separator, not '', '.' or '..' (so a path made
    from it never leaves the folder)."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and os.sep not in name
        and (os.altsep is None or os.altsep not in name)
        and "\0" not in name
        and not os.path.isabs(name)
    )


def folder_problem(path: str | Path) -> str | None:
    """Why a folder cannot be written at path (a file, a link to nothing, a file where a parent
    folder should be, a place without write permission), or None."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        return f"{path} is a link to {os.readlink(path)}, which does not exist; give a folder"
    if path.exists() and not path.is_dir():
        return f"{path} is a file; give a folder"
    existing = next(p for p in (path, *path.parents) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        return f"{existing} is a file, so {path} cannot be made there; give a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot write to {path}: {existing} is not writable"
    return None
