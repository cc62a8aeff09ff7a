"""The grader's side of a submission's run: a session with its worker, and proxies for its objects.

A check (checks.py) holds a RemoteModule where it would hold the student's module. Reading a name
gives a Remote; calling a Remote, or one of its methods, sends the arguments to the worker
(grading_worker.py), which calls the student's code and sends back what it gave: tensors, numbers,
lists, or a handle for an object that stays there (a module instance). The inputs are made here
and the outputs are compared here, by the grader; no score crosses the channel, so a submission
that writes its own frames can only send wrong outputs. A frame that is not one of the replies
the request allows (an unknown key, a damaged header, bad tensors, too many bytes) ends the
session, and the part scores 0: the submission's failure, never the grader's.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import minibert.teaching.grading_worker as worker
from minibert.teaching.grading_worker import HEADER, MAX_TEXT

MAX_REPLY_TENSORS = 256 * 2**20  # the most tensor bytes one reply may carry
SMALL_FRAME = 32 * 2**10  # a request this small is written at once (a pipe holds 64 KB)

REPLIES = {  # request -> the key sets its reply may have; anything else is malformed
    "ready": ({"ready"},),
    "import": ({"ok"}, {"raised"}, {"stopped"}),
    "get": ({"value"}, {"missing"}, {"raised"}, {"stopped"}),
    "call": ({"value"}, {"raised"}, {"stopped"}),
    "lend": ({"ok"}, {"raised"}, {"stopped"}),
    "make": ({"value"}, {"raised"}, {"stopped"}),
}


class Stopped(BaseException):
    """The submission's run stopped (an exit, a crash, the time limit, a malformed frame).

    A BaseException, so that the checkers' call_safely does not take it for the student's error:
    it ends the part, which scores 0 with this message.
    """


class Malformed(Exception):
    """A frame the protocol does not allow."""


def clean(text: Any, limit: int = 300) -> str:
    """A submission's text made safe for a one-line report: no control characters, at most limit."""
    text = str(text)[: limit + 1]
    text = "".join(c if c.isprintable() else " " for c in text)
    return text if len(text) <= limit else text[:limit] + "..."


def _identifier(name: Any) -> str:
    return re.sub(r"\W", "_", str(name))[:60] or "object"


def rebuilt(name: Any, message: Any) -> Exception:
    """The student's exception, rebuilt here: a class of the same name (a builtin's subclass if
    it names one, so ``except RuntimeError`` still matches) whose message is the student's."""
    name, message = _identifier(name), clean(message)
    known = getattr(builtins, name, None)
    base = known if isinstance(known, type) and issubclass(known, Exception) else Exception
    kind = type(name, (base,), {"__str__": lambda self: message})
    try:
        return kind(message)
    except TypeError:  # a builtin that wants more arguments (UnicodeDecodeError)
        return type(name, (Exception,), {"__str__": lambda self: message})(message)


class Remote:
    """An object that lives in the worker (a function, a class, a module instance).

    Calling it, or a method of it, runs the student's code there; each proxy's class is named
    after the remote object's type, so hints say "got MultiHeadSelfAttention" as before.
    """

    def __init__(self, session: Session, tree: dict):
        self.__dict__.update(_session=session, _handle=tree["handle"])
        self.__dict__["__name__"] = clean(tree["name"] or tree["type"], 60)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.call(self._handle, None, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        session, handle = self._session, self._handle

        def method(*args: Any, **kwargs: Any) -> Any:
            return session.call(handle, name, args, kwargs)

        return method

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"set {name} in the worker with lend(), not here")

    def lend(self, attribute: str, helper: Callable[..., Any]) -> None:
        """Put one of the grader's helpers at attribute: the worker calls back to run it here."""
        self._session.lend(self._handle, attribute, helper)


class RemoteModule:
    """The student's module: its names read from the worker (hasattr works)."""

    def __init__(self, session: Session, name: str):
        self._session, self.__name__ = session, name

    def make(self, kind: str, *args: Any) -> Remote:
        """One of the worker's objects for the student's code (worker.MADE), built there."""
        return self._session.make(kind, args)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        found, value = self._session.get(name)
        if not found:
            raise AttributeError(f"{self.__name__} has no {name}")
        self.__dict__[name] = value
        return value


