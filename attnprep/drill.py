"""Timed drills: a fresh stub, a countdown, a re-check on every save, the end recorded in the history.

The drill runs on the timed commands' one event loop (:mod:`attnprep.loop`, after rustlings'
``watch.rs``): saves of the drill file, ticks of the clock (countdown, time-up) and Ctrl-C arrive
as events from one source and are handled in one place, :class:`DrillRules`, which holds only
what is the drill's own; the tests drive it with a fake grader, fake events and a fake clock.

- **Events** come from :func:`watch_events`: ``watchfiles.watch`` on the drill file's folder,
  filtered to that file, yielding a ``Tick`` every ``TICK_S`` when nothing changed. One thread:
  the grader forks a child per attempt, and a process that forks should not have other Python
  threads (the live display refreshes on ticks, not from a thread of its own).
- **Checks run in the background**: each save is graded in a forked child (:class:`ForkedCheck`),
  which the loop polls on every event, so a check that hangs (``while True: pass``) never
  freezes the countdown. A new save cancels the check in flight (its child and the attempt's are
  killed; the view says the older save was superseded); a check left alone ends with its own
  verdict, a ``timeout`` for a hang. Tests hand the loop a plain function, graded at once.
- **Rules**: the clock starts at the first event (the watcher is then listening); every save is
  checked and the first pass ends the drill (``passed``, the time of that save); when the budget
  runs out the file gets one final check (the one in flight if it is of the last save;
  ``timeout``, and a pass there counts only if the file was saved before the deadline); Ctrl-C
  ends the drill as ``abandoned`` (the last verdict is recorded; if nothing was graded yet, the
  file's check is waited for, or made, once: a second Ctrl-C leaves without it).
- **Exit codes**: 0 passed, 1 timed out, 130 abandoned (the shell's convention for SIGINT).
- **Speed**: :func:`attnprep.grader.warm_up` imports torch once, before the clock starts; every
  save then costs a fork of this warm process and the grade's own forked, isolated child.

Views render the same events two ways: :class:`LiveView` (a Rich live display on a terminal) and
:class:`PlainView` (one progress line per event worth a line, for CI and pipes); both are
:class:`attnprep.loop.View` s.
"""

from __future__ import annotations

import errno
import math
import os
import pickle
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Console, Group
from rich.text import Text

from attnprep import exercises, history, loop, texts
from attnprep.loop import Event, Saved, Tick, View  # noqa: F401 (the drill's events and view protocol)
from attnprep.prose import Block, Prose

if TYPE_CHECKING:
    from attnprep.exercises import Exercise
    from attnprep.grader.result import Result

TICK_S = loop.TICK_S  # how often the loop wakes up when nothing is saved (a finished check, countdown, time-up)
EXIT_PASSED, EXIT_TIMEOUT, EXIT_ABANDONED = 0, 1, 130
EXIT_CODES = {"passed": EXIT_PASSED, "timeout": EXIT_TIMEOUT, "abandoned": EXIT_ABANDONED}

# Editors that take over the terminal: `--edit` cannot run them next to the drill's display.
TERMINAL_EDITORS = {"vi", "vim", "nvim", "nano", "pico", "micro", "hx", "helix", "kak", "joe", "ne", "ed", "mg", "emacsclient -t", "emacs -nw"}


# --- events (the one source: attnprep.loop) ---------------------------------------------------------


def watch_events(path: Path, *, tick_s: float = TICK_S, stop_event=None) -> Iterator[Event]:
    """Saves of ``path`` and ticks, from one watcher (Ctrl-C surfaces as KeyboardInterrupt)."""
    return loop.events(watch=path, tick_s=tick_s, stop_event=stop_event)


# --- the ending ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ending:
    outcome: str  # "passed", "timeout" or "abandoned"
    elapsed_s: float  # recorded duration: time of the passing save, the budget, or time until Ctrl-C
    result: Result | None  # the verdict recorded (None: Ctrl-C before the clock even started)
    started: float | None  # clock value when the drill started (None: never started)
    grades: int
    mistakes: tuple[str, ...]  # mistake ids diagnosed on the way, in order of first appearance

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]


# --- checks ---------------------------------------------------------------------------------------


