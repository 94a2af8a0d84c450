"""Run a function in a forked child with a time and memory limit; get back plain JSON data.

The parent must have imported torch without running a multi-threaded op (``engine.warm_up``
sets one thread), so a fork is safe and cheap: the child starts with torch loaded. The child's
stdout/stderr go to /dev/null (whatever the attempt prints never reaches our JSON), it runs in its
own session (so a runaway child and its own children can be killed together), and its one reply
is framed by a random token on a pipe, so bytes the attempt writes to stray descriptors are
ignored. Nothing but JSON crosses back: no pickles.
"""

from __future__ import annotations

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

MEMORY_HEADROOM = 1 << 30  # bytes of address space the child may add to what it inherits


@dataclass(frozen=True)
class Outcome:
    """What became of the child: ``data`` when it replied, else ``failure`` says how it ended."""

    data: dict | None
    failure: str = ""  # "timeout", "signal", "exit", "no-reply"
    detail: str = ""
    elapsed: float = 0.0


def _vm_size() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _child(work: Callable[[], dict], write_fd: int, token: str, timeout: float) -> None:
    """Child side: limits, silence, do the work, send one framed JSON reply, exit hard."""
    code = 0
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # Move the reply pipe to a high descriptor the attempt is unlikely to poke at.
        high = os.dup2(write_fd, 1000 + secrets.randbelow(500))
        # Close everything else the parent had open (a drill's watcher, the history database,
        # whatever stdout of `check --json` is): the attempt may only write to /dev/null.
        os.closerange(3, high)
        os.closerange(high + 1, 1 << 16)
        write_fd = high
        # Python-level streams may be wrappers of other descriptors (pytest's capture): rebind.
        sys.stdin = sys.__stdin__ = open(0, closefd=False)
        sys.stdout = sys.__stdout__ = open(1, "w", closefd=False, encoding="utf-8", errors="replace")
        sys.stderr = sys.__stderr__ = open(2, "w", closefd=False, encoding="utf-8", errors="replace")
        vm = _vm_size()
        if vm:
            limit = vm + MEMORY_HEADROOM
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        cpu = int(timeout) + 2  # a backstop should the parent die before it kills us
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        try:
            data = work()
        except BaseException as exc:  # the worker reports attempt errors itself; this is ours
            data = {"internal": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        payload = json.dumps(data, allow_nan=True)
        message = f"{token}{payload}{token}".encode()
        view = memoryview(message)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
    except BaseException:
        code = 70
    finally:
        os._exit(code)


def run(work: Callable[[], dict], timeout: float) -> Outcome:
    """Fork, run ``work()`` in the child, return its JSON reply or how the child ended."""
    token = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        _child(work, write_fd, token, timeout)
    os.close(write_fd)
    chunks: list[bytes] = []
    deadline = start + timeout
    timed_out = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:  # Ctrl-C in a drill: the child is in its own session, end it too
        _kill(pid)
        os.waitpid(pid, 0)
        raise
    finally:
        os.close(read_fd)
    if timed_out:
        _kill(pid)
    _, status = os.waitpid(pid, 0)
    elapsed = time.monotonic() - start
    if timed_out:
        return Outcome(None, "timeout", f"still running after {timeout:g} s", elapsed)
    data = _unframe(b"".join(chunks), token)
    if data is not None:
        return Outcome(data, elapsed=elapsed)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return Outcome(None, "signal", signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig), elapsed)
    return Outcome(None, "exit", str(os.WEXITSTATUS(status)), elapsed)


def _kill(pid: int) -> None:
    for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            target()
        except (ProcessLookupError, PermissionError):
            pass


def _unframe(raw: bytes, token: str) -> dict | None:
    """The JSON between the last pair of tokens; anything else on the pipe is ignored."""
    mark = token.encode()
    end = raw.rfind(mark)
    if end <= 0:
        return None
    begin = raw.rfind(mark, 0, end)
    if begin < 0:
        return None
    try:
        data: Any = json.loads(raw[begin + len(mark) : end])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