class Session:
    """One run of a worker: requests with a deadline, callbacks to lent helpers, the end.

    transport moves frames (in this process, or through a child's pipes); after the run ends
    (a timeout, a crash, a malformed frame), every request raises Stopped with the reason.
    """

    def __init__(self, transport: Any):
        self.transport = transport
        self.seconds, self.used = math.inf, 0.0
        self.helpers: dict[str, Callable[..., Any]] = {}
        self.ended: str | None = None
        self.module: RemoteModule | None = None  # the student's module, once imported
        self.module_name = "submission"  # the name it is imported under
        self.file = ""  # the student's file, as the worker finds it

    def begin(self, seconds: float) -> None:
        """A new step (the start, the import, a part): its own time, no helpers lent yet.

        The time counts the waits for the worker and the lent helpers' work, which the
        submission asks for; the grader's own work (making inputs, the reference) is not its.
        """
        self.seconds, self.used = seconds, 0.0
        self.helpers = {}

    def left(self) -> float:
        """Seconds the submission has left in this step."""
        return self.seconds - self.used

    def end(self, reason: str) -> None:
        """Stop the worker (and everything it started) for good."""
        if self.ended is None:
            self.ended = reason
        self.transport.close()

    def request(self, op: str, message: dict, tensors: dict | None = None) -> tuple[dict, dict]:
        """Send a request and return the reply, serving the worker's callbacks meanwhile."""
        if self.ended:
            raise Stopped(self.ended)
        started = time.monotonic()
        deadline = started + self.left()
        try:
            if op != "ready":
                self.transport.send(worker.encode({"op": op, **message}, tensors or {}), deadline)
            while True:
                reply, got = self.transport.receive(deadline)
                if op == "call" and "callback" in reply:  # a lent helper, on the student's time
                    answer = self._serve(reply, got)
                    if time.monotonic() > deadline:
                        raise TimeoutError
                    self.transport.send(answer, deadline)
                    continue
                if not any(set(reply) == keys for keys in REPLIES[op]):
                    raise Malformed(f"a reply with keys {sorted(reply)[:5]}")
                self.used += time.monotonic() - started
                return reply, got
        except TimeoutError:
            self.end(f"stopped after {self.seconds:g} s: is there an endless loop?")
        except EOFError:
            self.end(f"stopped: {self.transport.why_ended()}")
        except (Malformed, ValueError) as exc:
            self.end(
                f"stopped: the submission sent the grader a malformed frame ({clean(exc, 120)})"
            )
        raise Stopped(self.ended)

    def _serve(self, request: dict, tensors: dict) -> bytes:
        """The answer to a lent helper's call (refused when this step lent no such helper)."""
        if set(request) != {"callback", "args", "kwargs"} or type(request["callback"]) is not str:
            raise Malformed("a callback with other keys")
        helper = self.helpers.get(request["callback"])
        if helper is None:
            return worker.encode({"refused": "the grader lends no such helper now"}, {})
        args = worker.unpack(request["args"], tensors, self._no_handle)
        kwargs = worker.unpack(request["kwargs"], tensors, self._no_handle)
        if type(args) is not list or type(kwargs) is not dict:
            raise Malformed("a callback's arguments")
        try:
            value = helper(*args, **kwargs)
        except Exception as exc:  # the student's code called it with wrong arguments
            return worker.encode({"refused": clean(f"{type(exc).__name__}: {exc}")}, {})
        packer = worker.Packer()
        return worker.encode({"value": packer.pack(value)}, packer.tensors)

    def _no_handle(self, tree: dict) -> Any:
        raise Malformed("a handle in a callback")

    def _value(self, reply: dict, tensors: dict) -> Any:
        """A reply's value, or its exception raised here (the student's, or Stopped)."""
        if "raised" in reply:
            raised = reply["raised"]
            if type(raised) is not list or len(raised) not in (2, 3):
                self.end("stopped: the submission sent the grader a malformed frame (raised)")
                raise Stopped(self.ended)
            raise rebuilt(raised[0], raised[1])
        if "stopped" in reply:
            raise Stopped(clean(reply["stopped"]))
        try:
            return worker.unpack(reply["value"], tensors, lambda tree: _remote(self, tree))
        except ValueError as exc:
            self.end(
                f"stopped: the submission sent the grader a malformed frame ({clean(exc, 120)})"
            )
            raise Stopped(self.ended) from None

    def start(self) -> None:
        """Wait for the worker's first frame (it has imported torch)."""
        self.request("ready", {})

    def load(self, file: str, name: str) -> RemoteModule:
        """Import the student's file in the worker; raises the student's exception or Stopped."""
        reply, tensors = self.request("import", {"file": file, "name": name})
        if "raised" in reply and type(reply["raised"]) is list and len(reply["raised"]) == 3:
            kind, message, line = reply["raised"]
            exc = rebuilt(kind, message)
            exc.lineno = line if type(line) is int else 0  # SyntaxError's line, for the hint
            raise exc
        if "ok" not in reply:
            self._value(reply, tensors)
        return RemoteModule(self, Path(file).stem)

    def get(self, name: str) -> tuple[bool, Any]:
        """(found, value) of a name in the student's module."""
        reply, tensors = self.request("get", {"name": name})
        return ("missing" not in reply), (
            None if "missing" in reply else self._value(reply, tensors)
        )

    def call(self, handle: int, method: str | None, args: tuple, kwargs: dict) -> Any:
        """Call a remote object (or its method) with args; what it returned."""
        packer = worker.Packer(_handle_of)
        message = {
            "target": handle,
            "method": method,
            "args": packer.pack(list(args)),
            "kwargs": packer.pack(kwargs),
        }
        return self._value(*self.request("call", message, packer.tensors))

    def make(self, kind: str, args: tuple) -> Any:
        """Build one of worker.MADE's objects in the worker with args; a Remote of it."""
        packer = worker.Packer(_handle_of)
        message = {"kind": kind, "args": packer.pack(list(args))}
        return self._value(*self.request("make", message, packer.tensors))

    def lend(self, handle: int, attribute: str, helper: Callable[..., Any]) -> None:
        """Set attribute of a remote object to a proxy of helper, for this step only."""
        name = f"helper-{len(self.helpers)}"
        self.helpers[name] = helper
        reply, tensors = self.request(
            "lend", {"target": handle, "attribute": attribute, "helper": name}
        )
        if "ok" not in reply:
            self._value(reply, tensors)

    def close(self) -> None:
        """Say goodbye and end the worker."""
        if self.ended is None:
            self.transport.bye()
        self.end("closed")


