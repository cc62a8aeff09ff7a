"""Running a submission: in a bubblewrap sandbox, in a plain child process, or in this process.

grade_isolated (the command's) copies the submission's folder and runs grading_worker.py on
the copy. On Linux with bubblewrap, the worker runs in a sandbox: its own user, process, network,
IPC and UTS namespaces (no network; it cannot see or signal the grader or another submission),
as an unprivileged user (nobody) with every capability dropped, whoever runs the grader (root
included: it cannot mount or remount anything), a read-only view of only what Python and torch
need (the system's libraries, the Python installation wherever it lives, its site-packages with
minibert, transformers and d2l hidden), its own /proc, and nothing writable but three in-memory
folders of fixed size: /tmp, /dev/shm and /submission (a fresh copy of the folder as handed in,
made inside the sandbox: nothing it writes reaches the host's disk). The whole sandbox dies at the
time limit, when the run ends or if the grader dies. Without bubblewrap, the worker runs as a
plain child process, every process it started killed at the end, and every row says "not
sandboxed". grade runs the worker in this process (for the tests and quick checks: no isolation
at all).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from minibert.teaching import grading_worker
from minibert.teaching.assignments.catalogue import Assignment, get, which
from minibert.teaching.assignments.remote import (
    LocalTransport,
    ProcessTransport,
    RemoteModule,
    Session,
    Stopped,
)
from minibert.teaching.grading_worker import FORBIDDEN

PART_SECONDS = 300  # a part that runs longer (an endless loop) scores 0
MEMORY_MB = 4096  # the resident memory a run may hold beyond Python and torch (Linux)
MEMORY_POLL = 0.05  # seconds between two looks at a run's resident memory
MIN_MEMORY_MB = 512  # the encoder's reference needs about 384 (MiniLM's weights arrive as 90 MB)
STARTUP_SECONDS = 120  # the worker's own start (Python, torch), before the student's file
KEPT_OUTPUT = 10_000  # characters of a submission's printing kept by grade() (the rest dropped)
COPY_BYTES = 64 * 2**20  # the most a submission's folder may hold (it is copied for each run)
MAX_DEPTH = 64  # the deepest a submission's folders may nest (deeper is refused, not copied)
TMP_BYTES = 64 * 2**20  # the sandbox's /tmp (in memory)
SHM_BYTES = 16 * 2**20  # the sandbox's /dev/shm (in memory)
SUBMISSION_BYTES = COPY_BYTES + TMP_BYTES  # the sandbox's /submission: the copy and room to write
NOBODY = "65534"  # the user and group a submission runs as inside the sandbox
BWRAP: str | None = "bwrap"  # the bubblewrap program; None: never sandbox (tests set it)
ENV_TOKEN = "MINIBERT_GRADING_RUN"  # set in every worker's environment: finds its strays
INSTALL = "install bubblewrap (apt-get install bubblewrap on Debian and Ubuntu, dnf on Fedora)"
ELSEWHERE = "or grade in a container or throw-away account"


@dataclass
class PartResult:
    """How one part went: points earned and the verdict (a pass, or a hint)."""

    title: str
    points: int
    max_points: int
    message: str


@dataclass
class Grade:
    """The grade of one folder, and how its code was run (sandbox: "bubblewrap", or why not)."""

    assignment: str
    folder: Path
    parts: list[PartResult] = field(default_factory=list)
    error: str | None = None  # no file, it does not import, or its run stopped
    sandbox: str = "not sandboxed: graded in the grader's own process"

    @property
    def points(self) -> int:
        return sum(p.points for p in self.parts)

    @property
    def max_points(self) -> int:
        return sum(p.max_points for p in self.parts)

    @property
    def passed(self) -> bool:
        return self.error is None and self.points == self.max_points


# --- the grading loop, the same for every way of running ---------------------------------------


def _run_parts(
    assignment: Assignment, folder: Path, start: Callable[[], Session], seconds: float
) -> Grade:
    """Every part of assignment, each check calling the student's code through a session.

    start() opens a session with the student's file imported; when a run stops (a crash, the
    time limit), its part scores 0 and the next part gets a fresh run.
    """
    result = Grade(assignment.name, folder)
    session: Session | None = None
    try:
        for index, part in enumerate(assignment.parts):
            if session is None or session.ended:
                if session is not None:  # the previous part ended the run
                    last = assignment.parts[index - 1].title
                    result.error = result.error or f"part {index} ({last}): {session.ended}"
                session, problem = _open(start, assignment, seconds)
                if problem:
                    result.error = problem
                    result.parts += [
                        PartResult(p.title, 0, p.points, problem) for p in assignment.parts[index:]
                    ]
                    break
            session.begin(seconds)
            passed, message = _check(part.check, session.module, seconds)
            result.parts.append(
                PartResult(part.title, part.points if passed else 0, part.points, message)
            )
    finally:
        if session is not None:
            session.close()
    return result


def _check(
    check: Callable[[RemoteModule], tuple[bool, str]], module: RemoteModule, seconds: float
) -> tuple[bool, str]:
    try:
        return check(module)
    except Stopped as exc:
        return False, str(exc)
    except _PartTimeout:
        return False, f"stopped after {seconds:g} s: is there an endless loop?"
    except Exception as exc:  # the student's exception, rebuilt, escaped a check's own steps
        return False, f"it raised {type(exc).__name__}: {exc}"


def _open(
    start: Callable[[], Session], assignment: Assignment, seconds: float
) -> tuple[Session, str | None]:
    """A session with the student's file imported, or (the session, why the file did not import)."""
    session = start()
    file = assignment.file
    try:
        session.begin(STARTUP_SECONDS)
        session.start()
    except Stopped as exc:  # before the student's file ran: the grader's machine is at fault
        return session, f"the grader could not start a run for {file} ({exc})"
    getattr(session.transport, "arm", lambda: None)()  # the memory limit, from here on
    try:
        session.begin(seconds)
        session.module = session.load(session.file, session.module_name)
    except Stopped as exc:
        return session, f"{file} does not import: {exc}"
    except _PartTimeout:
        return (
            session,
            f"{file} does not import: stopped after {seconds:g} s: is there an endless loop?",
        )
    except Exception as exc:  # the student's exception, rebuilt
        where = f" (line {exc.lineno})" if type(exc).__name__ == "SyntaxError" else ""
        rule = ""
        if type(exc).__name__ == "ModuleNotFoundError" and any(
            f"'{n}" in str(exc) for n in FORBIDDEN
        ):
            rule = (
                f" (the rules forbid it: the grader runs the file without {', '.join(FORBIDDEN)})"
            )
        return session, f"{file} does not import: {type(exc).__name__}{where}: {exc}{rule}"
    return session, None


