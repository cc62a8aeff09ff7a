"""The output folder of a run: checked before any work, one writer at a time, replaced atomically.

Both recipes write their model through one ``OutputFolder``::

    with OutputFolder(out, overwrite=False, resume=False) as folder:  # checks, then the lock
        ...  # train, the resumable state in folder.run (out/.run)
        folder.put_in_place(write_model)  # the finished model, into out

- **Checked first**: a file, a link to nothing or an unwritable place is refused before anything
  is read or written. A folder that holds anything is refused, unless it holds a model that one
  of our runs wrote and ``overwrite`` is given, or an interrupted run and ``resume`` is given.
- **One writer**: the folder is locked (``.minibert-lock``, an OS lock the system releases when
  the process ends, however it ends); a second run into it is refused, naming the first's process.
- **A manifest** (``.minibert-manifest.json``), written with every model, lists the files that
  run wrote. ``overwrite`` replaces those and nothing else: a file no run of ours wrote (a
  README.md of the user's, a project's ``src/``) is refused up front, never deleted.
- **An abandoned run is never read**: without ``resume``, an old ``.run`` is removed before
  the new run reads anything (its vocabulary would otherwise be taken for the new one's).
- **Atomic replacement**: the new model is written whole into ``.run/final``; then one record of
  the moves (``.run/replace.json``) is written at once: before it exists the old model is
  untouched, after it the replacement is decided; the moves follow (renames, milliseconds), and a
  start that finds the record (a run killed during the moves) completes them before anything else.
- **Nothing left behind**: a run refused or failed before its first checkpoint removes its
  ``.run``, and the folder itself if the run created it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from minibert.run_state import STATE_FILE  # a run that can be resumed
from minibert.utils import (
    atomic_write,
    folder_problem,
    is_plain_name,
    read_json_object,
    remove_partial_files,
)

try:  # POSIX: flock; Windows: msvcrt.locking. Both are released when the process dies.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

__all__ = ["LOCK", "MANIFEST", "RUN_FOLDER", "FolderBusy", "OutputFolder", "add_to_manifest"]

RUN_FOLDER = ".run"  # the run's vocabulary, recipe and resumable state, while it trains
LOCK = ".minibert-lock"  # held by the one run writing to the folder
MANIFEST = ".minibert-manifest.json"  # the files the last run of ours wrote
JOURNAL = "replace.json"  # in RUN_FOLDER: the moves that replace the model, once decided
STAGED = "final"  # in RUN_FOLDER: the finished model, before it is moved into place


class FolderBusy(OSError):
    """Another run is writing to the output folder."""


def _shown(names: Iterable[str], most: int = 6) -> str:
    names = sorted(names)
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def manifest_files(folder: Path) -> set[str]:
    """The files the folder's manifest says one of our runs wrote (empty without a manifest)."""
    path = folder / MANIFEST
    if not path.is_file():
        return set()
    files = read_json_object(path).get("files")
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError(f"{path} is damaged (no list of file names); delete the folder's model")
    outside = [f for f in files if not is_plain_name(f)]
    if outside:
        raise ValueError(
            f"{path} is damaged: it lists {_shown(map(repr, outside), 3)}, which are not files of "
            "the folder (a run of ours lists only names inside it); nothing was removed: delete "
            "the folder's model by hand"
        )
    return set(files)


def add_to_manifest(folder: str | Path, names: Iterable[str]) -> None:
    """Record files written beside a model (a card, a plot) as the model's: overwrite replaces
    them with it."""
    folder = Path(folder)
    record = read_json_object(folder / MANIFEST) if (folder / MANIFEST).is_file() else {}
    record["files"] = sorted(manifest_files(folder) | set(names))
    atomic_write(folder / MANIFEST, json.dumps(record, indent=1) + "\n")


def _holder(folder: Path) -> str | None:
    """Who holds folder's lock (the line it wrote), or None when no run holds it."""
    lock = folder / LOCK
    if fcntl is None or not lock.is_file():
        return None
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held
        return os.read(fd, 1000).decode("utf-8", "replace").strip() or "another process"
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