class Check(Protocol):
    """One check of the drill file, started when it is made."""

    def done(self) -> bool: ...  # finished; never blocks
    def wait(self) -> None: ...  # block until it is done (Ctrl-C interrupts)
    def outcome(self) -> Result: ...  # the verdict of a done check; OSError: the file could not be read
    def cancel(self) -> None: ...


class CheckLost(OSError):
    """The check ended without a verdict (its process died); ``str()`` says how."""


class GradedAtOnce:
    """A check made in this process as it is created (the tests' fake graders)."""

    def __init__(self, grade: Callable[[], Result]) -> None:
        self._result: Result | None = None
        self._error: OSError | None = None
        try:
            self._result = grade()
        except OSError as exc:
            self._error = exc

    def done(self) -> bool:
        return True

    def wait(self) -> None:
        pass

    def outcome(self) -> Result:
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def cancel(self) -> None:
        pass


class _Cancelled(BaseException):
    """Raised in a check's child by SIGTERM: ``grade`` unwinds, and the sandbox, waiting on the
    attempt's own child, kills that one on the way out."""


def _raise_cancelled(signum, frame):
    raise _Cancelled


class ForkedCheck:
    """``grade()`` in a forked child of this (warm) process, its verdict pickled back on a pipe.

    The child runs only attnprep's grader, which runs the attempt in a sandboxed child of its own
    and returns a :class:`Result`; unpickling that value from our own fork is safe (nothing of the
    attempt's runs in this child). It gets a process group of its own, so that Ctrl-C in the
    terminal is the drill's to handle; :meth:`cancel` sends it SIGTERM (it kills the attempt's
    child before it leaves), and SIGKILL if it is still there after ``CANCEL_GRACE_S``."""

    CANCEL_GRACE_S = 1.0

    def __init__(self, grade: Callable[[], Result]) -> None:
        read_fd, write_fd = os.pipe()
        sys.stdout.flush()  # what is buffered here must not be written twice
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: grade, reply, leave without running the parent's cleanup
            code = 0
            try:
                os.close(read_fd)
                os.setpgid(0, 0)
                signal.signal(signal.SIGINT, signal.SIG_IGN)
                signal.signal(signal.SIGTERM, _raise_cancelled)
                try:
                    reply: tuple = ("result", grade())
                except OSError as exc:
                    reply = ("oserror", exc.errno, exc.strerror or str(exc), exc.filename)
                view = memoryview(pickle.dumps(reply))
                while view:
                    view = view[os.write(write_fd, view):]
            except _Cancelled:
                code = 0
            except BaseException:
                code = 70
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid, self._fd = pid, read_fd
        self._chunks: list[bytes] = []
        self._status: int | None = None  # the child's wait status once it is reaped

    def _drain(self, timeout: float | None) -> None:
        if self._status is not None:
            return
        while select.select([self._fd], [], [], timeout)[0]:
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:  # end of the pipe: the child is leaving
                os.close(self._fd)
                self._status = os.waitpid(self.pid, 0)[1]
                return
            self._chunks.append(chunk)
            timeout = 0

    def done(self) -> bool:
        self._drain(0)
        return self._status is not None

    def wait(self) -> None:
        while not self.done():
            self._drain(None)

    def outcome(self) -> Result:
        self.wait()
        data = b"".join(self._chunks)
        if not data:
            status = self._status or 0
            how = (texts.t("sys.check_lost_signal", signal=signal.Signals(os.WTERMSIG(status)).name) if os.WIFSIGNALED(status)
                   else texts.t("sys.check_lost_exit", code=os.WEXITSTATUS(status)))
            raise CheckLost(errno.EIO, texts.t("sys.check_lost", how=how))
        reply = pickle.loads(data)
        if reply[0] == "oserror":
            raise OSError(*reply[1:3], *reply[3:4] if reply[3] is not None else ())
        return reply[1]

    def cancel(self) -> None:
        if self._status is not None:
            return
        for sig, grace in ((signal.SIGTERM, self.CANCEL_GRACE_S), (signal.SIGKILL, None)):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            deadline = None if grace is None else time.monotonic() + grace
            while deadline is None or time.monotonic() < deadline:
                pid, status = os.waitpid(self.pid, 0 if deadline is None else os.WNOHANG)
                if pid:
                    self._status = status
                    os.close(self._fd)
                    return
                time.sleep(0.005)


# --- the drill's rules ---------------------------------------------------------------------------


