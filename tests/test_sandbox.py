"""The sandbox on its own (SPEC §5): the two-way channel, bounded and validated replies, the
attempt's captured output, no process left after any ending, non-dumpable while grading; then each
hostile behaviour end to end through `attnprep check --json`.

Most tests drive ``sandbox.run`` with small ``work`` functions and need no torch. Forged frames are
written with the channel's private fields (``_send``, ``_send_fd``, ``_token``): an attempt can
reach them too (gc, frames), which is why the parent validates everything it reads.

We run as root here, so /proc permissions would not stop a same-user process anyway: what the
tests check of "non-dumpable" is the flag itself (PR_GET_DUMPABLE), in the child and in the parent
while it grades.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attnprep.grader import sandbox

HOSTILE = Path(__file__).parent / "corpus" / "hostile"
LINUX = not set(sandbox.WEAKER) - {"landlock"}  # prctl and /proc: the full promise (Landlock is marked per test)
needs_linux = pytest.mark.skipif(not LINUX, reason=f"weaker here: {sandbox.WEAKER}")

PR_GET_DUMPABLE = 3
PR_GET_CHILD_SUBREAPER = 37


def _dumpable() -> int:
    return ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0)


def _subreaper() -> int:
    value = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(value), 0, 0, 0)
    return value.value


def _exists(pid: int) -> bool:
    """A process (zombie or not) with this pid; after ``run`` none of the attempt's may remain."""
    return os.path.exists(f"/proc/{pid}")


def _note_pid(pidfile: Path) -> None:
    with open(pidfile, "a", encoding="ascii") as f:
        f.write(f"{os.getpid()}\n")


def _pids(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text(encoding="ascii").split()] if pidfile.exists() else []


def _wait_for_pids(pidfile: Path, n: int, seconds: float = 10.0) -> None:
    give_up = time.monotonic() + seconds
    while len(_pids(pidfile)) < n and time.monotonic() < give_up:
        time.sleep(0.01)


def _spawn(pidfile: Path) -> None:
    """From the child: a grandchild that calls setsid and keeps every descriptor, and a
    double-forked daemon that closes them; both would sleep for a minute."""
    if os.fork() == 0:
        os.setsid()
        _note_pid(pidfile)
        time.sleep(60)
        os._exit(0)
    middle = os.fork()
    if middle == 0:
        os.setsid()
        if os.fork() == 0:
            os.closerange(3, 1 << 16)
            _note_pid(pidfile)
            time.sleep(60)
            os._exit(0)
        os._exit(0)
    os.waitpid(middle, 0)
    _wait_for_pids(pidfile, 2)


# --- the channel --------------------------------------------------------------------------------


def test_questions_are_answered_in_the_parent_and_the_last_value_is_the_reply():
    seen = []

    def work(channel):
        first = channel.ask({"n": 1})
        second = channel.ask({"n": first["n"] + 1, "blob": "q" * (1 << 20)})  # > a pipe's buffer
        return {"answers": [first["n"], second["n"], len(second["blob"])], "in_child": os.getpid()}

    def answer(question):
        seen.append(question["n"])
        return {"n": question["n"] * 10, "blob": "a" * (2 << 20), "in_parent": os.getpid()}

    outcome = sandbox.run(work, 10, answer)
    assert outcome.failure == "", outcome
    assert outcome.data["answers"] == [10, 110, 2 << 20]
    assert outcome.data["in_child"] != os.getpid()
    assert seen == [1, 11]


def test_time_spent_answering_is_not_the_childs():
    def work(channel):
        return channel.ask({})

    def slow(question):
        time.sleep(1.5)
        return {"ok": True}

    start = time.monotonic()
    outcome = sandbox.run(work, 1.0, slow)
    assert outcome.data == {"ok": True}, outcome
    assert time.monotonic() - start >= 1.5
    assert outcome.elapsed < 1.0


