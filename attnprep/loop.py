"""The one event loop of the timed commands, `drill` and `interview` (rustlings' ``watch.rs``).

Both commands are the same machine: events arrive from one source, the loop reads one clock and
hands each event to the command's :class:`Rules`, and the command's :class:`View` shows what
happened. What a command supplies is only what differs: the drill grades every save and ends on
a pass or at time-up (:mod:`attnprep.drill`); the interview grades nothing until a submission,
then asks its follow-ups (:mod:`attnprep.interview`).

- **Events** (:func:`events`): a save of the watched file (:class:`Saved`), a line typed or read
  from an answers file (:class:`Reply`, :class:`InputClosed` when there are no more), a submit
  request left by ``attnprep interview --submit`` (:class:`Submit`), and a :class:`Tick` when
  nothing happened for ``tick_s``. Ctrl-C surfaces as KeyboardInterrupt, wherever it lands (while
  waiting for an event or inside a grade), and the loop hands it to :meth:`Rules.interrupted`.
  One thread: the drill forks a child per check, and a process that forks should not have other
  Python threads.
- **The clock** (:class:`Clock`): a time source (monotonic for the drill, unix time for the
  interview, whose start is kept in a file other processes read), the moment it started, the
  elapsed time, and the unix time of a moment.
- **The budget** (:func:`budget_s`): the time limit of one exercise, from ``--seconds``,
  ``--minutes`` or the exercise's own, computed here and nowhere else.

Tests drive a whole drill or interview with a list of events, a fake grader and a fake clock.
"""

from __future__ import annotations

import math
import os
import select
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from attnprep.exercises import QA, Exercise
    from attnprep.grader.result import Result

TICK_S = 0.05  # how often the loop wakes up when nothing happens (the drill's countdown, a finished check)
STEP_MS = 20  # watchfiles: a save is reported once the file has been quiet this long
DEBOUNCE_MS = 400  # watchfiles: ... or at most this long after the first change


# --- the budget ----------------------------------------------------------------------------------


def budget_s(exercise: Exercise, *, minutes: float | None = None, seconds: float | None = None) -> float:
    """The time limit in seconds: ``seconds`` if given, else ``minutes``, else the exercise's own.
    ValueError when it is not a positive, finite number (the commands say so in one line)."""
    if seconds is not None:
        budget = float(seconds)
    elif minutes is not None:
        budget = float(minutes) * 60
    else:
        budget = exercise.minutes * 60.0
    if not budget > 0 or math.isinf(budget):
        raise ValueError(budget)
    return budget


# --- the clock -----------------------------------------------------------------------------------


class Clock:
    """One clock: ``now()`` from its time source, the moment it ``started`` (None: not yet), the time
    elapsed since, and the unix time of one of its moments (:meth:`wall`)."""

    def __init__(self, now: Callable[[], float] = time.monotonic, started: float | None = None) -> None:
        self.now = now
        self.started = started
        self._to_wall = time.time() - now()  # unix time minus this clock's time

    def start(self, at: float | None = None) -> float:
        """Start at ``at`` (a moment already read), else now."""
        self.started = self.now() if at is None else at
        return self.started

    def elapsed(self, at: float | None = None) -> float:
        """Seconds from the start to ``at`` (default: now), never negative."""
        return max(0.0, (self.now() if at is None else at) - self.started)

    def wall(self, moment: float) -> float:
        """The unix time of a moment of this clock."""
        return moment + self._to_wall

    def of_wall(self, unix: float) -> float:
        """The moment of this clock at a unix time (a file's modification time)."""
        return unix - self._to_wall


# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Saved:
    """The watched file was written."""


@dataclass(frozen=True)
class Tick:
    """Nothing happened for ``tick_s``: time to redraw the clock and check the deadline."""


@dataclass(frozen=True)
class Reply:
    """A line from the user (the terminal or an answers file), without its newline."""

    text: str


@dataclass(frozen=True)
class Submit:
    """A submit request from `attnprep interview --submit` (None: the take-over's own)."""

    request: str | None


@dataclass(frozen=True)
class InputClosed:
    """The terminal or the answers file has no more lines."""


Event = Saved | Tick | Reply | Submit | InputClosed
EOF = object()  # FdLines / StreamLines: no more lines