def _folder_and_assignment(folder: str | Path, name: str | None) -> tuple[Path, Assignment]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder}")
    return folder, get(name or which(folder))


# --- in this process -------------------------------------------------------------------------


class _PartTimeout(BaseException):  # not Exception: neither call_safely nor the worker takes it
    pass


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise _PartTimeout after seconds (POSIX main thread only; elsewhere no limit)."""
    usable = hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()
    if not usable or not seconds:
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise _PartTimeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _Capped(io.TextIOBase):
    """A text sink that keeps the first KEPT_OUTPUT characters written to it and drops the rest."""

    def __init__(self, limit: int = KEPT_OUTPUT):
        self.kept, self.limit = [], limit

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        room = self.limit - sum(map(len, self.kept))
        if room > 0:
            self.kept.append(text[:room])
        return len(text)


class _LocalSession(Session):
    """A session whose worker runs in this process, each step under SIGALRM's time limit."""

    def request(self, op: str, message: dict, tensors: dict | None = None) -> tuple[dict, dict]:
        if self.left() <= 0:
            raise _PartTimeout
        quiet = _Capped()  # the student's prints and progress bars stay out of the report
        with (
            _time_limit(self.left()),
            contextlib.redirect_stdout(quiet),
            contextlib.redirect_stderr(quiet),
        ):
            return super().request(op, message, tensors)  # it counts the time used