class DrillRules(loop.Rules):
    """What the drill does with the loop's events: check every save in the background, end on the
    first pass, give the file one final check at time-up, and on Ctrl-C keep the last verdict.
    ``check()`` starts a check of the file; ``saved_at()`` is the clock's moment of the file's last
    modification (to credit a save made just before the deadline)."""

    def __init__(self, view: View, budget_s: float, clock: loop.Clock, *, check: Callable[[], Check],
                 saved_at: Callable[[], float | None] = lambda: None) -> None:
        self.view, self.budget_s, self.clock = view, budget_s, clock
        self.check, self.saved_at = check, saved_at
        self.last: Result | None = None
        self.grades = 0
        self.mistakes: dict[str, None] = {}
        self.running: Check | None = None  # the check in flight
        self.running_at = 0.0  # the elapsed time of the save it checks
        self.final = False  # time is up: the check in flight is the last one
        self.elapsed = 0.0  # at the event being handled

    # -- the loop's hooks -------------------------------------------------------------------------

    def before(self, now: float) -> Ending | None:
        """Start the clock at the first event; collect a check that has finished."""
        if self.clock.started is None:
            self.clock.start(now)
            self.view.ready()
        self.elapsed = now - self.clock.started
        if self.running is not None and self.running.done():
            checked_at, result = self.running_at, self._collect()
            if self.final:
                return self._after_final(result)
            if result is not None and result.passed:
                return self._ending("passed", checked_at)
        return None

    def saved(self, now: float) -> Ending | None:
        if self.final:  # waiting for the last verdict; a save after the deadline changes nothing
            return self._waiting()
        elapsed = self.elapsed
        if elapsed < self.budget_s:
            if self.running is not None:  # a newer save: the check in flight is no longer wanted
                self.running.cancel()
                self.running = None
                self.view.superseded(self.running_at, elapsed)
            self._start(elapsed, False)
            if self.running.done():  # checked at once
                result = self._collect()
                if result is not None and result.passed:
                    return self._ending("passed", elapsed)
                elapsed = self.clock.now() - self.clock.started  # grading took a while
        return self._clock(elapsed, saved=True)

    def tick(self, now: float) -> Ending | None:
        if self.final:
            return self._waiting()
        return self._clock(self.elapsed, saved=False)

    def exhausted(self, now: float) -> Ending:
        raise RuntimeError("the file watcher stopped before the drill ended")

    def interrupted(self, now: float) -> Ending:
        """Ctrl-C: abandoned, with the last verdict; if nothing was graded yet, the file's check
        is waited for, or made, once (a second Ctrl-C leaves without it)."""
        if self.clock.started is None:
            if self.running is not None:
                self.running.cancel()
            return self._ending("abandoned", 0.0)
        elapsed = min(now - self.clock.started, self.budget_s)
        self.view.interrupted(elapsed)
        try:
            if self.last is None:
                if self.running is None:
                    self._start(elapsed, True)
                self.running.wait()
                self._collect()
        except KeyboardInterrupt:  # a second Ctrl-C: leave without a verdict
            pass
        finally:
            if self.running is not None:
                self.running.cancel()
        return self._ending("abandoned", elapsed)

    # -- the drill's own steps --------------------------------------------------------------------

    def _ending(self, outcome: str, elapsed: float) -> Ending:
        return Ending(outcome, elapsed, self.last, self.clock.started, self.grades, tuple(self.mistakes))

    def _start(self, elapsed: float, final: bool) -> None:
        self.view.grading(elapsed, final)
        self.running_at = elapsed
        self.running = self.check()

    def _collect(self) -> Result | None:
        """The verdict of the finished check (None: the file could not be read)."""
        finished, self.running = self.running, None
        try:
            result = finished.outcome()
        except OSError as exc:  # the file vanished or is unreadable mid-save: wait for the next one
            self.view.unreadable(self.running_at, exc)
            return None
        self.grades += 1
        self.last = result
        if not result.internal:
            self.mistakes.update(dict.fromkeys(d.id for d in result.diagnoses))
        self.view.graded(self.running_at, result)
        return result

    def _waiting(self) -> None:
        """Time is up and the final check runs: the clock shows the budget spent."""
        self.view.tick(min(self.elapsed, self.budget_s), 0.0)
        return None

    def _clock(self, elapsed: float, *, saved: bool) -> Ending | None:
        """The countdown, or the time-up: the final check (the one in flight if it is of the last
        save, else a new one)."""
        if elapsed < self.budget_s:
            self.view.tick(elapsed, self.budget_s - elapsed)
            return None
        self.view.time_up(self.budget_s)
        self.final = True
        if self.running is None or saved:
            if self.running is not None:
                self.running.cancel()
                self.running = None
            self._start(self.budget_s, True)
        else:
            self.view.grading(self.running_at, True)
        if self.running.done():
            return self._after_final(self._collect())
        return None

    def _after_final(self, result: Result | None) -> Ending:
        modified = self.saved_at()
        started = self.clock.started
        if result is not None and result.passed and modified is not None and modified - started <= self.budget_s:
            return self._ending("passed", max(0.0, modified - started))
        return self._ending("timeout", self.budget_s)