class FdLines:
    """Lines from a file descriptor (a terminal, a pipe), with a timeout: ``select`` then
    ``os.read`` into a buffer of our own (a buffered reader would hide complete lines from
    ``select``)."""

    def __init__(self, fd: int) -> None:
        self.fd, self.buffer, self.eof = fd, b"", False

    def read(self, timeout: float):
        """A line, None (nothing within ``timeout``), or :data:`EOF`."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer and not self.eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0 and timeout > 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], max(0.0, remaining))
            if not ready:
                return None
            chunk = os.read(self.fd, 4096)
            if chunk:
                self.buffer += chunk
            else:
                self.eof = True
        if b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
        elif self.buffer:
            line, self.buffer = self.buffer, b""
        else:
            return EOF
        return line.decode("utf-8", errors="replace").rstrip("\r")


class StreamLines:
    """Lines from a file object that has no usable descriptor (an answers file, a test's input):
    every line is there at once."""

    def __init__(self, stream) -> None:
        self.stream = stream

    def read(self, timeout: float):
        line = self.stream.readline()
        if not line:
            return EOF
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        return line.rstrip("\n").rstrip("\r")


def lines_of(stream) -> FdLines | StreamLines:
    try:
        return FdLines(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return StreamLines(stream)


def _saves(path: Path, tick_s: float, stop_event) -> Iterator[bool]:
    """For each wake-up of one watcher on ``path``'s folder (at least every ``tick_s``): whether the
    file was saved."""
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
        yield bool(changes) and path.exists()


def events(*, watch: Path | None = None, lines=None, poll: Callable[[], str | None] | None = None,
           tick_s: float = TICK_S, stop_event=None) -> Iterator[Event]:
    """The one event source: saves of ``watch``, lines of ``lines`` (:class:`FdLines` or
    :class:`StreamLines`), submit requests from ``poll()``, and a :class:`Tick` whenever none of
    them had anything for ``tick_s``. Forever (a ``stop_event`` ends the watcher); Ctrl-C surfaces
    as KeyboardInterrupt.

    It waits on the watcher when there is one (lines are then read without waiting), else on the
    lines, else it sleeps."""
    saves = _saves(watch, tick_s, stop_event) if watch is not None else None
    closed = lines is None
    while True:
        if poll is not None:
            request = poll()
            if request is not None:
                yield Submit(request)
                continue
        if saves is not None:
            saved = next(saves, None)
            if saved is None:  # the watcher was stopped
                return
            if saved:
                yield Saved()
                continue
        if not closed:
            line = lines.read(0.0 if saves is not None else tick_s)
            if line is EOF:
                closed = True
                yield InputClosed()
                continue
            if line is not None:
                yield Reply(line)
                continue
        elif saves is None:
            time.sleep(tick_s)
        yield Tick()


# --- the loop ------------------------------------------------------------------------------------


class Rules:
    """What a command does with each event; every hook has its default (nothing happens). A hook
    returns the command's ending to stop the loop, or None to go on."""

    def before(self, now: float) -> Any:
        """Every event, before its own hook (the drill collects a finished check here)."""
        return None

    def saved(self, now: float) -> Any:
        return None

    def tick(self, now: float) -> Any:
        return None

    def reply(self, text: str, now: float) -> Any:
        return None

    def submit(self, request: str | None, now: float) -> Any:
        return None

    def input_closed(self, now: float) -> Any:
        return None

    def exhausted(self, now: float) -> Any:
        """The events ran out before the command ended."""
        raise RuntimeError("the events stopped before the end")

    def interrupted(self, now: float) -> Any:
        """Ctrl-C (while waiting for an event or inside a hook): the ending."""
        raise KeyboardInterrupt


def dispatch(rules: Rules, event: Event, now: float) -> Any:
    """Hand one event to its hook."""
    if isinstance(event, Saved):
        return rules.saved(now)
    if isinstance(event, Tick):
        return rules.tick(now)
    if isinstance(event, Reply):
        return rules.reply(event.text, now)
    if isinstance(event, Submit):
        return rules.submit(event.request, now)
    if isinstance(event, InputClosed):
        return rules.input_closed(now)
    raise TypeError(f"not an event: {event!r}")


def run(events: Iterable[Event], rules: Rules, clock: Clock) -> Any:
    """The loop: every event, read at ``clock.now()``, goes to ``rules`` until a hook returns an
    ending; Ctrl-C anywhere goes to :meth:`Rules.interrupted`."""
    try:
        for event in events:
            now = clock.now()
            ending = rules.before(now)
            if ending is None:
                ending = dispatch(rules, event, now)
            if ending is not None:
                return ending
        return rules.exhausted(clock.now())
    except KeyboardInterrupt:
        return rules.interrupted(clock.now())


# --- the view ------------------------------------------------------------------------------------


class View:
    """What a timed command shows; every hook has its default (show nothing), so a view defines
    only what it shows. ``elapsed`` is seconds since the clock started."""

    # the clock
    def ready(self) -> None:
        """The clock started (the drill: its watcher is listening)."""

    def started(self, exercise: Exercise, path: Path, budget_s: float, resumed: bool) -> None:
        """A round began on ``path`` (the interview)."""

    def tick(self, elapsed: float, remaining: float) -> None:
        """``remaining`` is negative past the budget (the interview's clock goes on)."""

    def time_up(self, elapsed: float) -> None: ...

    # checks
    def grading(self, elapsed: float, final: bool = False) -> None:
        """A check of the save (or submission) at ``elapsed`` began; ``final``: the drill's last."""

    def graded(self, elapsed: float, result: Result, *, first: bool = False) -> None:
        """Its verdict; ``first``: the interview's first try (``elapsed``: its time)."""

    def superseded(self, elapsed: float, by: float) -> None:
        """The check of the save at ``elapsed`` was stopped by a newer save at ``by``."""

    def unreadable(self, elapsed: float, error: OSError) -> None:
        """The file could not be read (or the check was lost)."""

    def not_graded(self, detail: str, *, internal: bool) -> None:
        """A submission attnprep could not grade (not counted)."""

    # input and the end
    def input_closed(self) -> None: ...

    def interrupted(self, elapsed: float) -> None: ...

    def abandoned(self, elapsed: float) -> None: ...

    # the interview's follow-ups
    def fix_prompt(self) -> None: ...

    def question(self, i: int, n: int, qa: QA, notes: Path) -> None: ...

    def answer(self, qa: QA) -> None: ...

    def known_again(self) -> None: ...

    def follow_up(self, exercise: Exercise) -> None: ...

    def summary(self, rounds: list) -> None: ...