def _remote(session: Session, tree: dict) -> Remote:
    kind = type(_identifier(tree["type"]), (Remote,), {})  # so that type(x).__name__ reads well
    return kind(session, tree)


def _handle_of(value: Any) -> dict:
    if isinstance(value, Remote):
        return {"handle": value._handle, "type": "", "name": None}
    raise TypeError(f"the grader cannot send a {type(value).__name__} to the worker")


class LocalTransport:
    """Frames to a Worker in this process (grade(): the tests and self-checks; no isolation).

    Every value still goes through the wire format, so the in-process grade sees what the
    sandboxed one sees.
    """

    def __init__(self, passthrough: tuple = ()):
        self.session: Session | None = None
        self.worker = worker.Worker(self._ask, passthrough)
        self.replies = [({"ready": True}, {})]

    def _ask(self, helper: str, args: tuple, kwargs: dict) -> Any:
        packer = worker.Packer()
        message = {
            "callback": helper,
            "args": packer.pack(list(args)),
            "kwargs": packer.pack(kwargs),
        }
        reply, tensors = _round_trip(
            self.session._serve(*_round_trip(worker.encode(message, packer.tensors)))
        )
        if "value" not in reply:
            raise RuntimeError(str(reply.get("refused")))
        return worker.unpack(reply["value"], tensors, lambda tree: None)

    def send(self, frame: bytes, deadline: float) -> None:
        self.replies.append(_round_trip(worker.encode(*self.worker.answer(*_round_trip(frame)))))

    def receive(self, deadline: float) -> tuple[dict, dict]:
        return self.replies.pop(0)

    def why_ended(self) -> str:
        return "the worker ended"

    def bye(self) -> None:
        pass

    def close(self) -> None:
        pass