class OutputFolder:
    """A run's output folder: checks, the lock, the run's working folder and the final move."""

    def __init__(
        self,
        path: str | Path,
        *,
        overwrite: bool = False,
        resume: bool = False,
        writer: bool = True,
    ):
        """Check the folder (nothing is written); writer=False (torchrun's other processes) only
        names it: they neither check, lock nor write."""
        self.path, self.overwrite, self.resume = Path(path), overwrite, resume
        self.writer = writer
        self._fd: int | None = None
        self._created: Path | None = None  # the first folder this run made, removed on failure
        if writer:
            self.path = self._target(self.path)
            if not (self.path / RUN_FOLDER / JOURNAL).is_file():  # else: completed on entering
                self._refuse_contents(recover=False)
        self.run = self.path / RUN_FOLDER

    @staticmethod
    def _target(path: Path) -> Path:
        """The folder to write: a link followed to its folder; a file, a link to nothing or a place
        that cannot be written refused (utils.folder_problem)."""
        if path.is_symlink() and path.exists():
            path = path.resolve()
        if problem := folder_problem(path):
            raise ValueError(f"output folder {problem}")
        return path

    def _refuse_contents(self, recover: bool) -> None:
        """Refuse a folder this run may not write to (see the module's docstring)."""
        path, run = self.path, self.path / RUN_FOLDER
        if run.is_symlink():
            raise ValueError(
                f"output folder {path} holds {RUN_FOLDER} as a link to {os.readlink(run)}: no run "
                "of ours made it; remove the link, or choose another folder"
            )
        if recover:
            self._complete_replacement()
        if not path.is_dir():
            if self.resume:
                raise ValueError(f"resume: {path} does not exist, so it holds no run to continue")
            return
        entries = {p.name for p in path.iterdir() if p.name != LOCK}
        entries -= {p.name for p in path.glob(".*.partial")}  # a hard-killed write's leftovers
        resumable = (run / STATE_FILE).is_file()
        if self.resume:
            if not resumable and (holder := _holder(path)):  # a run before its first checkpoint
                raise FolderBusy(
                    f"output folder {path} is being written by another run ({holder}); wait for it "
                    "to end, or choose another folder"
                )
            if not resumable:
                raise ValueError(
                    f"resume: {path} holds no interrupted run to continue (no {RUN_FOLDER}/"
                    f"{STATE_FILE}; the folder holds: {_shown(entries) or 'nothing'})"
                )
            return
        if not entries:
            return
        ours = manifest_files(path)
        if not self.overwrite:
            if resumable:
                why = "an interrupted run; pass resume (--resume) to continue it, or"
            elif RUN_FOLDER in entries and len(entries) == 1:
                why = (
                    "a run that stopped before its first checkpoint, so there is nothing to resume;"
                )
            elif ours:
                why = "a model;"
            else:
                raise ValueError(
                    f"output folder {path} is not empty (it holds {_shown(entries)}); a run writes "
                    "into a new or empty folder, or over a model of its own: choose another folder"
                )
            raise ValueError(
                f"output folder {path} already holds {why} pass overwrite (--overwrite) to replace "
                "it, or choose another folder"
            )
        foreign = entries - ours - {RUN_FOLDER, MANIFEST}
        if foreign:
            raise ValueError(
                f"output folder {path} holds files no minibert run wrote ({_shown(foreign)}); "
                f"overwrite replaces only a run's own files (listed in {MANIFEST}): move them "
                "away, or choose another folder"
            )

    # --- the lock -----------------------------------------------------------------------------

    def __enter__(self) -> OutputFolder:
        if not self.writer:
            return self
        missing = [p for p in (self.path, *self.path.parents) if not p.exists()]
        self.path.mkdir(parents=True, exist_ok=True)
        self._created = missing[-1] if missing else None
        try:
            self._lock()
            self._refuse_contents(recover=True)  # again, now that no other run can change it
            if not self.resume and self.run.exists():
                shutil.rmtree(self.run)  # an abandoned run: never read by this one
            remove_partial_files(self.path)
        except BaseException:
            self._unlock()
            self._remove_created()
            raise
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if not self.writer:
            return
        try:
            kept = [self.run / STATE_FILE, self.run / JOURNAL]  # a run to resume, moves to end
            if kind is not None and not any(path.is_file() for path in kept):
                shutil.rmtree(self.run, ignore_errors=True)  # nothing to resume: leave nothing
        finally:
            self._unlock()
            if kind is not None:
                self._remove_created()

    def _lock(self) -> None:
        """Take the folder's lock, or raise FolderBusy naming the run that holds it."""
        lock = self.path / LOCK
        while True:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                else:  # pragma: no cover - Windows
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            except OSError:
                holder = os.read(fd, 1000).decode("utf-8", "replace").strip() or "another process"
                os.close(fd)
                raise FolderBusy(
                    f"output folder {self.path} is being written by another run ({holder}); "
                    "wait for it to end, or choose another folder"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                    break  # the lock file is still the folder's (not removed by its last holder)
            os.close(fd)
        os.ftruncate(fd, 0)
        since = time.strftime("%Y-%m-%d %H:%M:%S")
        os.write(fd, f"process {os.getpid()}, started {since}: {' '.join(sys.argv)}"[:900].encode())
        self._fd = fd

    def _unlock(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            (self.path / LOCK).unlink()  # while still held: a waiting run sees it is gone
        os.close(self._fd)
        self._fd = None

    def _remove_created(self) -> None:
        """Remove the folders this run created, if they hold nothing (a refused or failed run)."""
        if self._created is None:
            return
        for folder in [self.path, *self.path.parents]:
            with contextlib.suppress(OSError):
                folder.rmdir()  # only when empty
            if folder == self._created:
                break

    # --- putting the model in place -----------------------------------------------------------

    def put_in_place(self, write: Callable[[Path], None], by: str) -> None:
        """Write the finished model with write(folder) into the run's staging folder, then replace
        the folder's model with it: the old one's files (its manifest says which) go."""
        staged = self.run / STAGED
        if staged.exists():
            shutil.rmtree(staged)
        staged.mkdir(parents=True)
        write(staged)
        names = sorted(p.name for p in staged.iterdir())
        record = {"files": names, "by": by, "written": time.strftime("%Y-%m-%d %H:%M:%S")}
        atomic_write(staged / MANIFEST, json.dumps(record, indent=1) + "\n")
        moves = sorted(names, key=lambda name: name == "config.json") + [MANIFEST]
        journal = {"remove": sorted(manifest_files(self.path) - set(names)), "move": moves}
        atomic_write(self.run / JOURNAL, json.dumps(journal, indent=1) + "\n")  # decided
        self._complete_replacement()

    def _complete_replacement(self) -> None:
        """Carry out the moves a replacement decided (again, if a run was killed during them)."""
        journal_path = self.path / RUN_FOLDER / JOURNAL
        if not journal_path.is_file():
            return
        journal = read_json_object(journal_path)
        remove, move = journal.get("remove", []), journal.get("move", [])
        ours = manifest_files(self.path) | {MANIFEST}
        if (
            not isinstance(remove, list)
            or not isinstance(move, list)
            or not all(map(is_plain_name, remove + move))
            or any((self.path / n).exists() and n not in ours for n in remove)
        ):
            raise ValueError(
                f"{journal_path} is damaged or not ours: it asks to remove or move files that no "
                f"run of ours wrote into {self.path}; nothing was removed: delete {RUN_FOLDER} "
                "by hand if you trust it, or choose another folder"
            )
        for name in remove:
            old = self.path / name
            if old.is_dir() and not old.is_symlink():
                shutil.rmtree(old)
            else:
                old.unlink(missing_ok=True)
        for name in move:
            new = self.path / RUN_FOLDER / STAGED / name
            if new.exists():
                os.replace(new, self.path / name)
        shutil.rmtree(self.path / RUN_FOLDER)
