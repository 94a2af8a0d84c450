"""Run a function in a forked child with a time and memory limit, talking to it in plain JSON.

The parent must have imported torch without running a multi-threaded op (``engine.warm_up``
sets one thread), so a fork is safe and cheap: the child starts with torch loaded. This module
knows nothing about exercises; it promises (SPEC §5):

- Nothing but JSON crosses: no pickles. The child's messages go up one pipe, the parent's
  answers come down another; both sit at high random descriptors, close-on-exec. Every message is
  a frame ``token kind length payload token`` with a random token, so bytes the attempt writes to
  stray descriptors (even to the pipe itself) are skipped, not read as a reply.
- The child may ask questions mid-run (``Channel.ask``); ``answer`` runs in the parent and its time
  is not counted: the timeout is the child's time only.
- Replies are bounded and validated: each message at most ``max_reply`` bytes and ``MAX_VALUES``
  values, everything read at most ``max_total`` (failure ``reply_too_large``); a reply too deep,
  not JSON, not an object or badly framed is failure ``malformed``, never an exception here. Reading stops at the final frame, so a grandchild that
  keeps the pipe open cannot turn a reply into a timeout.
- The attempt's stdout and stderr go to a pipe the parent drains into a bounded capture
  (``Outcome.stdout``: the first lines, then "… N more lines"), never to our own stdout.
- No process outlives ``run``: the grading process is a child subreaper while it runs, so
  orphaned grandchildren (even after ``setsid`` or a double fork) come back to it, and after every
  run — reply, failure, timeout or Ctrl-C — the child's whole tree is killed and reaped.
- The child, and the parent while it runs, are not dumpable. ``WEAKER`` names what is missing on
  this system (no ``prctl``: no subreaper nor non-dumpable; no ``/proc``: only the child's process
  group is killed).
"""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import json
import os
import resource
import secrets
import select
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from attnprep.grader.result import Words

MEMORY_HEADROOM = 1 << 30  # bytes of address space the child may add to what it inherits
MAX_REPLY = 64 << 20  # default cap on one message, in bytes
# Values in one message (commas, lists and objects counted): parsed, JSON's "0," becomes a
# 32-byte float and "[]," a 64-byte list, so this bounds what a message costs once decoded (with
# MAX_REPLY: about 64 MiB of bytes + 64 MiB of text + 128 MiB of objects). Replies today carry
# ~20,000 values.
MAX_VALUES = 2_000_000
CAPTURE_BYTES = 8 << 10  # the attempt's output kept: at most this many bytes …
CAPTURE_LINES = 40  # … and this many lines
LOST_CHANNEL = 71  # the child's exit code when the attempt closed or replaced the channel's descriptors
KILL_GRACE = 2.0  # seconds spent killing a tree that keeps forking before giving up

_PR_SET_PDEATHSIG = 1
_PR_GET_DUMPABLE = 3
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37

_TOKEN_BYTES = 16  # the token is 32 hex characters
_LENGTH_DIGITS = 12
_HEADER = 2 * _TOKEN_BYTES + 1 + _LENGTH_DIGITS  # token, kind, zero-padded decimal length
QUESTION, REPLY, ANSWER = b"Q", b"R", b"A"


class Malformed(ValueError):
    """Raised by an ``answer`` function for a question it cannot accept: ``run`` then ends with
    the failure ``malformed`` (the child's fault), not ``answer_error`` (the answer's bug)."""


@dataclass(frozen=True)
class Outcome:
    """What became of the child: ``data`` when it replied, else ``failure`` says how it ended."""

    data: dict | None
    failure: str = ""  # "timeout", "signal", "exit", "malformed", "reply_too_large", "answer_error"
    detail: str = ""  # one line
    elapsed: float = 0.0  # the child's time: time spent in ``answer`` is not counted
    stdout: str = ""  # the child's stdout and stderr, interleaved, bounded
    # a timeout of a child the machine starved: runnable, short of its time of CPU, at the wall
    # clock's limit (STARVED_WALL times its time). What it would have said depends on the load
    starved: bool = False


# --- what this system offers ------------------------------------------------------------------


