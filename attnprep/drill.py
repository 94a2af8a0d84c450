"""Timed drills: a fresh stub, a countdown, a re-check on every save, the end recorded in the history.

The shape follows rustlings' ``watch.rs``: one loop, :func:`run_loop`, handles every event in one
place — a save of the file, a tick of the clock (countdown, time-up) and Ctrl-C — so the rules of
a drill live in one function the tests drive with a fake grader, fake events and a fake clock.

- **Events** come from :func:`watch_events`: ``watchfiles.watch`` on the drill file's folder,
  filtered to that file, with ``yield_on_timeout`` so that it also yields a :class:`Tick` every
  ``TICK_S`` when nothing changed. One thread: the grader forks a child per attempt, and a
  process that forks should not have other Python threads (the live display refreshes on ticks,
  not from a thread of its own). Changes made while an attempt is being graded are kept by the
  watcher and arrive as the next :class:`Saved`.
- **Rules**: the clock starts at the first event (the watcher is then listening); a save is
  graded at once and the first pass ends the drill (``passed``, the time of that save); when the
  budget runs out the file gets one final grade (``timeout``; a pass there counts only if the
  file was saved before the deadline); Ctrl-C ends the drill as ``abandoned`` (the last verdict
  is recorded; if nothing was graded yet, the file is graded once).
- **Exit codes**: 0 passed, 1 timed out, 130 abandoned (the shell's convention for SIGINT).
- **Speed**: :func:`attnprep.grader.warm_up` imports torch once, before the clock starts; every
  save then costs one forked, isolated grade.

Views render the same events two ways: :class:`LiveView` (a Rich live display on a terminal) and
:class:`PlainView` (one progress line per event worth a line, for CI and pipes).
"""

from __future__ import annotations

import math
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Console, Group
from rich.text import Text

from attnprep import exercises, history

if TYPE_CHECKING:
    from attnprep.exercises import Exercise
    from attnprep.grader.result import Result

TICK_S = 0.2  # how often the loop wakes up when nothing is saved (countdown, time-up)
STEP_MS = 20  # watchfiles: a save is reported once the file has been quiet this long
DEBOUNCE_MS = 400  # watchfiles: ... or at most this long after the first change
EXIT_PASSED, EXIT_TIMEOUT, EXIT_ABANDONED = 0, 1, 130
EXIT_CODES = {"passed": EXIT_PASSED, "timeout": EXIT_TIMEOUT, "abandoned": EXIT_ABANDONED}

# Editors that take over the terminal: `--edit` cannot run them next to the drill's display.
TERMINAL_EDITORS = {"vi", "vim", "nvim", "nano", "pico", "micro", "hx", "helix", "kak", "joe", "ne", "ed", "mg", "emacsclient -t", "emacs -nw"}


# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Saved:
    """The drill file was written."""


@dataclass(frozen=True)
class Tick:
    """Nothing happened for TICK_S: time to redraw the countdown and check the deadline."""


Event = Saved | Tick


def watch_events(path: Path, *, tick_s: float = TICK_S, stop_event=None) -> Iterator[Event]:
    """Saves of ``path`` and ticks, from one watcher (Ctrl-C surfaces as KeyboardInterrupt)."""
    import watchfiles

    name = path.name

    def only_this_file(_change, changed: str) -> bool:
        return os.path.basename(changed) == name

    for changes in watchfiles.watch(
        path.parent,
        watch_filter=only_this_file,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        rust_timeout=max(1, int(tick_s * 1000)),
        yield_on_timeout=True,
        recursive=False,
        stop_event=stop_event,
        raise_interrupt=True,
    ):
        # An editor that saves by rename can leave the path missing for a moment: wait for the
        # change that brings it back.
        yield Saved() if changes and path.exists() else Tick()


# --- the loop ------------------------------------------------------------------------------------


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


class View(Protocol):
    def ready(self) -> None: ...
    def tick(self, elapsed: float, remaining: float) -> None: ...
    def grading(self, elapsed: float, final: bool) -> None: ...
    def graded(self, elapsed: float, result: Result) -> None: ...
    def unreadable(self, elapsed: float, error: OSError) -> None: ...
    def time_up(self, elapsed: float) -> None: ...
    def interrupted(self, elapsed: float) -> None: ...