def _round_trip(frame: bytes) -> tuple[dict, dict]:
    text_size, blob_size = HEADER.unpack(frame[: HEADER.size])
    body = frame[HEADER.size :]
    return worker.decode_body(body[:text_size], body[text_size : text_size + blob_size])


class ProcessTransport:
    """Frames through a child's standard input and output, each wait bounded by a deadline.

    A thread reads the child's frames into a queue (its header checked against the size caps),
    another drains its standard error (the first 4,000 characters kept, to explain a start that
    failed); kill(group) ends the child and everything it started.
    """

    def __init__(
        self,
        child: subprocess.Popen,
        kill: Callable[[], None],
        verdict: Callable[[], str | None] = lambda: None,
    ):
        self.child, self.kill = child, kill
        self.verdict = verdict  # why the grader itself ended the run (its memory), if it did
        self.frames: queue.Queue = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        pipe = self.child.stdout
        try:
            while True:
                header = pipe.read(HEADER.size)
                if len(header) < HEADER.size:
                    break
                text_size, blob_size = HEADER.unpack(header)
                if text_size > MAX_TEXT or blob_size > MAX_REPLY_TENSORS:
                    self.frames.put(Malformed(f"a frame of {text_size + blob_size} bytes"))
                    return
                text, blob = pipe.read(text_size), pipe.read(blob_size)
                if len(text) < text_size or len(blob) < blob_size:
                    break
                self.frames.put((text, blob))
        except (OSError, ValueError):  # the pipe closed under us: the end
            pass
        finally:
            pipe.close()  # here, not in close(): closing it under a blocked read would wait
        self.frames.put(EOFError())

    def _drain(self) -> None:
        pipe = self.child.stderr
        try:
            while chunk := pipe.read1(4096):
                if sum(map(len, self.errors)) < 4000:
                    self.errors.append(chunk.decode("utf-8", "replace"))
        except (OSError, ValueError):
            pass
        finally:
            pipe.close()

    def send(self, frame: bytes, deadline: float) -> None:
        if len(frame) <= SMALL_FRAME:  # the child has read all we sent before: the pipe has room
            try:
                self.child.stdin.write(frame)
                self.child.stdin.flush()
            except (OSError, ValueError):  # it is gone; the next receive says how
                pass
            return
        done = threading.Event()

        def write() -> None:
            try:
                self.child.stdin.write(frame)
                self.child.stdin.flush()
            except (OSError, ValueError):  # it is gone; the next receive says how
                pass
            done.set()

        threading.Thread(target=write, daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            raise TimeoutError

    def receive(self, deadline: float) -> tuple[dict, dict]:
        try:
            item = self.frames.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if isinstance(item, BaseException):
            self.frames.put(item)  # the end stays the end
            raise item
        return worker.decode_body(*item)

    def why_ended(self) -> str:
        """How the child ended, in words (waiting a little for its exit status)."""
        if said := self.verdict():
            return said
        try:
            code = self.child.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "the submission closed the grader's channel"
        if code < 0:
            import signal

            return f"the submission's process was killed by {signal.Signals(-code).name}"
        said = "".join(self.errors).strip().splitlines()
        tail = f": {clean(said[-1], 200)}" if said else ""
        return f"the submission's process exited with code {code}{tail}"

    def bye(self) -> None:
        try:
            self.send(worker.encode({"op": "bye"}, {}), time.monotonic() + 5)
            self.child.wait(timeout=5)
        except (TimeoutError, subprocess.TimeoutExpired):
            pass

    def close(self) -> None:
        self.kill()
        with contextlib.suppress(OSError):  # a broken pipe while flushing: closed all the same
            self.child.stdin.close()