def test_a_started_child_runs_while_the_parent_works_and_its_question_waits_for_finish():
    """sandbox.start: the child runs while the grading process does other work (the divergence
    finder's child while the judge names the mistake); its question is answered at finish()."""
    def work(channel):
        began = time.monotonic()
        answer = channel.ask({"q": 1})
        return {"began": began, "answer": answer["a"]}

    with sandbox.start(work, 10, lambda q: {"a": q["q"] + 1}) as child:
        started = time.monotonic()
        time.sleep(0.3)  # the parent's own work
        outcome = child.finish()
    assert outcome.failure == "" and outcome.data["answer"] == 2, outcome
    assert outcome.data["began"] < started + 0.3  # it ran before finish() was called
    assert child.finish() is outcome  # served once


def test_a_started_child_that_waits_for_a_busy_parent_is_not_timed_out():
    """The divergence finder's child asks its question (or has its reply ready) while the judge is
    still naming the mistake; the time it waits for finish() is not its time. A child that spends
    its time working still runs out of it."""
    def asks(channel):
        return {"answer": channel.ask({"q": 1})["a"]}

    def done(channel):
        return {"done": True}

    def works(channel):
        while True:
            pass

    for work, expected in ((asks, {"answer": 2}), (done, {"done": True})):
        with sandbox.start(work, 0.5, lambda q: {"a": q["q"] + 1}) as child:
            time.sleep(1.2)  # the parent's own work, longer than the child's time
            outcome = child.finish()
        assert outcome.failure == "" and outcome.data == expected, outcome
        assert outcome.elapsed < 0.5
    with sandbox.start(works, 0.5) as child:
        time.sleep(1.2)
        assert child.finish().failure == "timeout"


def test_a_started_child_left_unfinished_is_ended_with_its_tree(tmp_path):
    pidfile = tmp_path / "pids"

    def work(channel):
        _note_pid(pidfile)
        time.sleep(60)
        return {}

    with sandbox.start(work, 10) as child:
        deadline = time.monotonic() + 5
        while not _pids(pidfile) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert _pids(pidfile) and not any(_exists(p) for p in _pids(pidfile))
    assert child.outcome is None


def test_a_forged_frame_on_any_descriptor_is_not_a_reply():
    def work(channel):
        fake = b"f" * 32
        payload = b'{"forged": true}'
        frame = fake + b"R" + b"%012d" % len(payload) + payload + fake
        for fd in range(3, 1 << 16):  # the channel's own pipe among them
            try:
                os.write(fd, b"garbage " + frame)
            except OSError:
                pass
        answer = channel.ask({"after": "forgery"})
        return {"real": True, "answer": answer}

    outcome = sandbox.run(work, 10, lambda q: {"echo": q})
    assert outcome.data == {"real": True, "answer": {"echo": {"after": "forgery"}}}, outcome