def run_loop(
    events: Iterable[Event],
    *,
    grade: Callable[[], Result] | None = None,
    view: View,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
    saved_at: Callable[[], float | None] = lambda: None,
    check: Callable[[], Check] | None = None,
) -> Ending:
    """Run one drill over ``events`` and say how it ended. ``check()`` starts a check of the file
    (:class:`ForkedCheck` in a real drill); given only ``grade``, each check is ``grade()`` at once.
    ``saved_at()`` is the clock value of the file's last modification."""
    if check is None:
        if grade is None:
            raise TypeError("run_loop needs grade or check")
        check = lambda: GradedAtOnce(grade)  # noqa: E731
    rules = DrillRules(view, budget_s, loop.Clock(clock), check=check, saved_at=saved_at)
    return loop.run(events, rules, rules.clock)


# --- views ---------------------------------------------------------------------------------------


def clock_text(seconds: float) -> str:
    """``mm:ss`` for the progress lines."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def short_verdict(result: Result) -> Text:
    """The report's verdict line without its leading mark and file name (the drill shows the file
    once): ``wrong output — missing 1/sqrt(d) scale``."""
    from attnprep.report import verdict_line
    from attnprep.safe_text import visible

    if result.passed:  # the report's "passed in 0.12 s" is the grading time, not the drill's
        return Text(texts.t("drill.passed"), style="bold green")
    line = verdict_line(result)
    prefix = f"{line.plain[:1]} {visible(Path(result.file).name, one_line=True)}  " if result.file else ""
    if prefix and line.plain.startswith(prefix):
        line = line[len(prefix) :]
    line.no_wrap, line.overflow = False, "fold"  # the whole reason, wrapped
    return line


def diagnosis_text(result: Result) -> Text | None:
    """The named mistake's fix, or where the error is, or None; wrapped, never cut."""
    if result.passed or result.internal:
        return None
    if result.diagnoses:
        from attnprep import wording

        fix = wording.mistake(result.exercise, result.diagnoses[0]).fix
        return Prose.assemble((texts.t("shell.fix_label"), "green"), fix, overflow="fold")
    if result.error is not None and result.error.traceback:
        from attnprep.safe_text import visible

        where = result.error.traceback.strip().split("\n")[-1].strip()  # the exception's own line (not splitlines: a \r inside it is text)
        return Prose(visible(where, one_line=True), style="dim", overflow="fold")
    return None


def unreadable_text(error: OSError) -> str:
    if isinstance(error, CheckLost):
        return texts.t("drill.lost", error=error.strerror)
    return texts.t("drill.unreadable", error=error.strerror or error)


def superseded_text(by: float) -> str:
    return texts.t("drill.superseded", at=clock_text(by))