class _Prctl:
    """Linux's prctl(2) through libc (ctypes: no new dependency)."""

    def __init__(self, function):
        self.function = function

    def __call__(self, option: int, arg: int = 0) -> int:
        return self.function(option, ctypes.c_ulong(arg), 0, 0, 0)

    def subreaper(self) -> int:
        value = ctypes.c_int(0)
        self.function(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
        return value.value


def _load_prctl() -> _Prctl | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_int
    value = ctypes.c_int(-1)
    if function(_PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0) != 0:
        return None  # a kernel without it (before 3.4), or a sandbox that forbids prctl
    return _Prctl(function)


_prctl = _load_prctl()
_HAS_PROC = os.path.isdir("/proc/self") and os.path.exists(f"/proc/{os.getpid()}/stat")
_HAS_PIDFD = hasattr(os, "pidfd_open")

# What is weaker here than on Linux (empty there). "subreaper": an orphaned grandchild that
# called setsid is not found and outlives the check; "dumpable": the grading process and the child
# stay dumpable; "proc": without /proc only the child's process group is killed.
WEAKER: tuple[str, ...] = (
    (() if _prctl else ("subreaper", "dumpable")) + (() if _HAS_PROC else ("proc",))
)


# --- hiding files from the child (Landlock) --------------------------------------------------

_LANDLOCK_CREATE, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT = 444, 445, 446  # the same on every Linux arch
_LANDLOCK_RULE_PATH_BENEATH = 1
_READ_FILE, _READ_DIR, _REFER = 1 << 2, 1 << 3, 1 << 13
_READ = _READ_FILE | _READ_DIR
# writing: write, remove a file or folder, make a char device, folder, file, socket, fifo, block
# device, symlink (bits 1, 4-12); truncate (14, ABI 3) is added when the kernel has it
_WRITE = (1 << 1) | sum(1 << b for b in range(4, 13))
_TRUNCATE = 1 << 14
_FILE_RIGHTS = (1 << 0) | (1 << 1) | _READ_FILE | _TRUNCATE  # what a rule on a file (not a folder) may grant
_PR_SET_NO_NEW_PRIVS = 38


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock():
    """(syscall, ABI version) when this kernel has Landlock, else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    abi = syscall(_LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # the ABI version
    return (syscall, int(abi)) if abi >= 2 else None  # 2: REFER, without which moving files is always denied


_landlock_abi = _landlock()
HIDES_FILES = _landlock_abi is not None  # False: hide() does nothing here (no Landlock in this kernel)
if not HIDES_FILES:
    WEAKER += ("landlock",)  # the programs the attempt runs can read the solutions and write the history


def hide(unreadable=(), unwritable=()) -> bool:
    """From now on, for this process and everything it forks or executes (Landlock: it cannot be
    undone, and a program the attempt runs, such as ``python -m attnprep solution``, inherits it):
    the files under each ``unreadable`` folder cannot be read, nothing under each ``unwritable``
    folder can be written, created or removed. Everything else stays as it was, except that the
    folders on the way down to these (``/``, ``/home`` …) cannot be written into directly. Listing
    any folder stays allowed. Returns whether the rules are in force. Call it in the child only."""
    if _landlock_abi is None:
        return False
    syscall, abi = _landlock_abi
    write = _WRITE | (_TRUNCATE if abi >= 3 else 0)
    handled = _READ | write | _REFER
    denied: dict[str, int] = {}
    for folders, rights in ((unreadable, _READ_FILE), (unwritable, write)):
        for folder in folders:
            if os.path.isdir(folder):
                path = os.path.realpath(folder)
                denied[path] = denied.get(path, 0) | rights
    if not denied:
        return True
    ways = {os.sep}  # the folders on the way down to a protected one
    for path in denied:
        parts = [p for p in path.split(os.sep) if p]
        ways.update(os.sep + os.sep.join(parts[:i]) for i in range(1, len(parts)))
    attr = ctypes.c_uint64(handled)
    ruleset = syscall(_LANDLOCK_CREATE, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    ruleset = int(ruleset)

    def allow(path: str, access: int, folder: bool) -> bool:
        access &= handled if folder else _FILE_RIGHTS & handled
        if not access:
            return True
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            return True  # gone since it was listed: nothing to allow
        try:
            rule = _PathBeneath(access, fd)
            return syscall(_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
                           ctypes.byref(rule), ctypes.c_uint32(0)) == 0
        finally:
            os.close(fd)

    try:
        # listing anywhere, and moving files where both ends allow it (Landlock never lets a
        # move give a file rights it did not have)
        ok = allow(os.sep, _READ_DIR | _REFER, True)
        todo = [os.sep]
        while todo:
            above = todo.pop()
            try:
                names = os.listdir(above)
            except OSError:
                names = []
            for name in names:
                path = os.path.join(above, name)
                if path in denied:
                    ok = allow(path, handled & ~denied[path], True) and ok
                elif path in ways:
                    todo.append(path)
                elif not os.path.islink(path):  # a link is followed to its target, which has its own rule
                    ok = allow(path, handled, os.path.isdir(path)) and ok
        if not ok or _prctl_raw(_PR_SET_NO_NEW_PRIVS, 1) != 0:
            return False
        return syscall(_LANDLOCK_RESTRICT, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)


def _prctl_raw(option: int, arg: int) -> int:
    try:
        function = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return -1
    return function(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0))


# --- the child's side ---------------------------------------------------------------------------


class Channel:
    """The child's end: ``ask`` sends a question to the parent and waits for its answer."""

    def __init__(self, send_fd: int, receive_fd: int, token: bytes):
        self._send_fd = send_fd
        self._receive_fd = receive_fd
        self._token = token
        self._pipes = self._identities()

    def _identities(self) -> tuple | None:
        try:
            return tuple((st.st_dev, st.st_ino) for st in map(os.fstat, (self._send_fd, self._receive_fd)))
        except OSError:
            return None

    def intact(self) -> bool:
        """Whether the channel's descriptors are still the grader's pipes (the attempt may have
        closed them, or put a pipe of its own in their place with dup2)."""
        return self._pipes is not None and self._identities() == self._pipes

    def ask(self, question: dict) -> dict:
        if not self.intact():
            raise ConnectionError("the grader's channel was closed or replaced")
        self._send(QUESTION, json.dumps(question, allow_nan=True).encode())
        kind, payload = self._receive()
        if kind != ANSWER:
            raise ConnectionError("the grader sent no answer")
        answer = json.loads(payload)
        if not isinstance(answer, dict):
            raise ConnectionError("the grader's answer is not an object")
        return answer

    def _send(self, kind: bytes, payload: bytes) -> None:
        view = memoryview(_frame(self._token, kind, payload))
        while view:
            view = view[os.write(self._send_fd, view):]

    def _receive(self) -> tuple[bytes, bytes]:
        header = self._read(_HEADER)
        if header[: len(self._token)] != self._token or not header[-_LENGTH_DIGITS:].isdigit():
            raise ConnectionError("a bad frame from the grader")
        length = int(header[-_LENGTH_DIGITS:])
        body = self._read(length + len(self._token))
        if body[length:] != self._token:
            raise ConnectionError("a bad frame from the grader")
        return header[len(self._token) : len(self._token) + 1], body[:length]

    def _read(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            chunk = os.read(self._receive_fd, min(n - got, 1 << 20))
            if not chunk:
                raise ConnectionError("the grader closed the channel")
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)


def _frame(token: bytes, kind: bytes, payload: bytes) -> bytes:
    return b"".join((token, kind, b"%0*d" % (_LENGTH_DIGITS, len(payload)), payload, token))


def _vm_size() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


STARVED_WALL = 3.0  # a child the machine starved of CPU gets at most this many times its time, on the wall clock


def _starved(pid: int, timeout: float, elapsed: float) -> float:
    """Seconds more for a child whose time ran out on the wall clock while it was runnable (state R:
    working, not sleeping or waiting) and had used less than its time of CPU: on a loaded machine a
    slow but finite attempt is given its time as CPU time, up to STARVED_WALL times it on the wall
    clock. 0 when it had its time (an endless loop), waits (a sleep, a lock), or Linux's /proc does
    not say."""
    fields = _stat_fields(pid)
    try:
        state, cpu = fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (TypeError, ValueError, IndexError):
        return 0.0
    if state != b"R" or cpu >= 0.9 * timeout or elapsed >= STARVED_WALL * timeout:
        return 0.0
    return min(max(timeout - cpu, 0.5), STARVED_WALL * timeout - elapsed)


def _short_of_cpu(pid: int, timeout: float) -> bool:
    """Whether the child ``pid`` is runnable (state R) and has used less than its time of CPU: when
    its wall clock's limit is reached so, the machine starved it (see :func:`_starved`)."""
    fields = _stat_fields(pid)
    try:
        state, cpu = fields[0], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (TypeError, ValueError, IndexError):
        return False
    return state == b"R" and cpu < 0.9 * timeout


class Starved(BaseException):
    """A help on top of a result (a refinement of the divergence's line) whose child the machine
    starved (``Outcome.starved``): what it would have said is not known, and saying what is known
    without it would say something else than on a quiet machine. Not an ``Exception``: the
    refinements' guards that turn an exception of ours into "the line as it was" let it through to
    the one that says nothing (``engine._Tracing.divergence``)."""


def _descriptor_limit() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def _high_descriptors(keep: set[int]) -> tuple[int, int]:
    """Two distinct random descriptors in the upper half of what this process may open."""
    top = min(_descriptor_limit(), 1 << 16)
    low = max(top // 2, 10)
    picks: list[int] = []
    while len(picks) < 2:
        fd = low + secrets.randbelow(max(top - low, 2))
        if fd not in picks and fd not in keep:
            picks.append(fd)
    return picks[0], picks[1]


def _child(work: Callable[[Channel], dict], send_fd: int, receive_fd: int, output_fd: int,
           token: bytes, timeout: float, parent: int) -> None:
    """Child side: limits, output to the capture pipe, do the work, send the final frame, exit."""
    code = 0
    channel = None
    try:
        os.setsid()
        # What the child prints is the attempt's: no fault dump of the interpreter's own frames on a
        # crash, even when the process that forks left faulthandler on (a test runner does).
        faulthandler.disable()
        if _prctl:
            # Not dumpable: no core files, and only a privileged process can read its memory or
            # descriptors through /proc or ptrace it. (As root that includes the attempt itself;
            # what holds then is the flag, which tests read back with PR_GET_DUMPABLE.)
            _prctl(_PR_SET_DUMPABLE, 0)
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the grading process died: die too
            if os.getppid() != parent:
                os._exit(code)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        # The channel moves to high random descriptors the attempt is unlikely to poke at,
        # close-on-exec so that a program it runs does not inherit them.
        high_send, high_receive = _high_descriptors({0, 1, 2, send_fd, receive_fd, output_fd, devnull})
        os.dup2(send_fd, high_send, inheritable=False)
        os.dup2(receive_fd, high_receive, inheritable=False)
        # Close everything else the parent had open (a drill's watcher, the history database,
        # whatever stdout of `check --json` is): the attempt writes to the capture pipe only.
        first, second = sorted((high_send, high_receive))
        os.closerange(3, first)
        os.closerange(first + 1, second)
        os.closerange(second + 1, max(_descriptor_limit(), 1 << 16))
        # Python-level streams may be wrappers of other descriptors (pytest's capture): rebind.
        # Line-buffered, so what was printed before a crash or a timeout's SIGKILL is kept.
        sys.stdin = sys.__stdin__ = open(0, closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", buffering=1, closefd=False, encoding="utf-8", errors="replace")
        sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False, encoding="utf-8", errors="backslashreplace")
        vm = _vm_size()
        if vm:
            limit = vm + MEMORY_HEADROOM
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        cpu = int(timeout) + 2  # a backstop should the parent die before it kills us
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        channel = Channel(high_send, high_receive, token)
        try:
            data = work(channel)
        except BaseException as exc:  # the worker reports attempt errors itself; this is ours
            data = {"internal": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        try:
            payload = json.dumps(data, allow_nan=True).encode()
        except (TypeError, ValueError, RecursionError) as exc:
            payload = json.dumps({"internal": f"the reply is not JSON: {type(exc).__name__}: {exc}"}).encode()
        if not channel.intact():  # a reply would go nowhere, or into the attempt's own pipe
            code = LOST_CHANNEL
        else:
            channel._send(REPLY, payload)
    except BaseException:
        code = LOST_CHANNEL if channel is not None and not channel.intact() else 70
    finally:
        os._exit(code)


# --- the parent's side --------------------------------------------------------------------------


class _Failure(Exception):
    def __init__(self, failure: str, detail: str):  # detail: Words the report says in the language
        super().__init__(detail)
        self.failure = failure
        self.detail = detail


class _Frames:
    """Cuts frames out of what the child's pipe delivers; bytes outside a frame are skipped."""

    def __init__(self, token: bytes, max_reply: int, max_total: int):
        self.token = token
        self.max_reply = max_reply
        self.max_total = max_total
        self.buffer = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> list[tuple[bytes, Any]]:
        self.total += len(chunk)
        if self.total > self.max_total:
            size = _size(self.max_total)
            raise _Failure("reply_too_large", Words(f"more than {size} sent in all", "sandbox.sent_in_all", size=size))
        self.buffer += chunk
        frames = []
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)
            if frame[0] == REPLY:
                return frames

    def _next(self) -> tuple[bytes, Any] | None:
        buf, token = self.buffer, self.token
        start = buf.find(token)
        if start < 0:
            del buf[: max(len(buf) - len(token) + 1, 0)]  # keep a token's possible beginning
            return None
        del buf[:start]
        if len(buf) < _HEADER:
            return None
        kind = bytes(buf[len(token) : len(token) + 1])
        digits = bytes(buf[len(token) + 1 : _HEADER])
        if kind not in (QUESTION, REPLY) or not digits.isdigit():
            raise _Failure("malformed", Words("a frame with a bad header", "sandbox.bad_header"))
        length = int(digits)
        if length > self.max_reply:
            size, most = _size(length), _size(self.max_reply)
            raise _Failure("reply_too_large", Words(f"a message of {size} (at most {most})", "sandbox.message_size", size=size, most=most))
        end = _HEADER + length
        if len(buf) < end + len(token):
            return None
        if buf[end : end + len(token)] != token:
            raise _Failure("malformed", Words("a frame that does not end where its length says", "sandbox.bad_end"))
        values = sum(buf.count(mark, _HEADER, end) for mark in (b",", b"[", b"{"))
        if values > MAX_VALUES:
            raise _Failure("reply_too_large", Words(f"{values:,} values in one message (at most {MAX_VALUES:,})",
                                                    "sandbox.values", values=values, most=MAX_VALUES))
        view = memoryview(buf)
        try:
            text = str(view[_HEADER:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise _Failure("malformed", Words(f"not UTF-8 at byte {exc.start}", "sandbox.not_utf8", byte=exc.start)) from None
        finally:
            view.release()
        del buf[: end + len(token)]
        return kind, _decode(text)


def _decode(text: str) -> dict:
    try:
        data = json.loads(text)
    except RecursionError:
        raise _Failure("malformed", Words("JSON nested too deep", "sandbox.too_deep")) from None
    except ValueError as exc:
        why = str(exc).splitlines()[0][:120]  # json's own words, shown as they are
        raise _Failure("malformed", Words(f"not JSON ({why})", "sandbox.not_json", why=why)) from None
    if not isinstance(data, dict):
        raise _Failure("malformed", Words(f"a JSON {type(data).__name__}, not an object", "sandbox.not_object",
                                          type=type(data).__name__))
    return data


def _size(n: int) -> Words:
    if n >= 1 << 20:
        return Words(f"{n / (1 << 20):.0f} MiB", "sandbox.mib", n=round(n / (1 << 20)))
    return Words(f"{n:,} bytes", "sandbox.bytes", n=n)


class _Capture:
    """The first lines of the child's output; the rest is only counted."""

    def __init__(self, max_bytes: int = CAPTURE_BYTES, max_lines: int = CAPTURE_LINES):
        self.max_bytes = max_bytes
        self.max_lines = max_lines
        self.kept = bytearray()
        self.total = 0
        self.newlines = 0
        self.last = b"\n"

    def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        if len(self.kept) < self.max_bytes:
            self.kept += chunk[: self.max_bytes - len(self.kept)]
        self.total += len(chunk)
        self.newlines += chunk.count(b"\n")
        self.last = chunk[-1:]

    def text(self) -> str:
        kept = bytes(self.kept)
        cut = len(kept)
        at = -1
        for _ in range(self.max_lines):
            at = kept.find(b"\n", at + 1)
            if at < 0:
                break
        if at >= 0 and at + 1 < len(kept):
            cut = at + 1  # max_lines lines
        elif self.total > len(kept) and 0 <= kept.rfind(b"\n") < len(kept) - 1:
            cut = kept.rfind(b"\n") + 1  # whole lines only, unless one line fills the capture
        shown = kept[:cut]
        text = shown.decode("utf-8", errors="replace")
        if self.total == cut:
            return text
        lines = self.newlines + (self.last != b"\n")
        more = lines - shown.count(b"\n") - (not shown.endswith(b"\n"))
        if not shown.endswith(b"\n"):
            text += "…\n"
        if more > 0:
            text += f"… {more} more line{'s' if more != 1 else ''}\n"
        return text


def _widen(fd: int) -> None:
    """A 1 MiB pipe buffer where Linux allows it: a reply of a few MiB crosses in fewer wake-ups."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError):
        pass


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/<pid>/stat after the command's name (the state first), or None."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 4096)
        finally:
            os.close(fd)
        return raw[raw.rindex(b")") + 2 :].split()
    except (OSError, ValueError):
        return None


def _stat(pid: int | str) -> tuple[int, int, bytes, int] | None:
    """(parent pid, session id, state, start time in clock ticks) from /proc/<pid>/stat."""
    fields = _stat_fields(pid)
    try:
        return None if fields is None else (int(fields[1]), int(fields[3]), fields[0], int(fields[19]))
    except (ValueError, IndexError):
        return None


def _process_table() -> dict[int, tuple[int, int, bytes, int]] | None:
    """pid -> ``_stat`` of every process; None without /proc."""
    if not _HAS_PROC:
        return None
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            row = _stat(name)
            if row is not None:
                table[int(name)] = row
    return table


def _tree(table: dict, me: int, child: int, born: int | None) -> set[int]:
    """The child, its session, our children born since the fork (orphans of the attempt that
    came back to the subreaper), and all their descendants."""
    kids: dict[int, list[int]] = {}
    roots = {child}
    for pid, (ppid, sid, _, start) in table.items():
        kids.setdefault(ppid, []).append(pid)
        if sid == child or (ppid == me and born is not None and start >= born):
            roots.add(pid)
    tree, todo = set(), [p for p in roots if p in table]
    while todo:
        pid = todo.pop()
        if pid in tree or pid == me:
            continue
        tree.add(pid)
        todo.extend(kids.get(pid, ()))
    return tree


def _end_tree(child: int, born: int | None, pidfd: int) -> None:
    """SIGKILL the child's whole tree and reap what comes back to us; repeat until it is gone."""
    me = os.getpid()
    try:
        os.killpg(child, signal.SIGKILL)
    except OSError:
        pass
    if _ended_alone(child, pidfd):
        return
    give_up = time.monotonic() + KILL_GRACE
    pause = 0.0005
    while True:
        table = _process_table()
        if table is None:  # no /proc: the child and its process group are all we can reach
            _kill(child)
            _reap(child, block=True)
            return
        tree = _tree(table, me, child, born)
        if not tree:
            return
        for pid in tree:
            _kill(pid)
        if child in tree and pidfd >= 0:  # wait for the usual case, the child alone, to die
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            poller.poll(KILL_GRACE * 1000)
        for pid in tree:
            if table[pid][0] == me:
                _reap(pid)
        if time.monotonic() > give_up:
            return
        if tree - {child}:
            time.sleep(pause)
            pause = min(pause * 2, 0.02)


def _ended_alone(child: int, pidfd: int) -> bool:
    """The usual end of a run, without reading the process table: the child killed, dead and
    reaped, and this process left with no child at all. As a subreaper (the grading process is one
    while it runs), every process of the child's tree still alive once the child is dead has come
    back to us (the kernel moves a dying process's children before it reports the death); with no
    child of ours left, the tree is gone. False when that cannot be said here (no subreaper, no
    pidfd, a child of ours still there): the caller then reads the table."""
    if _prctl is None or pidfd < 0 or not hasattr(os, "waitid") or not _prctl.subreaper():
        return False
    _kill(child)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    if not poller.poll(KILL_GRACE * 1000):
        return False
    _reap(child)  # (served to its end, it may be reaped already)
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True  # no child left, living or dead
    return False


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid: int, block: bool = False) -> int | None:
    try:
        done, status = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return None
    return status if done else None


class _Grading:
    """Subreaper and non-dumpable for the duration of a run; restored afterwards."""

    def __enter__(self):
        self.dumpable = self.subreaper = None
        if _prctl:
            self.subreaper = _prctl.subreaper()
            self.dumpable = _prctl(_PR_GET_DUMPABLE)
            _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            _prctl(_PR_SET_DUMPABLE, 0)
        return self

    def __exit__(self, *exc):
        if _prctl:
            _prctl(_PR_SET_CHILD_SUBREAPER, self.subreaper or 0)
            if self.dumpable is not None and self.dumpable >= 0:
                _prctl(_PR_SET_DUMPABLE, 1 if self.dumpable else 0)


def run(work: Callable[[Channel], dict], timeout: float, answer: Callable[[dict], dict] | None = None,
        *, max_reply: int = MAX_REPLY, max_total: int | None = None) -> Outcome:
    """Fork, run ``work(channel)`` in the child, answer its questions, return its final reply.

    The timeout counts the child's time: the clock stops while ``answer`` runs. ``answer`` may
    raise ``Malformed`` for a question it rejects (failure ``malformed``); any other exception
    from it is failure ``answer_error``. ``max_total`` (default 4 × ``max_reply``) bounds every
    byte read from the child's pipe, frames and stray bytes alike.

    One run at a time per process: while it runs, every process that comes back to this one as an
    orphan is taken for the attempt's and killed with its tree.
    """
    with start(work, timeout, answer, max_reply=max_reply, max_total=max_total) as child:
        return child.finish()


def run_help(work: Callable[[Channel], dict], timeout: float, answer: Callable[[dict], dict] | None = None) -> Outcome:
    """:func:`run` for a help on top of a result (a refinement of the divergence's line): a child the
    machine starved (``Outcome.starved``) raises :class:`Starved`, what it would have said depending on
    the load."""
    outcome = run(work, timeout, answer)
    if outcome.starved:
        raise Starved
    return outcome


def _fork() -> int:
    """``os.fork()``, with the objects that exist now kept out of the cyclic collector's reach for
    the fork (``gc.freeze``, as CPython's documentation advises before a fork): the child's
    collections do not walk, and so do not write to and copy, the heap it shares with this process.
    This process takes them back at once (``gc.unfreeze``), into its oldest generation: they are
    collected as before, at its next full collection. Measured: 120 corpus grades in one process
    (outputs kept, as the test suite grades), 4–10% less CPU in all (benchmarks/README.md, tenth
    session), the most of it this process's own: its young collections no longer re-walk what it
    had made before the fork."""
    if gc.get_freeze_count():  # someone froze objects on purpose (attnprep's command line): leave them so
        return os.fork()
    gc.freeze()
    try:
        pid = os.fork()
    except BaseException:
        gc.unfreeze()
        raise
    if pid:
        gc.unfreeze()
    return pid


def start(work: Callable[[Channel], dict], timeout: float, answer: Callable[[dict], dict] | None = None,
          *, max_reply: int = MAX_REPLY, max_total: int | None = None) -> Running:
    """:func:`run`, in two halves: fork now, and let the grading process do other work while the
    child runs (a question the child asks waits for :meth:`Running.finish`, which serves it to its
    end; the time it waits is not its time). Use it as a context manager: leaving it ends the child's tree whatever happened."""
    return Running(work, timeout, answer, max_reply, max_total if max_total is not None else 4 * max_reply)


class Running:
    """A child started by :func:`start` (see there)."""

    def __init__(self, work, timeout: float, answer, max_reply: int, max_total: int):
        self.timeout = timeout
        self.outcome: Outcome | None = None
        token = secrets.token_hex(_TOKEN_BYTES).encode()
        sys.stdout.flush()
        sys.stderr.flush()
        self._grading = _Grading().__enter__()
        try:
            me = os.getpid()
            up_read, up_write = os.pipe()
            down_read, down_write = os.pipe()
            out_read, out_write = os.pipe()
            _widen(up_write)
            self.start = time.monotonic()
            pid = _fork()
            if pid == 0:  # child
                _child(work, up_write, down_read, out_write, token, timeout, me)
            row = _stat(pid) if _HAS_PROC else None
            self.pid, self.born = pid, row[3] if row else None  # the clock tick of the fork: later children are the attempt's
            for fd in (up_write, down_read, out_write):
                os.close(fd)
            self.session = _Session(pid, token, up_read, down_write, out_read, answer, max_reply, max_total)
        except BaseException:
            self._grading.__exit__(None, None, None)
            raise
        self._ended = False

    def finish(self) -> Outcome:
        """Serve the child to its final reply (or its failure, or the timeout), end its tree."""
        if self.outcome is None:
            try:
                data, failure, detail, elapsed = self.session.serve(self.start, self.timeout, self._waited())
            finally:
                self.close()
            self.outcome = Outcome(data, failure, detail, elapsed, self.session.capture.text(), self.session.starved)
        return self.outcome

    def _waited(self) -> float:
        """Seconds the child spent waiting for us before :meth:`finish`: when it has written to us
        (a question, or its reply) while we did other work, the wall time since the fork less its
        own CPU time is not its time (0 when it has not, or /proc does not say)."""
        if not select.select([self.session.up], [], [], 0)[0]:
            return 0.0
        fields = _stat_fields(self.pid)
        try:
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (TypeError, ValueError, IndexError):
            return 0.0
        return max(time.monotonic() - self.start - cpu, 0.0)

    def close(self) -> None:
        """End the child's tree and close the pipes (once; a reply not served yet is dropped)."""
        if self._ended:
            return
        self._ended = True
        # A second Ctrl-C waits until the tree is gone rather than cutting the cleanup short.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if hasattr(signal, "pthread_sigmask") else None
        try:
            _end_tree(self.pid, self.born, self.session.pidfd)
        finally:
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
            self.session.drain_output()
            self.session.close()
            self._grading.__exit__(None, None, None)

    def __enter__(self) -> Running:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Session:
    def __init__(self, pid, token, up, down, out, answer, max_reply, max_total):
        self.pid = pid
        self.up, self.down, self.out = up, down, out
        self.answer = answer
        self.frames = _Frames(token, max_reply, max_total)
        self.token = token
        self.capture = _Capture()
        self.pending = b""  # an answer being written down
        self.status: int | None = None  # the child's wait status once it ended on its own
        self.starved = False  # it ran out of its time starved by the machine (Outcome.starved)
        self.pidfd = -1
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(pid)
            except OSError:
                self.pidfd = -1
        os.set_blocking(self.down, False)
        os.set_blocking(self.out, False)
        os.set_blocking(self.up, False)

    def serve(self, start: float, timeout: float, waited: float = 0.0) -> tuple[dict | None, str, str, float]:
        """Read the child's frames, answer its questions, until its reply, its failure or its time
        is up; ``waited``: seconds before this call that were not its time (see Running._waited)."""
        deadline = start + timeout + waited
        paused = waited
        data: dict | None = None
        try:
            while data is None:
                now = time.monotonic()
                if now >= deadline:
                    more = _starved(self.pid, timeout, now - start - paused)
                    if more:  # a busy machine gave it less than its time: the rest of its time, on its CPU clock
                        deadline = now + more
                        continue
                    self.starved = _short_of_cpu(self.pid, timeout)
                    return None, "timeout", f"still running after {timeout:g} s", now - start - paused
                poller = select.poll()
                if self.up >= 0:
                    poller.register(self.up, select.POLLIN)
                if self.out >= 0:
                    poller.register(self.out, select.POLLIN)
                if self.pending:
                    poller.register(self.down, select.POLLOUT)
                if self.pidfd >= 0 and self.status is None:
                    poller.register(self.pidfd, select.POLLIN)
                wait = deadline - now if self.pidfd >= 0 else min(deadline - now, 0.05)
                events = dict(poller.poll(max(wait, 0.0) * 1000))
                if self.out in events:
                    self._read_output()
                if self.pending and self.down in events:
                    self._write_answer()
                if self.up in events:
                    for kind, message in self._read_frames():
                        if kind == REPLY:
                            data = message
                            break
                        asked = time.monotonic()
                        self.pending += self._answer(message)
                        paused += time.monotonic() - asked
                        deadline += time.monotonic() - asked
                if data is None and self.status is None and (self.pidfd in events or self.pidfd < 0):
                    self.status = _reap(self.pid)
                if data is None and self.status is not None:
                    data = self._last_frames()  # what it wrote before ending, still in the pipe
                    if data is None:
                        return self._ended(time.monotonic() - start - paused)
        except _Failure as failure:
            return None, failure.failure, failure.detail, time.monotonic() - start - paused
        return data, "", "", time.monotonic() - start - paused

    def _ended(self, elapsed: float) -> tuple[dict | None, str, str, float]:
        status = self.status or 0
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            return None, "signal", name, elapsed
        if os.WEXITSTATUS(status) == LOST_CHANNEL:
            return None, "malformed", "the grader's channel was closed or replaced in the attempt's process", elapsed
        return None, "exit", str(os.WEXITSTATUS(status)), elapsed

    def _read_frames(self) -> list[tuple[bytes, Any]]:
        frames = []
        while True:
            try:
                chunk = os.read(self.up, 1 << 20)
            except BlockingIOError:
                return frames
            if not chunk:
                os.close(self.up)
                self.up = -1
                return frames
            frames += self.frames.feed(chunk)
            if frames:  # the reply, or questions to answer before reading on
                return frames

    def _last_frames(self) -> dict | None:
        if self.up < 0:
            return None
        for kind, message in self._read_frames():
            if kind == REPLY:
                return message
        return None

    def _answer(self, question: dict) -> bytes:
        if self.answer is None:
            raise _Failure("malformed", Words("a question, and nobody to answer it", "sandbox.no_answerer"))
        try:
            reply = self.answer(question)
            payload = json.dumps(reply, allow_nan=True).encode()
        except Malformed as exc:
            said = exc.args[0] if exc.args and isinstance(exc.args[0], Words) else str(exc).splitlines()[0] if str(exc) else \
                Words("a question rejected", "sandbox.rejected")
            raise _Failure("malformed", said) from None
        except Exception as exc:
            raise _Failure("answer_error", f"{type(exc).__name__}: {exc}".splitlines()[0]) from None
        return _frame(self.token, ANSWER, payload)

    def _write_answer(self) -> None:
        try:
            written = os.write(self.down, self.pending)
        except BlockingIOError:
            return
        except BrokenPipeError:  # the child is gone; its status says how
            written = len(self.pending)
        self.pending = self.pending[written:]

    def _read_output(self, reads: int = 1) -> None:
        for _ in range(reads):
            try:
                chunk = os.read(self.out, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                os.close(self.out)
                self.out = -1
                return
            self.capture.feed(chunk)

    def drain_output(self) -> None:
        """What is left in the output pipe (the writers are dead by now): bounded, never blocks."""
        if self.out >= 0:
            self._read_output(reads=64)

    def close(self) -> None:
        for fd in (self.up, self.down, self.out, self.pidfd):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.up = self.down = self.out = self.pidfd = -1