def run_loop(
    events: Iterable[Event],
    *,
    grade: Callable[[], Result],
    view: View,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
    saved_at: Callable[[], float | None] = lambda: None,
) -> Ending:
    """Run one drill over ``events`` and say how it ended. ``saved_at()`` is the clock value of the
    file's last modification (to credit a save made just before the deadline)."""
    started: float | None = None
    last: Result | None = None
    grades = 0
    mistakes: dict[str, None] = {}

    def ending(outcome: str, elapsed: float, result: Result | None) -> Ending:
        return Ending(outcome, elapsed, result, started, grades, tuple(mistakes))

    def graded(elapsed: float, final: bool = False) -> Result | None:
        nonlocal last, grades
        view.grading(elapsed, final)
        try:
            result = grade()
        except OSError as exc:  # the file vanished or is unreadable mid-save: wait for the next one
            view.unreadable(elapsed, exc)
            return None
        grades += 1
        last = result
        if not result.internal:
            mistakes.update(dict.fromkeys(d.id for d in result.diagnoses))
        view.graded(elapsed, result)
        return result

    try:
        for event in events:
            now = clock()
            if started is None:
                started = now
                view.ready()
            elapsed = now - started
            if isinstance(event, Saved) and elapsed < budget_s:
                result = graded(elapsed)
                if result is not None and result.passed:
                    return ending("passed", elapsed, last)
                now = clock()  # grading took a while
                elapsed = now - started
            if elapsed >= budget_s:
                view.time_up(budget_s)
                final = graded(budget_s, final=True)
                modified = saved_at()
                if final is not None and final.passed and modified is not None and modified - started <= budget_s:
                    return ending("passed", max(0.0, modified - started), final)
                return ending("timeout", budget_s, last)
            view.tick(elapsed, budget_s - elapsed)
        raise RuntimeError("the file watcher stopped before the drill ended")
    except KeyboardInterrupt:
        if started is None:
            return ending("abandoned", 0.0, None)
        elapsed = min(clock() - started, budget_s)
        view.interrupted(elapsed)
        if last is None:
            try:
                graded(elapsed, final=True)
            except KeyboardInterrupt:  # a second Ctrl-C: leave without a verdict
                pass
        return ending("abandoned", elapsed, last)


# --- views ---------------------------------------------------------------------------------------


def clock_text(seconds: float) -> str:
    """``mm:ss`` for the progress lines."""
    seconds = max(0, int(seconds))
    return f"{seconds // 60:02d}:{seconds % 60:02d}"


def short_verdict(result: Result) -> Text:
    """The report's verdict line without its leading mark and file name (the drill shows the file
    once): ``wrong output — missing 1/sqrt(d) scale``."""
    from attnprep.report import verdict_line

    if result.passed:  # the report's "passed in 0.12 s" is the grading time, not the drill's
        return Text("passed", style="bold green")
    line = verdict_line(result)
    prefix = f"{line.plain[:1]} {Path(result.file).name}  " if result.file else ""
    if prefix and line.plain.startswith(prefix):
        line = line[len(prefix) :]
    line.no_wrap, line.overflow = True, "ellipsis"
    return line


def diagnosis_text(result: Result) -> Text | None:
    """One line: the named mistake and its fix, or the error, or None."""
    if result.passed or result.internal:
        return None
    if result.diagnoses:
        from attnprep import wording

        fix = wording.mistake(result.exercise, result.diagnoses[0]).fix
        return Text.assemble(("fix: ", "green"), fix, no_wrap=True, overflow="ellipsis")
    if result.error is not None and result.error.traceback:
        where = result.error.traceback.strip().splitlines()[-1].strip()
        return Text(where, style="dim", no_wrap=True, overflow="ellipsis")
    return None