@dataclass
class PlainView(View):
    """Progress lines for a non-interactive terminal: ``[00:12] saved → wrong output — …``."""

    console: Console
    budget_s: float
    _minute: int = 0
    _final: bool = False

    def _line(self, elapsed: float, *parts: str | Text) -> None:
        self.console.print(Block(Prose.assemble(f"[{clock_text(elapsed)}] ", *parts)))

    def ready(self) -> None:
        self._line(0, texts.t("drill.go", budget=history.format_duration(self.budget_s)))

    def tick(self, elapsed: float, remaining: float) -> None:
        minute = int(elapsed // 60)
        if minute > self._minute:
            self._minute = minute
            self._line(elapsed, texts.t("drill.left", left=history.format_duration(remaining)))

    def grading(self, elapsed: float, final: bool = False) -> None:
        self._final = final

    def graded(self, elapsed: float, result: Result, *, first: bool = False) -> None:
        self._line(elapsed, texts.t("drill.final_arrow") if self._final else texts.t("drill.saved_arrow"), short_verdict(result))

    def superseded(self, elapsed: float, by: float) -> None:
        self._line(elapsed, texts.t("drill.saved_arrow"), superseded_text(by))

    def unreadable(self, elapsed: float, error: OSError) -> None:
        self._line(elapsed, texts.t("drill.saved_arrow"), unreadable_text(error))

    def time_up(self, elapsed: float) -> None:
        self._line(elapsed, texts.t("drill.time_up"))

    def interrupted(self, elapsed: float) -> None:
        self._line(elapsed, texts.t("sys.interrupted"))


@dataclass
class LiveView(View):
    """A Rich live display: countdown, the check in flight, the last fix. Refreshed by the loop's
    ticks when what it shows changes (auto_refresh off: no extra thread in a process that forks).

    Every verdict is also a log line printed above it (as :class:`PlainView` prints them), which
    stays on the screen when the display, transient, is wiped at the end."""

    console: Console
    budget_s: float
    title: str
    elapsed: float = 0.0
    status: Text = field(default_factory=lambda: Text(texts.t("drill.waiting_first"), style="dim"))
    detail: Text | None = None
    saves: int = 0
    checking: float | None = None  # elapsed time of the save whose check is in flight
    final: bool = False
    _live: object = None
    _drawn: tuple | None = None

    def __enter__(self) -> LiveView:
        from rich.live import Live

        self._live = Live(self._render(), console=self.console, auto_refresh=False, transient=True)
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        self._live.stop()

    def _status(self) -> Text:
        if self.checking is None:
            return self.status
        what = texts.t("drill.final_check") if self.final else texts.t("drill.checking", at=clock_text(self.checking))
        running = int(self.elapsed - self.checking)
        return Text(f"{what} …" + (f" {running} s" if running >= 1 else ""), style="dim")

    def _render(self) -> Group:
        remaining = math.ceil(max(0.0, self.budget_s - self.elapsed))  # a countdown shows 0:00 only at the end
        width = 30
        done = int(width * min(1.0, self.elapsed / self.budget_s)) if self.budget_s else width
        style = "bold red" if remaining < 60 else "bold yellow" if remaining < 0.3 * self.budget_s else "bold green"
        clock = Text.assemble(
            (texts.t("drill.left", left=history.format_duration(remaining)), style),
            "  ",
            ("█" * done, style),
            ("░" * (width - done), "dim"),
            (f"  {history.format_duration(int(self.elapsed))} / {history.format_duration(self.budget_s)}", "dim"),
        )
        lines = [Text(self.title, style="bold"), clock, self._status()]
        if self.detail is not None:
            lines.append(self.detail)
        lines.append(Text(texts.t("drill.saves_1" if self.saves == 1 else "drill.saves", n=self.saves), style="dim"))
        return Group(*lines)

    def _refresh(self) -> None:
        shown = (math.ceil(max(0.0, self.budget_s - self.elapsed)), int(self.elapsed), self._status().plain,
                 self.detail.plain if self.detail is not None else None, self.saves)
        if shown != self._drawn:  # ticks come every TICK_S; draw only what changed
            self._drawn = shown
            self._live.update(self._render(), refresh=True)

    def _log(self, elapsed: float, *parts: str | Text) -> None:
        """A line above the display, kept when the display goes."""
        self.console.print(Block(Prose.assemble(f"[{clock_text(elapsed)}] ", *parts)))

    def ready(self) -> None:
        self._refresh()

    def tick(self, elapsed: float, remaining: float) -> None:
        self.elapsed = elapsed
        self._refresh()

    def grading(self, elapsed: float, final: bool = False) -> None:
        self.checking, self.final = elapsed, final
        self.elapsed = max(self.elapsed, elapsed)
        self._refresh()

    def graded(self, elapsed: float, result: Result, *, first: bool = False) -> None:
        self.saves += 1
        self._log(elapsed, texts.t("drill.final_arrow") if self.final else texts.t("drill.saved_arrow"), short_verdict(result))
        self.checking = None
        self.status = Text(texts.t("drill.waiting_next"), style="dim")
        self.detail = diagnosis_text(result)
        self._refresh()

    def superseded(self, elapsed: float, by: float) -> None:
        self._log(elapsed, texts.t("drill.saved_arrow"), Text(superseded_text(by), style="dim"))
        self.checking = None
        self._refresh()

    def unreadable(self, elapsed: float, error: OSError) -> None:
        self._log(elapsed, "saved → ", Text(unreadable_text(error), style="yellow"))
        self.checking = None
        self._refresh()

    def time_up(self, elapsed: float) -> None:
        self.elapsed = elapsed
        self._log(elapsed, texts.t("drill.time_up"))
        self._refresh()

    def interrupted(self, elapsed: float) -> None:
        self.elapsed = elapsed


# --- the drill -----------------------------------------------------------------------------------


def new_drill_file(exercise: Exercise, directory: Path, *, now: float | None = None, subfolder: str = "drills",
                   text: str | None = None) -> Path:
    """Write a fresh stub (or ``text``) as ``directory/<subfolder>/<id>-<YYYYmmdd-HHMM>.py``; never
    over a file (`interview` writes to ``interviews/``, `debug` its planted file to ``debug/``)."""
    folder = directory / subfolder
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M", time.localtime(now))
    text = exercises.render_stub(exercise) if text is None else text
    for n in range(1, 1000):
        path = folder / (f"{exercise.id}-{stamp}.py" if n == 1 else f"{exercise.id}-{stamp}-{n}.py")
        try:
            with open(path, "x", encoding="utf-8") as f:  # "x": fails if the file exists
                f.write(text)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"too many files for {exercise.id} at {stamp} in {folder}")