def test_the_childs_descriptors_are_the_channel_and_the_standard_ones_only():
    def work(channel):
        import fcntl
        import resource

        fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        return {"fds": fds, "soft": soft, "channel": [channel._send_fd, channel._receive_fd],
                "cloexec": [bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC) for fd in (channel._send_fd, channel._receive_fd)]}

    data = sandbox.run(work, 10).data
    channel = data["channel"]
    assert all(fd >= min(data["soft"], 1 << 16) // 2 for fd in channel)
    assert data["cloexec"] == [True, True]
    others = set(data["fds"]) - {0, 1, 2, *channel}
    assert len(others) <= 1, data  # the descriptor listdir itself opened


# --- bounded and validated replies --------------------------------------------------------------


def _sends(payload: bytes):
    def work(channel):
        channel._send(sandbox.REPLY, payload)
        time.sleep(30)  # the parent must not wait for this

    return work


def _writes(raw_from_token):
    def work(channel):
        os.write(channel._send_fd, raw_from_token(channel._token))
        return {"honest": True}

    return work


@pytest.mark.parametrize("work, detail", [
    (_sends(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"), "deep"),
    (_sends(b"[" * 100_000 + b"]" * 100_000), "deep"),
    (_sends(b'{"a": [1, 2'), "not JSON"),
    (_sends(b"[1, 2]"), "list"),
    (_sends(b'"text"'), "str"),
    (_sends(b'{"a": "\xff\xfe"}'), "UTF-8"),
    (_writes(lambda token: token + b"Z000000000002{}" + token), "header"),
    (_writes(lambda token: token + b"R00000000000x{}" + token), "header"),
    (_writes(lambda token: token + b"R000000000005{}" + token), "length"),
    (lambda channel: [1, 2, 3], "list"),
], ids=["deep-object", "deep-list", "truncated", "list", "string", "not-utf8", "bad-kind", "bad-length",
        "wrong-length", "work-returns-list"])
def test_a_malformed_reply_is_a_failure_not_an_exception(work, detail):
    start = time.monotonic()
    outcome = sandbox.run(work, 20)
    assert outcome.data is None
    assert outcome.failure == "malformed", outcome
    assert detail in outcome.detail and "\n" not in outcome.detail
    assert time.monotonic() - start < 5


def test_a_question_nobody_answers_or_that_the_answer_rejects_is_malformed():
    assert sandbox.run(lambda channel: channel.ask({"q": 1}), 10).failure == "malformed"

    def reject(question):
        raise sandbox.Malformed("no such probe: 'x'")

    outcome = sandbox.run(lambda channel: channel.ask({"probe": "x"}), 10, reject)
    assert (outcome.failure, outcome.detail) == ("malformed", "no such probe: 'x'")

    def deep_question(channel):
        channel._send(sandbox.QUESTION, b"[" * 100_000 + b"]" * 100_000)
        return channel._receive()

    assert sandbox.run(deep_question, 10, lambda q: {}).failure == "malformed"


def test_an_answer_that_raises_is_the_graders_failure():
    outcome = sandbox.run(lambda channel: channel.ask({}), 10, lambda q: q["missing"])
    assert outcome.failure == "answer_error"
    assert outcome.detail.startswith("KeyError")


def test_a_reply_over_the_cap_is_too_large_and_under_it_arrives():
    work = lambda channel: {"x": "a" * (2 << 20)}  # noqa: E731
    outcome = sandbox.run(work, 20, max_reply=1 << 20)
    assert (outcome.data, outcome.failure) == (None, "reply_too_large")
    assert "MiB" in outcome.detail
    assert len(sandbox.run(work, 20, max_reply=4 << 20).data["x"]) == 2 << 20


def test_the_total_read_is_capped_stray_bytes_included():
    def work(channel):
        chunk = b"x" * (1 << 20)
        for _ in range(10):
            os.write(channel._send_fd, chunk)
        return {}

    outcome = sandbox.run(work, 20, max_reply=1 << 20, max_total=4 << 20)
    assert outcome.failure == "reply_too_large"
    assert "in all" in outcome.detail
    assert sandbox.run(work, 20, max_reply=1 << 20, max_total=16 << 20).data == {}


@pytest.mark.parametrize("many", [b"[],", b"0,", b"{},"])
def test_a_reply_of_millions_of_tiny_values_is_too_large(many):
    """JSON "[]," is 3 bytes and a 64-byte list once parsed: the number of values is capped, so
    a message under the byte cap cannot grow the parent tenfold when decoded."""
    n = sandbox.MAX_VALUES
    assert sandbox.run(_sends(b'{"a": [' + many * (n // 3) + b"0]}"), 20).failure == ""
    outcome = sandbox.run(_sends(b'{"a": [' + many * (n + 1) + b"0]}"), 20)
    assert outcome.failure == "reply_too_large"
    assert "values in one message" in outcome.detail


MEMORY_SCRIPT = r"""
import json, os, sys, time
from attnprep.grader import sandbox

def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

CHUNK = b"x" * (1 << 20)

def stray(channel):  # 400 MiB without a frame
    for _ in range(400):
        os.write(channel._send_fd, CHUNK)
    return {}

def framed(channel):  # a frame that says it is 400 MiB long, then the 400 MiB
    os.write(channel._send_fd, channel._token + b"R" + b"%012d" % (400 << 20))
    for _ in range(400):
        os.write(channel._send_fd, CHUNK)
    return {}

def inside(channel):  # a real frame whose body is 400 MiB: the bytes after the header
    os.write(channel._send_fd, channel._token + b"R" + b"%012d" % (60 << 20) + b'{"x": "')
    for _ in range(400):
        os.write(channel._send_fd, CHUNK)
    return {}

report = {}
for work in (stray, framed, inside):
    before = hwm()
    start = time.monotonic()
    outcome = sandbox.run(work, 60)
    report[work.__name__] = {"failure": outcome.failure, "grown": hwm() - before, "seconds": time.monotonic() - start}
print(json.dumps(report))
"""


@needs_linux
def test_400_mib_into_the_pipe_leaves_the_parent_small():
    """Measured in a fresh process (VmHWM, the peak resident size): the parent grows by at most
    one message's cap, not by what was written."""
    proc = subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True, timeout=300)
    report = json.loads(proc.stdout)
    for name, row in report.items():
        assert row["failure"] in ("reply_too_large", "malformed"), (name, row)
        assert row["seconds"] < 30, (name, row)
    assert report["stray"]["failure"] == report["framed"]["failure"] == "reply_too_large"
    assert report["stray"]["grown"] < 32 << 20, report
    assert report["framed"]["grown"] < 32 << 20, report
    assert report["inside"]["grown"] < 2 * sandbox.MAX_REPLY + (32 << 20), report  # 60 MiB is under the cap


# --- no process outlives a run ------------------------------------------------------------------


def _ending(name: str):
    def work(channel):
        if name == "reply":
            return {"done": True}
        if name == "raises":
            raise RuntimeError("boom")
        if name == "malformed":
            channel._send(sandbox.REPLY, b"[" * 100_000)
            time.sleep(60)
        if name == "signal":
            os.kill(os.getpid(), signal.SIGSEGV)
        if name == "exit":
            os._exit(3)
        while True:  # timeout
            pass

    return work


@needs_linux
@pytest.mark.parametrize("ending, failure", [
    ("reply", ""), ("raises", ""), ("malformed", "malformed"), ("signal", "signal"), ("exit", "exit"), ("timeout", "timeout"),
])
def test_no_grandchild_outlives_a_run_however_it_ends(tmp_path, ending, failure):
    pidfile = tmp_path / "pids"
    finish = _ending(ending)

    def work(channel):
        _spawn(pidfile)
        return finish(channel)

    start = time.monotonic()
    outcome = sandbox.run(work, 3.0)
    took = time.monotonic() - start
    assert outcome.failure == failure, outcome
    if ending == "raises":
        assert outcome.data["internal"] == "RuntimeError: boom"
    pids = _pids(pidfile)
    assert len(pids) == 2
    assert [pid for pid in pids if _exists(pid)] == []
    # an endless loop the machine starves of CPU is given up to STARVED_WALL times its time
    assert took < (3 * sandbox.STARVED_WALL + 3 if ending == "timeout" else 3), took


@needs_linux
def test_a_grandchild_holding_the_pipe_open_does_not_delay_the_reply(tmp_path):
    pidfile = tmp_path / "pids"

    def work(channel):
        if os.fork() == 0:  # keeps the channel, the output pipe, everything
            _note_pid(pidfile)
            time.sleep(60)
            os._exit(0)
        _wait_for_pids(pidfile, 1)
        return {"ok": True}

    start = time.monotonic()
    outcome = sandbox.run(work, 20)
    assert outcome.data == {"ok": True}
    assert time.monotonic() - start < 3
    assert not _exists(_pids(pidfile)[0])


@needs_linux
def test_a_child_that_dies_while_a_grandchild_holds_the_pipe_ends_at_once(tmp_path):
    pidfile = tmp_path / "pids"

    def work(channel):
        if os.fork() == 0:
            _note_pid(pidfile)
            time.sleep(60)
            os._exit(0)
        _wait_for_pids(pidfile, 1)
        os._exit(5)

    start = time.monotonic()
    outcome = sandbox.run(work, 20)
    assert (outcome.failure, outcome.detail) == ("exit", "5")
    assert time.monotonic() - start < 3
    assert not _exists(_pids(pidfile)[0])


@needs_linux
def test_ctrl_c_in_the_parent_kills_and_reaps_the_tree(tmp_path):
    pidfile = tmp_path / "pids"

    def work(channel):
        _note_pid(pidfile)
        _spawn(pidfile)
        while True:
            pass

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 1.0)
        with pytest.raises(KeyboardInterrupt):
            sandbox.run(work, 30)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    pids = _pids(pidfile)
    assert len(pids) == 3
    assert [pid for pid in pids if _exists(pid)] == []
    assert _subreaper() == 0 and _dumpable() == 1  # restored


@needs_linux
def test_ctrl_c_while_answering_kills_the_tree_too(tmp_path):
    pidfile = tmp_path / "pids"

    def work(channel):
        _note_pid(pidfile)
        _spawn(pidfile)
        return channel.ask({})

    def answer(question):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        sandbox.run(work, 30, answer)
    pids = _pids(pidfile)
    assert len(pids) == 3 and [pid for pid in pids if _exists(pid)] == []


@needs_linux
def test_the_child_and_the_grading_parent_are_not_dumpable_and_the_parent_is_restored():
    assert (_dumpable(), _subreaper()) == (1, 0)

    def work(channel):
        parent = channel.ask({})
        return {"child": _dumpable(), "parent": parent}

    outcome = sandbox.run(work, 10, lambda q: {"dumpable": _dumpable(), "subreaper": _subreaper()})
    assert outcome.data == {"child": 0, "parent": {"dumpable": 0, "subreaper": 1}}
    assert (_dumpable(), _subreaper()) == (1, 0)


def test_without_prctl_the_run_still_works_and_the_childs_group_is_killed(monkeypatch, tmp_path):
    """What WEAKER promises on a system without prctl: replies, failures, and the child's session
    (grandchildren that did not call setsid) are still handled."""
    monkeypatch.setattr(sandbox, "_prctl", None)
    pidfile = tmp_path / "pids"

    def work(channel):
        if os.fork() == 0:
            _note_pid(pidfile)
            time.sleep(60)
            os._exit(0)
        _wait_for_pids(pidfile, 1)
        return channel.ask({"n": 1})

    outcome = sandbox.run(work, 10, lambda q: {"n": q["n"] + 1})
    assert outcome.data == {"n": 2}
    time.sleep(0.1)
    pid = _pids(pidfile)[0]
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    assert sandbox.run(_ending("timeout"), 0.5).failure == "timeout"


def test_without_proc_the_child_and_its_group_are_killed(monkeypatch, tmp_path):
    monkeypatch.setattr(sandbox, "_HAS_PROC", False)
    pidfile = tmp_path / "pids"

    def work(channel):
        if os.fork() == 0:
            _note_pid(pidfile)
            time.sleep(60)
            os._exit(0)
        _wait_for_pids(pidfile, 1)
        return {"ok": True}

    assert sandbox.run(work, 10).data == {"ok": True}
    pid = _pids(pidfile)[0]
    time.sleep(0.2)
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(") ", 1)[1][0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")


# --- the attempt's output -----------------------------------------------------------------------


def test_prints_are_captured_bounded_and_never_reach_our_stdout(capfd):
    def work(channel):
        for i in range(100_000):
            print(f"line {i}", file=sys.stderr if i % 2 else sys.stdout)
        os.write(1, b"raw\n")
        return {}

    start = time.monotonic()
    outcome = sandbox.run(work, 20)
    took = time.monotonic() - start
    captured = capfd.readouterr()
    assert captured.out == captured.err == ""
    lines = outcome.stdout.splitlines()
    assert lines[:3] == ["line 0", "line 1", "line 2"]
    assert len(lines) == 41 and lines[-1] == "… 99961 more lines"
    assert len(outcome.stdout.encode()) <= sandbox.CAPTURE_BYTES + 100
    assert took < 5, took


@pytest.mark.parametrize("ending", ["raises", "timeout", "signal", "exit", "malformed"])
def test_prints_are_kept_however_the_child_ends(ending):
    finish = _ending(ending)

    def work(channel):
        print("shape (2, 4, 8)")
        print("partial", end="", file=sys.stderr)
        print(" line", file=sys.stderr)
        return finish(channel)

    outcome = sandbox.run(work, 1.0)
    assert outcome.stdout == "shape (2, 4, 8)\npartial line\n"


def test_a_megabyte_line_is_cut_and_counted():
    def work(channel):
        sys.stdout.write("x" * (1 << 20) + "\nnext\n")
        return {}

    text = sandbox.run(work, 10).stdout
    assert text == "x" * sandbox.CAPTURE_BYTES + "…\n… 1 more line\n"


@pytest.mark.parametrize("chunks, text", [
    ([b"a\nb\n"], "a\nb\n"),
    ([b"a\n", b"b"], "a\nb"),
    ([b"".join(b"%d\n" % i for i in range(40))], "".join(f"{i}\n" for i in range(40))),
    ([b"%d\n" % i for i in range(45)], "".join(f"{i}\n" for i in range(40)) + "… 5 more lines\n"),
    ([b"y" * 500 + b"\n"] * 100, ("y" * 500 + "\n") * 16 + "… 84 more lines\n"),
    ([b"caf\xc3", b"\xa9 \xff\n"], "café \ufffd\n"),
    ([], ""),
])
def test_capture_keeps_whole_lines_and_counts_the_rest(chunks, text):
    capture = sandbox._Capture()
    for chunk in chunks:
        capture.feed(chunk)
    assert capture.text() == text


# --- end to end: `attnprep check --json` on hostile files -------------------------------------


def _snapshot(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()} if home.exists() else {}


WRAP = ("import atexit, resource, runpy, sys; out = sys.argv.pop(1); "
        "atexit.register(lambda: open(out, 'w').write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))); "
        "sys.argv[0] = 'attnprep'; runpy.run_module('attnprep', run_name='__main__', alter_sys=True)")


def _check(tmp_path: Path, target: Path, *extra: str) -> tuple[dict, subprocess.CompletedProcess, int]:
    """`attnprep check --json` in its own process; its JSON, the process, its peak RSS (KiB)."""
    rss = tmp_path / f"rss-{target.stem}"
    env = dict(os.environ, ATTNPREP_TEST_PIDS=str(tmp_path / "pids"))
    proc = subprocess.run([sys.executable, "-c", WRAP, str(rss), "check", str(target), "-e", "mha", "--json", *extra],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180)
    doc = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    return doc, proc, int(rss.read_text()) if rss.exists() else 0


@needs_linux
@pytest.mark.slow
@pytest.mark.parametrize("name", ["setsid_grandchild.py", "daemon_double_fork.py"])
def test_cli_a_process_that_escapes_the_session_cannot_touch_the_history(tmp_path, attnprep_home, name):
    doc, proc, _ = _check(tmp_path, HOSTILE / name)
    assert doc["results"][0]["verdict"] == "passed" and proc.returncode == 0, proc.stderr
    after_exit = _snapshot(attnprep_home)
    assert after_exit, "the check was recorded"
    pids = _pids(tmp_path / "pids")
    assert len(pids) == 1
    time.sleep(1.5)  # the escaped process would write 0.2 s after the CLI is gone
    assert not (attnprep_home / "forged.txt").exists()
    assert _snapshot(attnprep_home) == after_exit
    assert [pid for pid in pids if _exists(pid)] == []


@needs_linux
@pytest.mark.slow
def test_cli_a_grandchild_holding_the_reply_pipe_is_no_timeout(tmp_path):
    start = time.monotonic()
    doc, proc, _ = _check(tmp_path, HOSTILE / "holds_reply_pipe.py", "--timeout", "30")
    assert doc["results"][0]["verdict"] == "passed", doc
    assert time.monotonic() - start < 25
    pids = _pids(tmp_path / "pids")
    assert len(pids) == 1 and not _exists(pids[0])


@needs_linux
@pytest.mark.slow
def test_cli_a_forged_deep_reply_is_an_error_verdict(tmp_path):
    doc, proc, _ = _check(tmp_path, HOSTILE / "forges_deep_reply.py")
    result = doc["results"][0]
    assert result["verdict"] == "error" and proc.returncode == 1, proc.stderr
    assert "malformed" in result["error"]["message"]
    assert not result.get("internal")


@needs_linux
@pytest.mark.slow
def test_cli_a_flooded_reply_pipe_is_an_error_and_the_grader_stays_small(tmp_path):
    baseline, _, small = _check(tmp_path, HOSTILE / "non_daemon_thread.py")
    assert baseline["results"][0]["verdict"] == "passed"
    doc, proc, peak = _check(tmp_path, HOSTILE / "floods_reply_pipe.py")
    result = doc["results"][0]
    assert result["verdict"] == "error" and proc.returncode == 1, proc.stderr
    assert "too much data" in result["error"]["message"]
    assert small and peak, "peak RSS measured"
    assert peak - small < 100 * 1024, (small, peak)  # KiB: not the 400 MiB written


# --- through the engine: Result.stdout ----------------------------------------------------------


def test_the_engine_keeps_what_the_attempt_printed(tmp_path):
    from attnprep.grader import grade

    flood = grade(HOSTILE / "prints_megabytes.py", "mha", timeout=20)
    assert flood.passed
    assert flood.stdout.startswith("debug: xxx")
    assert flood.stdout.endswith(" more lines\n") and len(flood.stdout.encode()) <= sandbox.CAPTURE_BYTES + 100

    source = (HOSTILE / "raises_in_forward.py").read_text(encoding="utf-8")
    attempt = tmp_path / "mha.py"
    attempt.write_text(source.replace("    def forward(self, x, attention_mask=None, is_causal=False):\n",
                                      "    def forward(self, x, attention_mask=None, is_causal=False):\n"
                                      "        print('x.shape =', tuple(x.shape))\n", 1), encoding="utf-8")
    failed = grade(attempt, "mha", timeout=20)
    assert failed.verdict.value == "error"
    assert failed.stdout.splitlines()[0].startswith("x.shape = (")


# --- files the child cannot read or write (Landlock) ---------------------------------------------

needs_landlock = pytest.mark.skipif(not sandbox.HIDES_FILES, reason="no Landlock in this kernel")


@needs_landlock
def test_hidden_and_protected_folders_hold_for_the_child_and_every_program_it_runs(tmp_path):
    secret, data, free = tmp_path / "secret", tmp_path / "data", tmp_path / "free"
    for folder in (secret, data, free):
        folder.mkdir()
    (secret / "ref.py").write_text("REF")
    (data / "history.db").write_text("H")

    def work(channel):
        ok = sandbox.hide(unreadable=[str(secret)], unwritable=[str(secret), str(data)])
        shell = ('cat "$1/ref.py"; echo x > "$2/history.db"; rm -f "$2/history.db"; echo y > "$1/ref.py"; '
                 'echo z > "$2/new.txt"; echo free > "$3/out.txt"; cat "$2/history.db"')
        done = subprocess.run(["sh", "-c", shell, "sh", str(secret), str(data), str(free)], capture_output=True, text=True)
        try:
            (secret / "ref.py").read_text()
            read_here = True
        except PermissionError:
            read_here = False
        return {"ok": ok, "stdout": done.stdout, "read_here": read_here, "listed": sorted(os.listdir(secret))}

    outcome = sandbox.run(work, timeout=30)
    assert outcome.data is not None, outcome
    assert outcome.data["ok"] and not outcome.data["read_here"]
    assert outcome.data["stdout"] == "H"  # the history is readable, the reference is not
    assert outcome.data["listed"] == ["ref.py"]  # listing stays allowed
    assert (secret / "ref.py").read_text() == "REF" and (data / "history.db").read_text() == "H"
    assert not (data / "new.txt").exists() and (free / "out.txt").read_text() == "free\n"


@needs_landlock
@needs_linux
@pytest.mark.slow
def test_cli_the_attempt_cannot_write_the_history(tmp_path, attnprep_home):
    for _ in range(2):  # the second check finds a history to attack
        doc, proc, _ = _check(tmp_path, HOSTILE / "trashes_history.py")
        assert doc["results"][0]["verdict"] == "passed", proc.stderr
    assert not (attnprep_home / "forged.txt").exists()
    assert not list(attnprep_home.glob("*corrupt*")), "the history was overwritten"
    stats = subprocess.run([sys.executable, "-m", "attnprep", "stats", "--json"], capture_output=True, text=True,
                           env=dict(os.environ), timeout=120)
    mha = next(e for e in json.loads(stats.stdout)["exercises"] if e["exercise"] == "mha")
    assert mha["attempts"] == 2 and mha["passes"] == 2, "both checks are in the history"


def test_a_child_starved_of_cpu_gets_the_rest_of_its_time_and_a_waiting_one_does_not():
    """A busy machine must not turn a slow but finite attempt into a timeout: a runnable child that
    has used less CPU than its time is given more, up to STARVED_WALL times its time on the wall
    clock; a sleeping one (a hang) or one that had its time (an endless loop) is not."""
    me = os.getpid()  # running Python: state R, with little CPU used against a long time
    assert sandbox._starved(me, timeout=1e6, elapsed=1.0) > 0
    assert sandbox._starved(me, timeout=1e6, elapsed=sandbox.STARVED_WALL * 1e6) == 0  # its wall-clock cap
    assert sandbox._starved(me, timeout=1e-3, elapsed=1.0) == 0  # it had its time of CPU
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        time.sleep(1.0)  # started and asleep
        assert sandbox._starved(sleeper.pid, timeout=1e6, elapsed=1.0) == 0
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sandbox._starved(sleeper.pid, timeout=1e6, elapsed=1.0) == 0  # gone: nothing to give


@needs_landlock
def test_grade_protects_the_data_folder_unless_told_otherwise(attnprep_home):
    """``grade`` without ``protect`` keeps the attempt (and the shell it runs) out of the user's
    data folder, as the CLI's grade does; ``protect=()`` leaves it open, which shows the default is
    what held it. (A dev script grading the hostile corpus cannot trash the history.)"""
    from attnprep.grader import grade

    attnprep_home.mkdir()
    (attnprep_home / "history.sqlite3").write_text("H")
    assert grade(HOSTILE / "trashes_history.py", "mha", timeout=30).passed
    assert (attnprep_home / "history.sqlite3").read_text() == "H"
    assert not (attnprep_home / "forged.txt").exists()
    assert grade(HOSTILE / "trashes_history.py", "mha", timeout=30, protect=()).passed
    assert (attnprep_home / "history.sqlite3").read_text() == "garbage\n"
    assert (attnprep_home / "forged.txt").exists()


def test_the_grader_protects_the_folder_the_shell_calls_the_data_folder(monkeypatch):
    from attnprep import paths
    from attnprep.grader import data_folder

    assert data_folder() == paths.data_path()  # $ATTNPREP_HOME, set for every test
    monkeypatch.setenv("ATTNPREP_HOME", "~/elsewhere")
    assert data_folder() == paths.data_path() == Path("~/elsewhere").expanduser()
    monkeypatch.delenv("ATTNPREP_HOME")
    assert data_folder() == paths.data_path()  # the platform's


def test_the_child_is_forked_with_the_heap_frozen_and_the_grading_process_gets_it_back():
    """``sandbox._fork``: the child's cyclic collector never walks the heap it shares with the grading
    process (all frozen in the child), and the grading process keeps nothing frozen after the fork,
    so its own garbage is collected as before; a process that froze objects itself keeps them so."""
    import gc

    made_before = [object() for _ in range(10)]  # noqa: F841 - objects the child inherits

    def work(channel):
        return {"frozen": gc.get_freeze_count()}

    assert gc.get_freeze_count() == 0
    assert sandbox.run(work, 10).data["frozen"] > 1000
    assert gc.get_freeze_count() == 0
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert sandbox.run(work, 10).data["frozen"] > 1000
        assert gc.get_freeze_count() > frozen // 2  # not taken back (0); a few may have been freed since
    finally:
        gc.unfreeze()


def test_a_file_saved_again_in_the_same_second_at_the_same_size_is_graded_as_it_is_now(tmp_path):
    """The attempt is compiled from its source on every grade: a one-character fix saved within the
    second of the last grade (`drill` re-checks on every save) is not run from a stale `__pycache__`,
    and nothing is written into the learner's folder."""
    from attnprep.grader import grade

    root = Path(__file__).resolve().parent.parent
    right = (root / "solutions" / "causal.py").read_text(encoding="utf-8")
    assert "torch.tril(" in right
    wrong = right.replace("torch.tril(", "torch.triu(", 1)  # the same size: the future visible, the past masked
    path = tmp_path / "causal.py"
    path.write_text("# attnprep: causal\n" + right, encoding="utf-8")
    stamp = path.stat().st_mtime_ns
    assert grade(path, seed=0, protect=()).passed
    path.write_text("# attnprep: causal\n" + wrong, encoding="utf-8")
    os.utime(path, ns=(stamp, stamp))  # the same mtime as the graded file: what a stale cache checks
    assert not grade(path, seed=0, protect=()).passed
    assert not (tmp_path / "__pycache__").exists()