_counter = itertools.count()


def grade(folder: str | Path, name: str | None = None, seconds: float = PART_SECONDS) -> Grade:
    """Grade the submission in folder in this process: every part, with points and a verdict.

    Quick, for the tests and a student's own checks; not isolated at all (the student's code runs
    in this process, and may import minibert). grade_isolated is the command's.
    """
    folder, assignment = _folder_and_assignment(folder, name)
    if not (folder / assignment.file).is_file():
        return _missing(assignment, folder, "not sandboxed: graded in the grader's own process")

    def start() -> Session:
        transport = LocalTransport(passthrough=(_PartTimeout,))
        session = transport.session = _LocalSession(transport)
        session.module_name = f"minibert_submission_{next(_counter)}_{Path(assignment.file).stem}"
        session.file = str((folder / assignment.file).resolve())
        return session

    return _run_parts(assignment, folder, start, seconds)


def _missing(assignment: Assignment, folder: Path, sandbox: str) -> Grade:
    error = f"{folder / assignment.file} is missing; `minibert assignment new {assignment.name} DIR` writes it"
    parts = [PartResult(p.title, 0, p.points, error) for p in assignment.parts]
    return Grade(assignment.name, folder, parts, error, sandbox)


# --- in a child process, sandboxed when bubblewrap works -----------------------------------------

_probed: dict[str, str | None] = {}


def sandbox_problem() -> str | None:
    """None when bubblewrap can sandbox here; else "not sandboxed: why; what to do".

    Probed once per bwrap: its namespaces and dropped privileges, then Python and torch inside
    the sandbox the worker gets (the same arguments).
    """
    if not sys.platform.startswith("linux"):
        return f"not sandboxed: bubblewrap needs Linux; {ELSEWHERE}"
    found = shutil.which(BWRAP) if BWRAP else None
    if not found:
        return f"not sandboxed: bwrap was not found; {INSTALL}, {ELSEWHERE}"
    if found not in _probed:
        _probed[found] = _probe_sandbox(found)
    return _probed[found] and f"not sandboxed: {_probed[found]}"


def _probe_sandbox(bwrap: str) -> str | None:
    """Why bwrap cannot run the worker here (and what to do), or None."""
    said = _probe([bwrap, *_privileges(), "--ro-bind", "/", "/", "true"])
    if said:
        return (
            f"bwrap cannot make its namespaces here ({said}); allow unprivileged user namespaces "
            "(sysctl kernel.unprivileged_userns_clone=1, or "
            f"kernel.apparmor_restrict_unprivileged_userns=0), {ELSEWHERE}"
        )
    check = "import site, sys; [site.addsitedir(p) for p in sys.argv[1:]]; import torch"
    command = [*_sandbox(bwrap, "probe"), sys.executable, "-I", "-c", check, *_site_dirs()]
    said = _probe(command)
    if said:
        return (
            f"bwrap works, but Python ({sys.executable}) and torch do not start in its sandbox "
            f"({said}); the sandbox binds {', '.join(_python_folders())} read-only: "
            f"please report this, {ELSEWHERE}"
        )
    return None


def _probe(command: list[str]) -> str | None:
    """None when command succeeds, else the last line it said."""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    said = (done.stderr.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    return None if done.returncode == 0 else said[:200]


def _privileges() -> list[str]:
    """bwrap's namespaces, run as nobody with every capability dropped (root's too: as root,
    bwrap would otherwise keep them, and a submission could remount the environment writable)."""
    namespaces = ["--unshare-all", "--unshare-user", "--uid", NOBODY, "--gid", NOBODY]
    return [*namespaces, "--cap-drop", "ALL", "--die-with-parent", "--new-session"]


def _python_folders() -> list[str]:
    """The folders Python and its packages live in, outermost only (not those under /usr)."""
    installation = str(Path(os.path.realpath(sys.executable)).parent.parent)
    python = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, installation}
    python |= set(_site_dirs())
    bound: list[str] = []
    for path in sorted(python, key=len):
        if not any(_within(path, b) for b in ["/usr", *bound]):
            bound.append(path)
    return bound


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _binds() -> list[str]:
    """bwrap's arguments for the read-only system: libraries, Python, its packages, less FORBIDDEN."""
    args: list[str] = []
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    bound = _python_folders()
    for path in bound:
        args += ["--ro-bind", path, path]
    import importlib.util

    for name in FORBIDDEN:  # hidden under an empty read-only folder wherever a bound path has them
        spec = importlib.util.find_spec(name)
        for place in map(str, (spec.submodule_search_locations or []) if spec else []):
            if any(_within(place, b) and place != b for b in ["/usr", *bound]):
                args += ["--size", "4096", "--tmpfs", place, "--remount-ro", place]
    return args


ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "passwd", "group", "nsswitch.conf")