def editor_command() -> list[str] | None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    return shlex.split(editor) if editor else None


def is_terminal_editor(command: list[str]) -> bool:
    name = os.path.basename(command[0])
    return name in TERMINAL_EDITORS or " ".join([name, *command[1:2]]) in TERMINAL_EDITORS


def open_editor(command: list[str], path: Path) -> subprocess.Popen:
    """Start a (graphical) editor on the file, without waiting for it."""
    return subprocess.Popen([*command, str(path)], stdin=subprocess.DEVNULL, start_new_session=True)


def _preload(exercise: Exercise) -> None:
    """Import the exercise's reference here, before the clock starts, so that every forked check
    inherits it instead of importing it again."""
    import importlib

    try:
        importlib.import_module(exercise.solution_module)
    except Exception:  # the check will say what is wrong with it
        pass


@dataclass(frozen=True)
class DrillRun:
    exercise: str
    path: Path
    budget_s: float
    ending: Ending
    started_at: float | None  # unix time the clock started
    recorded: int | None  # history row id


def run_drill(
    exercise: Exercise,
    path: Path,
    budget_s: float,
    view: View,
    *,
    grade: Callable[[Path, str], Result] | None = None,
    events: Iterable[Event] | None = None,
    background: bool | None = None,
    record: bool = True,
) -> DrillRun:
    """Drill ``exercise`` on the stub at ``path`` and record the outcome. ``grade``/``events``
    default to the real grader and the file watcher (the tests swap them). ``background``: each
    check in a :class:`ForkedCheck` the next save can cancel (default: with the real grader), else
    graded at once in this process."""
    if background is None:
        background = grade is None
    if grade is None:
        from attnprep import grader, paths

        grade = lambda path, exercise_id: grader.grade(path, exercise_id, protect=(paths.data_path(),))  # noqa: E731
    if background:
        _preload(exercise)
    clock = loop.Clock()

    def saved_at() -> float | None:
        try:
            return clock.of_wall(path.stat().st_mtime)
        except OSError:
            return None

    def check() -> Result:
        return grade(path, exercise.id)

    rules = DrillRules(view, budget_s, clock, check=(lambda: ForkedCheck(check)) if background else (lambda: GradedAtOnce(check)),
                       saved_at=saved_at)
    ending = loop.run(watch_events(path) if events is None else events, rules, clock)
    started_at = None if ending.started is None else clock.wall(ending.started)
    recorded = None
    if record and ending.result is not None and started_at is not None:  # a debug round records itself
        recorded = history.record(
            ending.result,
            kind="drill",
            started_at=started_at,
            duration_s=ending.elapsed_s,
            outcome=ending.outcome,
            mistakes=ending.mistakes,
            budget_s=budget_s,
        )
    return DrillRun(exercise.id, path, budget_s, ending, started_at, recorded)