@dataclass
class PlainView:
    """Progress lines for a non-interactive terminal: ``[00:12] saved → wrong output — …``."""

    console: Console
    budget_s: float
    _minute: int = 0
    _final: bool = False

    def _line(self, elapsed: float, *parts: str | Text) -> None:
        text = Text.assemble(f"[{clock_text(elapsed)}] ", *parts)
        self.console.print(text, soft_wrap=True)

    def ready(self) -> None:
        self._line(0, f"go: {history.format_duration(self.budget_s)} on the clock; every save is checked (Ctrl-C gives up)")

    def tick(self, elapsed: float, remaining: float) -> None:
        minute = int(elapsed // 60)
        if minute > self._minute:
            self._minute = minute
            self._line(elapsed, f"{history.format_duration(remaining)} left")

    def grading(self, elapsed: float, final: bool) -> None:
        self._final = final

    def graded(self, elapsed: float, result: Result) -> None:
        self._line(elapsed, "final check → " if self._final else "saved → ", short_verdict(result))

    def unreadable(self, elapsed: float, error: OSError) -> None:
        self._line(elapsed, f"saved → could not read the file ({error.strerror or error}); waiting for the next save")

    def time_up(self, elapsed: float) -> None:
        self._line(elapsed, "time is up")

    def interrupted(self, elapsed: float) -> None:
        self._line(elapsed, "interrupted")


@dataclass
class LiveView:
    """A Rich live display: countdown, last verdict, its diagnosis. Refreshed by the loop's ticks
    (auto_refresh off: no extra thread in a process that forks)."""

    console: Console
    budget_s: float
    title: str
    elapsed: float = 0.0
    status: Text = field(default_factory=lambda: Text("waiting for your first save …", style="dim"))
    detail: Text | None = None
    saves: int = 0
    _live: object = None

    def __enter__(self) -> LiveView:
        from rich.live import Live

        self._live = Live(self._render(), console=self.console, auto_refresh=False, transient=True)
        self._live.start()
        return self

    def __exit__(self, *exc) -> None:
        self._live.stop()

    def _render(self) -> Group:
        remaining = math.ceil(max(0.0, self.budget_s - self.elapsed))  # a countdown shows 0:00 only at the end
        width = 30
        done = int(width * min(1.0, self.elapsed / self.budget_s)) if self.budget_s else width
        style = "bold red" if remaining < 60 else "bold yellow" if remaining < 0.3 * self.budget_s else "bold green"
        clock = Text.assemble(
            (f"{history.format_duration(remaining)} left", style),
            "  ",
            ("█" * done, style),
            ("░" * (width - done), "dim"),
            (f"  {history.format_duration(int(self.elapsed))} / {history.format_duration(self.budget_s)}", "dim"),
        )
        lines = [Text(self.title, style="bold"), clock, Text.assemble(("last save  ", "dim"), self.status, no_wrap=True, overflow="ellipsis")]
        if self.detail is not None:
            lines.append(self.detail)
        lines.append(Text(f"{self.saves} save{'s' if self.saves != 1 else ''} checked · Ctrl-C gives up", style="dim"))
        return Group(*lines)

    def _refresh(self) -> None:
        self._live.update(self._render(), refresh=True)

    def ready(self) -> None:
        self._refresh()

    def tick(self, elapsed: float, remaining: float) -> None:
        self.elapsed = elapsed
        self._refresh()

    def grading(self, elapsed: float, final: bool) -> None:
        self.elapsed = elapsed
        self.status = Text("final check …" if final else "checking …", style="dim")
        self._refresh()

    def graded(self, elapsed: float, result: Result) -> None:
        self.saves += 1
        self.status = Text.assemble(f"[{clock_text(elapsed)}] ", short_verdict(result))
        self.detail = diagnosis_text(result)
        self._refresh()

    def unreadable(self, elapsed: float, error: OSError) -> None:
        self.status = Text(f"[{clock_text(elapsed)}] could not read the file ({error.strerror or error})", style="yellow")
        self._refresh()

    def time_up(self, elapsed: float) -> None:
        self.elapsed = elapsed
        self._refresh()

    def interrupted(self, elapsed: float) -> None:
        self.elapsed = elapsed


# --- the drill -----------------------------------------------------------------------------------


def new_drill_file(exercise: Exercise, directory: Path, *, now: float | None = None, subfolder: str = "drills") -> Path:
    """Write a fresh stub as ``directory/<subfolder>/<id>-<YYYYmmdd-HHMM>.py``; never over a file
    (`interview` writes to ``interviews/``)."""
    folder = directory / subfolder
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M", time.localtime(now))
    text = exercises.render_stub(exercise)
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
) -> DrillRun:
    """Drill ``exercise`` on the stub at ``path`` and record the outcome. ``grade``/``events``
    default to the real grader and the file watcher (the tests swap them)."""
    if grade is None:
        from attnprep import grader

        grade = grader.grade
    wall_minus_mono = time.time() - time.monotonic()

    def saved_at() -> float | None:
        try:
            return path.stat().st_mtime - wall_minus_mono
        except OSError:
            return None

    ending = run_loop(
        watch_events(path) if events is None else events,
        grade=lambda: grade(path, exercise.id),
        view=view,
        budget_s=budget_s,
        saved_at=saved_at,
    )
    started_at = None if ending.started is None else ending.started + wall_minus_mono
    recorded = None
    if ending.result is not None and started_at is not None:
        recorded = history.record(
            ending.result,
            kind="drill",
            started_at=started_at,
            duration_s=ending.elapsed_s,
            outcome=ending.outcome,
            mistakes=ending.mistakes,
        )
    return DrillRun(exercise.id, path, budget_s, ending, started_at, recorded)