def _site_dirs() -> list[str]:
    """The grader's package folders (site-packages, a user's site too): the worker's as well."""
    found = [p for p in sys.path if Path(p).name in ("site-packages", "dist-packages")]
    return [p for p in found if os.path.isdir(p)]


def _sandbox(bwrap: str, token: str, mounts: list[str] = ()) -> list[str]:
    """bwrap and its arguments: namespaces and privileges, environment, the in-memory /tmp, the
    read-only system, /proc, /dev, the in-memory /dev/shm, then mounts, then / made read-only.

    /tmp comes before the system's binds, so that a Python installed under /tmp is bound on top
    of it rather than hidden by it.
    """
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        ENV_TOKEN: token,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    args = [bwrap, *_privileges(), "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    args += ["--size", str(TMP_BYTES), "--tmpfs", "/tmp", *_binds(), "--proc", "/proc"]
    args += ["--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm", *mounts]
    return [*args, "--remount-ro", "/dev", "--remount-ro", "/"]


HANDED_IN = "/grader/handed-in"  # in the sandbox: the folder's copy, read-only


def _command(copy: Path, memory_mb: int, token: str, sandboxed: bool) -> list[str]:
    """The worker's command line: `python -I worker.py MEGABYTES SITE...`, in bwrap if sandboxed.

    In the sandbox, the worker copies the folder (bound read-only at HANDED_IN) into /submission,
    an in-memory folder of SUBMISSION_BYTES, and runs there: what the submission writes is capped
    in total and never reaches the host's disk.
    """
    worker_file = str(Path(grading_worker.__file__))  # beside the teaching kit's packages
    if not sandboxed:
        return [sys.executable, "-I", worker_file, str(memory_mb), *_site_dirs()]
    mounts = ["--ro-bind", str(copy), HANDED_IN, "--ro-bind", worker_file, "/grader/worker.py"]
    mounts += ["--size", str(SUBMISSION_BYTES), "--tmpfs", "/submission"]
    mounts += ["--setenv", "MINIBERT_HANDED_IN", HANDED_IN, "--chdir", "/submission"]
    worker = [sys.executable, "-I", "/grader/worker.py", str(memory_mb), *_site_dirs()]
    return [*_sandbox(shutil.which(BWRAP), token, mounts), *worker]


def _private_copy(folder: Path, into: Path) -> None:
    """Copy folder's files and folders into into (links as links; pipes, devices left out).

    Walked with a list, not recursion (os.walk and shutil recurse, and a folder nested deeper than
    Python's recursion limit would end the grader); a folder nested more than MAX_DEPTH deep, or
    holding more than COPY_BYTES, is refused with a ValueError that says where.
    """
    total, todo = 0, [(folder, into, 0)]
    while todo:
        here, target, depth = todo.pop()
        with os.scandir(here) as entries:
            for entry in entries:
                source, there = Path(entry.path), target / entry.name
                if entry.is_symlink():
                    os.symlink(os.readlink(source), there)
                elif entry.is_dir():
                    if depth >= MAX_DEPTH:
                        inside = Path(*source.relative_to(folder).parts[:3])
                        raise ValueError(
                            f"{folder} holds folders nested more than {MAX_DEPTH} deep "
                            f"({inside}/...); keep only the code in it"
                        )
                    there.mkdir()
                    todo.append((source, there, depth + 1))
                elif entry.is_file():
                    total += entry.stat().st_size
                    if total > COPY_BYTES:
                        raise ValueError(
                            f"{folder} holds more than {COPY_BYTES // 2**20} MB; keep only the code in it"
                        )
                    shutil.copyfile(source, there)


def _remove_tree(top: str) -> None:
    """Remove top and all it holds, folders made writable first (a submission may have made them
    read-only); walked with a list, not recursion, like _private_copy (a run may nest folders
    deeper than Python's recursion limit). What cannot be removed is left, silently."""
    todo, folders = [top], []
    while todo:
        here = todo.pop()
        folders.append(here)
        with contextlib.suppress(OSError):
            os.chmod(here, 0o700)
            with os.scandir(here) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
    for here in reversed(folders):  # the deepest first
        with contextlib.suppress(OSError):
            os.rmdir(here)


def _kill_all(child: subprocess.Popen, token: str) -> None:
    """Kill the child's process group, then every process carrying token in its environment."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        child.kill()
    child.wait()
    if not os.path.isdir("/proc/self"):
        return
    needle = f"{ENV_TOKEN}={token}".encode()
    for _ in range(20):  # a fork loop may add processes while we kill
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError):
                if needle in Path(f"/proc/{pid}/environ").read_bytes():
                    found.append(int(pid))
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not found:
            return


def _held_bytes(pid: int, proportional: bool) -> int:
    """The memory process pid holds, in bytes. proportional: its proportional set size (Linux's
    /proc/PID/smaps_rollup: each page it shares divided among the processes sharing it, so a
    forked child's copy-on-write pages count once across parent and children; its resident size
    where a kernel before 4.14 has none); else its resident size (statm: cheap, shared pages
    counted in each process, never less than the proportional size)."""
    if proportional:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024  # kB
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * page


def _resident_bytes(root: int, proportional: bool = True) -> int:
    """The memory process root and every process it started hold together, in bytes (Linux's
    /proc; 0 elsewhere): proportional set sizes summed, so the pages they share (torch, imported
    once, then forked) count once and the pages a child writes count in full; resident sizes
    summed (an upper bound, read far faster) if not proportional."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for name in filter(str.isdigit, os.listdir("/proc")):
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = Path(f"/proc/{name}/stat").read_bytes()  # pid (comm) state ppid ...
                children.setdefault(int(stat[stat.rindex(b")") + 2 :].split()[1]), []).append(
                    int(name)
                )
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += _held_bytes(pid, proportional)
        todo += children.get(pid, [])
    return total


class _MemoryWatch:
    """Ends a run whose processes hold more than megabytes of memory beyond what the worker held
    once Python and torch had started (_resident_bytes: proportional set sizes, so a forked
    child's shared pages count once): what the run uses, not the address space it reserves (a
    CUDA build of torch reserves gigabytes it never touches)."""

    def __init__(self, child: subprocess.Popen, kill: Callable[[], None], megabytes: int):
        self.child, self.kill, self.megabytes = child, kill, megabytes
        self.said: str | None = None
        self.done = threading.Event()

    def arm(self) -> None:
        """Start watching, from what the run holds now (the worker started, the file not run)."""
        limit = _resident_bytes(self.child.pid) + self.megabytes * 2**20
        threading.Thread(target=self._watch, args=(limit,), daemon=True).start()

    def _watch(self, limit: int) -> None:
        while not self.done.wait(MEMORY_POLL) and self.child.poll() is None:
            root = self.child.pid  # resident sizes first: cheap, and never below the truth
            if _resident_bytes(root, proportional=False) > limit and _resident_bytes(root) > limit:
                self.said = (
                    f"it used more than the {self.megabytes:,} MB of memory a run may "
                    "use beyond Python and torch (the grader's --memory-mb)"
                )
                self.kill()
                return

    def stop(self) -> None:
        self.done.set()


def _start_process(copy: Path, assignment: Assignment, memory_mb: int, sandboxed: bool) -> Session:
    token = uuid.uuid4().hex
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update({ENV_TOKEN: token, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
    child = subprocess.Popen(
        _command(copy, memory_mb, token, sandboxed),
        cwd=copy,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    watch = _MemoryWatch(child, lambda: _kill_all(child, token), memory_mb)

    def kill() -> None:
        watch.stop()
        _kill_all(child, token)

    transport = ProcessTransport(child, kill, verdict=lambda: watch.said)
    transport.arm = watch.arm  # _open arms it once the worker has started
    session = Session(transport)
    session.module_name, session.file = Path(assignment.file).stem, assignment.file
    return session


def grade_isolated(
    folder: str | Path,
    name: str | None = None,
    seconds: float = PART_SECONDS,
    memory_mb: int = MEMORY_MB,
) -> Grade:
    """Grade a submission in a run of its own: sandboxed by bubblewrap where it works.

    The worker runs on a private copy of the folder, with a time limit on its start, on importing
    the file and on each part, and memory_mb of resident memory beyond Python and torch (on Linux;
    looked at every MEMORY_POLL s, the run's processes together). Nothing it
    does reaches the grader, another submission or the next part's run; a run that stops (an
    exit, a crash, a hang, a malformed frame) scores its part 0 and the next part starts afresh.
    The Grade's sandbox says "bubblewrap", or "not sandboxed: ..." with how to get one.
    """
    if seconds <= 0 or memory_mb < MIN_MEMORY_MB:
        raise ValueError(
            f"seconds must be positive and memory_mb at least {MIN_MEMORY_MB}, got {seconds} and {memory_mb}"
        )
    folder, assignment = _folder_and_assignment(folder, name)
    problem = sandbox_problem()
    sandbox = problem or "bubblewrap"
    if not (folder / assignment.file).is_file():
        return _missing(assignment, folder, sandbox)
    tmp = tempfile.mkdtemp(prefix="minibert-grading-")
    try:
        copies = itertools.count()

        def start() -> Session:
            copy = Path(tmp) / f"run{next(copies)}"  # each run starts from the folder as handed in
            copy.mkdir()
            _private_copy(folder, copy)
            return _start_process(copy, assignment, memory_mb, problem is None)

        try:
            result = _run_parts(assignment, folder, start, seconds)
        except ValueError as exc:  # the folder is too big or too deep to copy
            result = Grade(assignment.name, folder, error=str(exc))
            result.parts = [PartResult(p.title, 0, p.points, str(exc)) for p in assignment.parts]
        result.sandbox = sandbox
    finally:  # nothing left in the temporary folder, however the grading ended
        _remove_tree(tmp)
    return result


def grade_many(
    folders: list[str | Path],
    name: str | None = None,
    seconds: float = PART_SECONDS,
    memory_mb: int = MEMORY_MB,
    jobs: int = 1,
) -> Iterator[Grade]:
    """grade_isolated on each folder, jobs at a time, yielding the grades in the folders' order.

    A folder that cannot be graded (not a folder, no assignment in it, a fault of the grader's on
    it) gets a row saying why, and the folders after it are graded.
    Several folders need name: a folder's marker is the student's file (it could name an easier
    assignment), so a class is graded as the assignment the teacher names.
    """
    if name is None and len(folders) > 1:
        raise ValueError("grading several folders needs the assignment's name (--name)")

    def one(folder: str | Path) -> Grade:
        try:
            return grade_isolated(folder, name, seconds, memory_mb)
        except (ValueError, OSError) as exc:  # not a folder, no assignment in it, ...
            error = str(exc)
        except Exception as exc:  # a fault of the grader's on this folder: its row, not the class
            error = (
                f"the grader failed on this folder ({type(exc).__name__}: {exc}); grade it alone"
            )
        return Grade(
            name or "?", Path(folder), error=error, sandbox=sandbox_problem() or "bubblewrap"
        )

    if jobs <= 1:  # in this thread: an interrupt stops grading at once
        yield from map(one, folders)
        return
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        yield from pool.map(one, folders)
    finally:  # an interrupt: the folders not started are not graded
        pool.shutdown(wait=False, cancel_futures=True)
