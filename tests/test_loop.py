"""The timed commands' one event loop (attnprep/loop.py): its event source, its dispatch, its clock,
the budget; and that `drill` and `interview` both run on it with its events and its view."""

from __future__ import annotations

import io
import os
import threading
import time

import pytest

from attnprep import drill, exercises, loop
from attnprep import interview as iv


# --- the budget ----------------------------------------------------------------------------------


def test_the_budget_is_seconds_else_minutes_else_the_exercises_own():
    mha = exercises.get("mha")
    assert loop.budget_s(mha) == mha.minutes * 60.0
    assert loop.budget_s(mha, minutes=1.5) == 90.0
    assert loop.budget_s(mha, minutes=1.5, seconds=2) == 2.0
    for bad in ({"minutes": 0}, {"seconds": -1}, {"minutes": float("inf")}, {"seconds": float("nan")}):
        with pytest.raises(ValueError):
            loop.budget_s(mha, **bad)


def test_no_command_computes_a_budget_of_its_own():
    """`minutes * 60` is written once, in attnprep/loop.py (issue 25: practice and rehearse each
    had their own)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for folder, _, files in os.walk(os.path.join(root, "attnprep")):
        for name in files:
            if name.endswith(".py") and name != "loop.py":
                text = open(os.path.join(folder, name), encoding="utf-8").read()
                if "minutes * 60" in text:
                    found.append(name)
    assert found == []


# --- the clock -----------------------------------------------------------------------------------


def test_the_clock_says_elapsed_time_and_unix_time_of_its_moments():
    t = [50.0]
    clock = loop.Clock(lambda: t[0])
    assert clock.start() == 50.0
    t[0] = 62.5
    assert clock.elapsed() == 12.5 and clock.elapsed(at=49.0) == 0.0  # never negative
    assert abs(clock.wall(50.0) - time.time()) < 1  # made at 50.0 on its own time source
    assert clock.wall(62.5) - clock.wall(50.0) == pytest.approx(12.5)
    assert clock.of_wall(clock.wall(62.5)) == pytest.approx(62.5)


# --- the event source ----------------------------------------------------------------------------


def test_one_source_gives_submits_then_replies_then_input_closed_then_ticks():
    requests = ["r1", None, None, None, None, None]
    lines = loop.StreamLines(io.StringIO("first\nq\n"))
    source = loop.events(lines=lines, poll=lambda: requests.pop(0) if requests else None, tick_s=0.01)
    seen = [next(source) for _ in range(6)]
    assert isinstance(loop.lines_of(io.StringIO("")), loop.StreamLines)  # no descriptor: read at once
    assert seen == [loop.Submit("r1"), loop.Reply("first"), loop.Reply("q"), loop.InputClosed(), loop.Tick(), loop.Tick()]


def test_a_pipe_without_a_line_within_the_tick_is_a_tick():
    read_fd, write_fd = os.pipe()
    try:
        source = loop.events(lines=loop.FdLines(read_fd), tick_s=0.02)
        assert next(source) == loop.Tick()
        os.write(write_fd, b"y\r\npartial")
        assert next(source) == loop.Reply("y")
        os.close(write_fd)
        write_fd = None
        assert [next(source), next(source), next(source)] == [loop.Reply("partial"), loop.InputClosed(), loop.Tick()]
    finally:
        os.close(read_fd)
        if write_fd is not None:
            os.close(write_fd)


def test_saves_and_lines_come_from_the_same_source(tmp_path):
    """The watcher waits, the lines are read as they come: a save and a reply, one source."""
    target = tmp_path / "a.py"
    target.write_text("x")
    read_fd, write_fd = os.pipe()
    stop = threading.Event()

    def writer():
        time.sleep(0.3)
        target.write_text("x = 1")
        time.sleep(0.6)
        os.write(write_fd, b"submit\n")
        time.sleep(0.3)
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    seen = list(loop.events(watch=target, lines=loop.FdLines(read_fd), tick_s=0.05, stop_event=stop))
    thread.join()
    os.close(read_fd)
    os.close(write_fd)
    assert seen.count(loop.Saved()) == 1 and seen.count(loop.Reply("submit")) == 1
    assert seen.index(loop.Saved()) < seen.index(loop.Reply("submit"))
    assert seen.count(loop.Tick()) >= 5


# --- the loop ------------------------------------------------------------------------------------


class Counting(loop.Rules):
    """Ends at the third reply; ``before`` sees every event first."""

    def __init__(self) -> None:
        self.log: list = []

    def before(self, now):
        self.log.append(("before", now))

    def reply(self, text, now):
        self.log.append(("reply", text))
        return "done" if sum(entry[0] == "reply" for entry in self.log) == 3 else None

    def interrupted(self, now):
        return ("interrupted", now)


def test_the_loop_hands_each_event_to_its_hook_and_stops_at_an_ending():
    t = [0.0]

    def events():
        for text in ("a", "b", "c", "never"):
            t[0] += 1
            yield loop.Tick()  # no hook of its own: the default does nothing
            yield loop.Reply(text)

    rules = Counting()
    assert loop.run(events(), rules, loop.Clock(lambda: t[0])) == "done"
    assert rules.log == [("before", 1.0), ("before", 1.0), ("reply", "a"), ("before", 2.0), ("before", 2.0),
                         ("reply", "b"), ("before", 3.0), ("before", 3.0), ("reply", "c")]


def test_ctrl_c_anywhere_goes_to_the_rules():
    def events():
        yield loop.Tick()
        raise KeyboardInterrupt

    assert loop.run(events(), Counting(), loop.Clock(lambda: 7.0)) == ("interrupted", 7.0)
    with pytest.raises(RuntimeError):  # the default: events that run out are a bug of the caller
        loop.run(iter([loop.Tick()]), loop.Rules(), loop.Clock())


# --- both commands run on it ---------------------------------------------------------------------


def test_drill_and_interview_share_the_events_and_the_view():
    assert drill.Tick is loop.Tick is loop.Tick and drill.Saved is loop.Saved and loop.Submit is loop.Submit
    assert issubclass(drill.PlainView, loop.View) and issubclass(drill.LiveView, loop.View)
    assert issubclass(iv.ConsoleView, loop.View)
    assert issubclass(drill.DrillRules, loop.Rules) and issubclass(iv.Session, loop.Rules)
    # a view shows only what it defines: the rest are the protocol's defaults
    loop.View().graded(1.0, None)
    loop.View().question(1, 2, None, None)
