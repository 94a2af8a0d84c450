"""Interview rehearsal (SPEC §10): write it once against the clock, submit, then the follow-ups.

A **round** is one exercise: a fresh stub under ``<workspace>/interviews/`` (never over a file),
a visible clock and no grading until the user submits — Enter in the terminal, or
``attnprep interview --submit`` from another shell or an editor task. The first submission's
verdict is the one that counts (recorded with ``first_try``); after a failure the user may fix and
submit again, each fix graded and recorded as a later fix. Then the exercise's Q&A cards one at a
time (the question, appended to a notes file next to the stub where the user may write the
answer; Enter reveals the model answer; the user marks it known / not known), and, where the bank
has one, the chained next exercise (each exercise's ``next`` in its exercise.toml) as a new round.

**The open interview** is described by a small JSON file in the data folder
(``interview.json``: exercise, file, start, budget, the pid of the attnprep running it, what has
been graded and asked), written atomically by that process only. ``--submit`` elsewhere leaves a
request (``interview.submit``) that the running interview picks up on its next tick, grades, and
answers in ``interview.json``; if no attnprep runs the interview any more (its terminal was
closed), ``--submit`` takes it over and goes on from where it was. The file is removed when the
round ends.

**The drill's event loop** (:mod:`attnprep.loop`): replies (lines from the terminal or a scripted
answers file), submit requests and clock ticks arrive as events from the one source and go to
:class:`Session`, the interview's rules: a small state machine whose phase says what it waits for
(the first submission, a fix, a question's reveal, known or not, the chained exercise). Tests
drive a whole interview with a list of events, a fake grader and a fake clock.

Torch is imported by the grader only (:func:`attnprep.attempts.grade_attempt`).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console
from rich.text import Text

from attnprep import drill, exercises, history, loop, paths, plan
from attnprep.loop import Event, Submit, View
from attnprep.prose import Block, Prose

if TYPE_CHECKING:
    from attnprep.exercises import QA, Exercise
    from attnprep.grader.result import Result

FOLDER = "interviews"
STATE_VERSION = 1
TICK_S = 0.25
DEFAULT_QUESTIONS = 3
ANSWER_WAIT_S = 120.0  # how long `--submit` waits for the running interview to grade
EXIT_PASSED, EXIT_FAILED, EXIT_ABANDONED = 0, 1, 130

QUIT = {"q", "quit", "exit"}
YES = {"y", "yes", "k", "known"}
NO = {"n", "no", "u", "unknown", "not known"}
NEXT = {"n", "next", "no"}

# Every word this module shows, in one place (str.format templates; Rich styles are applied where
# the words are used).
# Every word this module shows is a texts key of the [interview] table (attnprep/texts/<lang>.toml).


def _w(key: str, **values) -> str:
    from attnprep import texts

    return texts.t("interview." + key, **values)


def clock(seconds: float) -> str:
    return history.format_duration(max(0.0, seconds))


# --- the open interview: a state file in the data folder -----------------------------------------


class OpenInterview(NamedTuple):
    """What ``interview.json`` says about the round in progress."""

    exercise: str
    file: str
    notes: str
    workspace: str
    started_at: float  # unix time the clock started
    budget_s: float
    owner: int  # pid of the attnprep running it
    interview: int | None  # its row in the history (None: the history was unusable)
    submitted_s: float | None = None  # time of the first submission (None: not submitted yet)
    first_passed: bool | None = None
    fixes: int = 0
    last_fix_passed: bool | None = None
    asked: tuple[int, ...] = ()  # cards marked this round
    known: int = 0
    unknown: int = 0
    answered: str | None = None  # the last submit request answered ...
    answer: dict | None = None  # ... and its answer: {"passed", "first_try", "line"} or {"error"}

    def to_json(self) -> dict:
        data = self._asdict()
        data["asked"] = list(self.asked)
        return {"version": STATE_VERSION, **data}

    @classmethod
    def from_json(cls, data: dict) -> OpenInterview:
        if data.get("version") != STATE_VERSION:
            raise ValueError("unknown version")
        fields = {k: data[k] for k in cls._fields if k in data}
        fields["asked"] = tuple(int(c) for c in fields.get("asked", ()))
        return cls(**fields)


def state_path() -> Path:
    return paths.data_home() / "interview.json"


def request_path() -> Path:
    return paths.data_home() / "interview.submit"


def answer_path() -> Path:
    """The answer to the last submit request, kept when the interview has ended with it (its state
    file is gone by the time `--submit` looks)."""
    return paths.data_home() / "interview.answer"


def _write_json(path: Path, data: dict) -> None:
    """Write atomically: a temporary file in the same folder, then a rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_state() -> OpenInterview | None:
    """The open interview, or None (none open, or a file that is not one: ignored)."""
    try:
        return OpenInterview.from_json(json.loads(state_path().read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def write_state(state: OpenInterview) -> None:
    _write_json(state_path(), state.to_json())


def clear_state(state: OpenInterview | None = None) -> None:
    """No open interview any more; the answer ``state`` gave its last submit request is kept."""
    if state is not None and state.answered is not None and state.answer is not None:
        try:
            _write_json(answer_path(), {"request": state.answered, "answer": state.answer})
        except OSError:
            pass
    state_path().unlink(missing_ok=True)


def _kept_answer(request: str) -> dict | None:
    try:
        data = json.loads(answer_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(data, dict) and data.get("request") == request and isinstance(data.get("answer"), dict):
        return data["answer"]
    return None


def owner_alive(pid: int) -> bool:
    """Whether the process running an interview is still there (POSIX)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    except OSError:
        return False
    return True


def request_submit() -> str:
    """Leave a submit request for the running interview; its id."""
    request = secrets.token_hex(8)
    _write_json(request_path(), {"request": request, "at": time.time()})
    return request


def take_request() -> str | None:
    """The pending submit request (consumed), if any."""
    path = request_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    path.unlink(missing_ok=True)
    return str(data.get("request")) if isinstance(data, dict) and data.get("request") else None


def wait_for_answer(request: str, *, timeout: float = ANSWER_WAIT_S, poll_s: float = 0.1,
                    clock_fn: Callable[[], float] = time.monotonic) -> dict | None:
    """The running interview's answer to a submit request: ``{"passed", "first_try", "line"}``,
    ``{"error": ...}``, or None (it ended, died or did not answer in time)."""
    deadline = clock_fn() + timeout
    while clock_fn() < deadline:
        state = read_state()
        if state is None:  # ended: with our answer, if ours was its last submission
            return _kept_answer(request)
        if state.answered == request and state.answer is not None:
            return state.answer
        if not owner_alive(state.owner):
            return _kept_answer(request)
        time.sleep(poll_s)
    return _kept_answer(request)


# --- the open interview, taken up: resume, take over, hand off, or give up ------------------------

NEW, RESUME, TAKE_OVER, HAND_OFF = "new", "resume", "take_over", "hand_off"


class Opening(NamedTuple):
    """What `attnprep interview` does about the interview left open (:func:`opening`)."""

    how: str  # NEW: a round of its own; RESUME: go on with ``state`` here; TAKE_OVER: `--submit` with
    # no attnprep running ``state`` any more, graded and gone on with here; HAND_OFF: `--submit` to
    # the attnprep running ``state``
    state: OpenInterview | None = None
    stale: OpenInterview | None = None  # NEW: a round left open, given up to start this one


class Refused(Exception):
    """`attnprep interview` cannot go on (a usage error): ``key`` of the [rehearse] texts, its values."""

    def __init__(self, key: str, **values) -> None:
        super().__init__(key)
        self.key, self.values = key, values


def opening(exercise_id: str | None, *, submit: bool, resolve: Callable[[str], str],
            now: Callable[[], float] = time.time) -> Opening:
    """Decide what to do with the interview left open, and do what the decision needs done to it
    (a state file with nothing left to resume is removed; a round left open is given up in the
    history when another starts). ``resolve(id)`` is the registry's id of what the user typed
    (it says itself when there is none). Raises :class:`Refused`.

    - `--submit`: the open interview's owner grades it (HAND_OFF), or this process takes it over
      when its owner is gone (TAKE_OVER); none open, or an ID given, is refused.
    - otherwise: one that is running is not started twice (refused); one whose owner is gone is
      resumed when no ID or its own is asked (RESUME), else given up for a NEW round.
    """
    state = read_state()
    if submit:
        if state is None:
            raise Refused("no_open")
        if exercise_id is not None:
            raise Refused("submit_no_id", id=state.exercise)
        return Opening(HAND_OFF if owner_alive(state.owner) else TAKE_OVER, state)
    if state is None:
        return Opening(NEW)
    if owner_alive(state.owner):
        raise Refused("running", id=state.exercise, pid=state.owner, file=shown(Path(state.file)))
    if not Path(state.file).is_file() or state.exercise not in exercises.registry():
        clear_state()  # nothing left to resume
        return Opening(NEW)
    if exercise_id is None or resolve(exercise_id) == state.exercise:
        return Opening(RESUME, state)
    if state.submitted_s is None and state.interview is not None:
        history.close_interview(state.interview, outcome="abandoned", duration_s=max(0.0, now() - state.started_at))
    clear_state()
    return Opening(NEW, stale=state)


def session_events(how: str, lines) -> Iterator[Event]:
    """The events of a session: the input's and submit requests; a take-over begins by grading."""
    events = input_events(lines)
    return itertools.chain([Submit(None)], events) if how == TAKE_OVER else events


# --- events (the one source: attnprep.loop) ---------------------------------------------------------


def input_events(lines, *, poll: Callable[[], str | None] = take_request, tick_s: float = TICK_S) -> Iterator[Event]:
    """The events of a real session: submit requests, replies, ticks (forever; Ctrl-C surfaces as
    KeyboardInterrupt)."""
    return loop.events(lines=lines, poll=poll, tick_s=tick_s)


# --- views ---------------------------------------------------------------------------------------


def shown(path: Path) -> str:
    """The path as the learner reads it: relative to the current folder where it can be, its
    control characters shown (:func:`attnprep.safe_text.visible`)."""
    from attnprep.safe_text import visible

    try:
        return visible(Path(path).resolve().relative_to(Path.cwd().resolve()), one_line=True)
    except ValueError:
        return visible(path, one_line=True)


@dataclass
class ConsoleView(View):
    """Lines on a console; on a terminal (``live``) the clock is one line redrawn in place."""

    console: Console
    live: bool = False
    budget_s: float = 0.0  # the round's, from started()
    _minute: int = 0
    _time_up: bool = False
    _clock_drawn: bool = False
    _clock_text: str = ""

    def _print(self, *parts, style: str | None = None) -> None:
        if self._clock_drawn:  # the clock line: cleared (Enter already moved below it)
            self.console.file.write("\r\x1b[2K")
            self._clock_drawn = False
        self.console.print(Block(Prose.assemble(*parts, style=style or "")))

    def started(self, exercise, path, budget_s, resumed) -> None:
        self._minute, self._time_up, self.budget_s = 0, False, budget_s
        self._print((_w("title", title=exercise.title, id=exercise.id, budget=clock(budget_s)), "bold"))
        if resumed:
            self._print((_w("resumed"), "dim"))
        self._print(_w("write", file=shown(path)))
        self._print((_w("how_submit"), "dim"))

    def tick(self, elapsed, remaining) -> None:
        budget_s, over = self.budget_s, -remaining
        if self.live:
            style = "bold green" if elapsed < 0.7 * budget_s else "bold yellow" if over < 0 else "bold red"
            text = (_w("clock_over", elapsed=clock(elapsed), budget=clock(budget_s), over=clock(over)) if over > 0
                    else _w("clock", elapsed=clock(elapsed), budget=clock(budget_s)))
            if self._clock_drawn and text == self._clock_text:
                return  # the same second: nothing to redraw
            self._clock_text = text
            self.console.file.write("\r\x1b[2K")
            self.console.print(Text.assemble((text, style), (_w("clock_hint"), "dim")), end="")
            self.console.file.flush()
            self._clock_drawn = True
            return
        minute = int(elapsed // 60)
        if minute > self._minute:
            self._minute = minute
            if remaining > 0:
                self._print(f"[{drill.clock_text(elapsed)}] ", _w("left", left=clock(remaining)))
        if remaining <= 0 and not self._time_up:
            self._time_up = True
            self._print(f"[{drill.clock_text(elapsed)}] ", (_w("time_up", budget=clock(budget_s)), "yellow"))

    def input_closed(self) -> None:
        self._print((_w("input_closed"), "dim"))

    def grading(self, elapsed, final=False) -> None:
        self._print(f"[{drill.clock_text(elapsed)}] ", (_w("grading"), "dim"))

    def graded(self, elapsed, result, *, first=False) -> None:
        from attnprep.report import render_result

        budget_s = self.budget_s
        self._print((_w("first_try") if first else _w("fix"), "bold"))
        render_result(result, self.console, full=first)
        if first:
            key = "first_failed" if not result.passed else "first_passed" if plan.on_time(elapsed, budget_s) else "first_passed_late"
            self._print((_w(key, elapsed=clock(elapsed), budget=clock(budget_s)), "bold green" if key == "first_passed" else "bold red"))
        else:
            self._print((_w("fix_passed") if result.passed else _w("fix_failed"), "green" if result.passed else "red"))

    def not_graded(self, detail, *, internal) -> None:
        from attnprep.safe_text import visible

        self._print((_w("internal" if internal else "unreadable", detail=visible(detail, one_line=True)), "yellow"))

    def fix_prompt(self) -> None:
        self._print((_w("fix_prompt"), "cyan"))

    def question(self, i, n, qa, notes) -> None:
        self.console.print()
        self._print((_w("question", i=i, n=n, question=qa.q), "bold"))
        self._print((_w("question_hint", i=i, notes=shown(notes)), "dim"))

    def answer(self, qa) -> None:
        from attnprep import texts

        self._print((texts.t("shell.label", label=_w("answer")), "bold green"), qa.a)
        self._print((_w("known_prompt"), "cyan"))

    def known_again(self) -> None:
        self._print((_w("known_again"), "cyan"))

    def follow_up(self, exercise) -> None:
        self.console.print()
        self._print((_w("follow_up", title=exercise.title, id=exercise.id), "cyan"))

    def abandoned(self, elapsed) -> None:
        self._print((_w("abandoned", elapsed=clock(elapsed)), "bold yellow"))

    def summary(self, rounds) -> None:
        self.console.print()
        for r in rounds:
            if r.first_passed is None:
                self._print(_w("summary_abandoned", id=r.exercise, elapsed=clock(r.elapsed_s)))
                continue
            mark = ("✓ " + _w("passed"), "bold green") if r.first_passed else ("✗ " + _w("failed"), "bold red")
            # the mark is styled: split the template where it goes (a translation may move it)
            text = _w("summary_round", id=r.exercise, mark="\x00", elapsed=clock(r.elapsed_s), budget=clock(r.budget_s))
            before, _, after = text.partition("\x00")
            line: list = [before, mark, after]
            if r.fixes:
                last = _w("passed") if r.last_fix_passed else _w("failed")
                line.append(_w("summary_fixes_1", last=last) if r.fixes == 1 else _w("summary_fixes", n=r.fixes, last=last))
            if r.known or r.unknown:
                line.append(_w("summary_cards", known=r.known, unknown=r.unknown))
            self._print(*line)
        self._print((_w("summary_next"), "dim"))


# --- the session ---------------------------------------------------------------------------------


class RoundEnd(NamedTuple):
    """How one round went."""

    exercise: str
    file: str
    workspace: str
    budget_s: float
    elapsed_s: float  # to the first submission, or until given up
    first_passed: bool | None  # None: given up before submitting
    fixes: int
    last_fix_passed: bool | None
    known: int
    unknown: int
    interview: int | None


def new_interview_file(exercise: Exercise, workspace: Path, *, now: float | None = None) -> Path:
    """A fresh stub ``workspace/interviews/<id>-<YYYYmmdd-HHMM>.py`` (never over a file)."""
    return drill.new_drill_file(exercise, workspace, now=now, subfolder=FOLDER)


def follow_up_of(exercise: Exercise, registry: dict[str, Exercise], done: Iterable[str] = ()) -> Exercise | None:
    """The chained next exercise: the first of the exercise's ``next`` ids that the bank has and
    that was not done in this session."""
    done = set(done)
    for exercise_id in exercise.follow_ups:
        if exercise_id in registry and exercise_id not in done:
            return registry[exercise_id]
    return None


def _default_grade(path: Path, exercise: Exercise) -> Result:
    from attnprep.attempts import grade_attempt

    return grade_attempt(path, exercise, record=False)


# What a session waits for (Session.phase): the first submission (the clock shows, replies are
# "submit" or q); after a failed first try, a fix (Enter grades it, n moves on); a question's
# reveal; whether the answer was known; whether to start the chained exercise.
BLIND, FIX, REVEAL, KNOWN, FOLLOW = "blind", "fix", "reveal", "known", "follow"


@dataclass
class Session(loop.Rules):
    """Runs interview rounds over ``events``, on the timed commands' one loop (:mod:`attnprep.loop`):
    the session is the loop's rules, a small state machine whose :attr:`phase` says what it waits
    for. ``grade(path, exercise)``, ``clock`` (unix time) and ``registry`` default to the real
    ones; tests swap them."""

    events: Iterable[Event]
    view: View
    grade: Callable[[Path, Exercise], Result] | None = None  # None: the real grader
    clock: Callable[[], float] = time.time
    registry: dict[str, Exercise] = field(default_factory=exercises.registry)
    questions: int = DEFAULT_QUESTIONS
    rounds: list[RoundEnd] = field(default_factory=list)
    state: OpenInterview | None = None
    inputs_closed: bool = False  # no more replies will come: every question ends as unanswered
    phase: str | None = None  # what the session waits for; None: it has ended
    _cards: list[int] = field(default_factory=list)  # the round's cards still to ask
    _of: int = 0  # how many cards the round asks in all
    _follow: Exercise | None = None  # the chained exercise offered
    _done: list[str] = field(default_factory=list)  # exercises done in this session

    def __post_init__(self) -> None:
        self.watch = loop.Clock(self.clock)  # the round's clock, started at its state's start

    # -- starting ---------------------------------------------------------------------------------

    def open(self, exercise: Exercise, workspace: Path, *, budget_s: float | None = None) -> OpenInterview:
        """Write the stub, record the start, write the state file."""
        now = self.clock()
        path = new_interview_file(exercise, workspace, now=now).resolve()
        budget_s = loop.budget_s(exercise, seconds=budget_s)
        row = history.open_interview(exercise.id, path, started_at=now, budget_s=budget_s)
        state = OpenInterview(
            exercise=exercise.id, file=str(path), notes=str(path.with_suffix(".notes.md")),
            workspace=str(Path(workspace).resolve()), started_at=now, budget_s=budget_s,
            owner=os.getpid(), interview=row,
        )
        write_state(state)
        return state

    def run(self, state: OpenInterview, *, resumed: bool = False) -> list[RoundEnd]:
        """Run the round of ``state`` (a new one, or one taken over), then the chained ones."""
        self.state = state._replace(owner=os.getpid())
        write_state(self.state)
        self._begin_round(resumed)
        if self.phase is not None:
            loop.run(self.events, self, self.watch)
        self.view.summary(self.rounds)
        return self.rounds

    # -- the loop's hooks -------------------------------------------------------------------------

    def tick(self, now: float) -> list[RoundEnd] | None:
        if self.phase == BLIND:  # the clock shows until the first submission
            elapsed = self._elapsed()
            self.view.tick(elapsed, self.state.budget_s - elapsed)
        return self._over()

    def reply(self, text: str, now: float) -> list[RoundEnd] | None:
        text = text.strip()
        if self.phase != BLIND:
            self._answer(text)
        elif text.lower() in QUIT:
            self._give_up()
        else:  # Enter (or any line): the first submission
            self._submit_first(None)
        return self._over()

    def submit(self, request: str | None, now: float) -> list[RoundEnd] | None:
        if self.phase == BLIND:
            self._submit_first(request)
        elif self.state is not None:  # whatever is asked meanwhile, a submission is a later fix
            self._submit(self._exercise(), request)
            if self.phase == FIX:  # it ends the wait for a fix
                if self.state.last_fix_passed:
                    self._begin_questions()
                else:
                    self._ask_fix()
        return self._over()

    def input_closed(self, now: float) -> list[RoundEnd] | None:
        self.inputs_closed = True
        if self.phase == BLIND:  # nothing can submit from here any more: given up
            self.view.input_closed()
            self._give_up()
        else:
            self._answer(None)
        return self._over()

    def exhausted(self, now: float) -> list[RoundEnd]:
        self.inputs_closed = True
        if self.phase == BLIND:
            self._give_up()
        elif self.phase is not None:
            self._answer(None)
        return self.rounds

    def interrupted(self, now: float) -> list[RoundEnd]:
        """Ctrl-C: the round ends (given up if nothing was submitted), and the session with it."""
        if self.state is not None:
            if self.state.submitted_s is None:
                self._abandon()
            self._end_round(stopped=True)
        self.phase = None
        return self.rounds

    def _over(self) -> list[RoundEnd] | None:
        return self.rounds if self.phase is None else None

    # -- the phases of a round --------------------------------------------------------------------

    def _exercise(self) -> Exercise:
        return self.registry[self.state.exercise]

    def _elapsed(self) -> float:
        return self.watch.elapsed()

    def _wait(self, phase: str) -> None:
        """Wait for a reply in ``phase``; with no more input, it is the empty reply at once."""
        self.phase = phase
        if self.inputs_closed:
            self._answer(None)

    def _answer(self, reply: str | None) -> None:
        """A reply (None: there will be none) to what the phase asked."""
        said = None if reply is None else reply.lower()
        if self.phase == FIX:
            if said is None or said in NEXT:
                self._begin_questions()
            elif said in QUIT:
                self._end_round(stopped=True)
            else:
                result = self._submit(self._exercise(), None)
                if result is not None and result.passed:
                    self._begin_questions()
                else:
                    self._ask_fix()
        elif self.phase == REVEAL:
            if said is None or said in QUIT:
                self._end_round(stopped=True)
            else:
                self.view.answer(self._exercise().qa[self._cards[0] - 1])
                self._wait(KNOWN)
        elif self.phase == KNOWN:
            if said is None or said in QUIT:
                self._end_round(stopped=True)
            elif said in YES or said in NO:
                self._mark(said in YES)
                self._ask_question()
            else:
                self.view.known_again()
        elif self.phase == FOLLOW:
            if said is None or said not in {"", *YES}:
                self.phase = None
            else:
                self.state = self.open(self._follow, Path(self.rounds[-1].workspace))
                self._begin_round(resumed=False)

    def _begin_round(self, resumed: bool) -> None:
        self.watch.started = self.state.started_at
        self.view.started(self._exercise(), Path(self.state.file), self.state.budget_s, resumed)
        if self.state.submitted_s is None:
            self.phase = BLIND
        else:
            self._after_first()

    def _submit_first(self, request: str | None) -> None:
        if self._submit(self._exercise(), request) is not None:  # else: not graded, not counted
            self._after_first()

    def _after_first(self) -> None:
        if not self.state.first_passed and not self.state.last_fix_passed:
            self._ask_fix()
        else:
            self._begin_questions()

    def _ask_fix(self) -> None:
        self.view.fix_prompt()
        self._wait(FIX)

    def _begin_questions(self) -> None:
        exercise = self._exercise()
        self._cards = []
        if exercise.qa and self.questions > 0:
            order = plan.card_order(exercise.id, len(exercise.qa), history.qa_marks(exercise.id), now=self.clock())
            asked = self.state.asked
            self._cards = [c for c in order if c not in asked][: max(0, self.questions - len(asked))]
            self._of = len(asked) + len(self._cards)
        self._ask_question()

    def _ask_question(self) -> None:
        if not self._cards:
            self._end_round(stopped=False)
            return
        exercise = self._exercise()
        qa = exercise.qa[self._cards[0] - 1]
        i = len(self.state.asked) + 1
        notes = Path(self.state.notes)
        self._note(notes, exercise, i, qa)
        self.view.question(i, self._of, qa, notes)
        self._wait(REVEAL)

    def _mark(self, known: bool) -> None:
        exercise, card = self._exercise(), self._cards.pop(0)
        history.mark_card(exercise.id, card, exercise.qa[card - 1].q, known=known, marked_at=self.clock(),
                          interview=self.state.interview)
        self._update(asked=(*self.state.asked, card), known=self.state.known + known,
                     unknown=self.state.unknown + (not known))

    def _give_up(self) -> None:
        """Given up before submitting (q, no more input)."""
        self._abandon()
        self._end_round(stopped=False)

    def _end_round(self, *, stopped: bool) -> None:
        """The round is over: its state file goes; then the chained exercise is offered, unless
        the user stopped, gave up, or there is none."""
        exercise = self._exercise()
        end = self._close_round(exercise)
        self.rounds.append(end)
        self._done.append(exercise.id)
        follow = follow_up_of(exercise, self.registry, self._done)
        if stopped or end.first_passed is None or follow is None:
            self.phase = None
            return
        self._follow = follow
        self.view.follow_up(follow)
        self._wait(FOLLOW)

    def _note(self, notes: Path, exercise: Exercise, i: int, qa: QA) -> None:
        """Append the question to the notes file (never rewrites what the user wrote there)."""
        try:
            try:
                with open(notes, "x", encoding="utf-8") as f:
                    f.write(_w("notes_head", title=exercise.title))
            except FileExistsError:
                pass
            with open(notes, "a", encoding="utf-8") as f:
                f.write(_w("notes_question", i=i, question=qa.q))
        except OSError:
            pass  # the notes file is a convenience; the question is on the screen

    # -- grading ----------------------------------------------------------------------------------

    def _submit(self, exercise: Exercise, request: str | None) -> Result | None:
        """Grade the file: the first submission (it counts) or a later fix. None when it could
        not be graded (not counted)."""
        st = self.state
        first = st.submitted_s is None
        elapsed = self._elapsed()
        self.view.grading(elapsed)
        try:
            result = (self.grade or _default_grade)(Path(st.file), exercise)
        except OSError as exc:
            self.view.not_graded(exc.strerror or str(exc), internal=False)
            self._update(answered=request, answer={"error": str(exc)})
            return None
        if result.internal:
            from attnprep import wording

            detail = wording.error_line(result.error) if result.error is not None else ""
            self.view.not_graded(detail, internal=True)
            self._update(answered=request, answer={"error": detail})
            return None
        history.record(result, kind="check", started_at=st.started_at, duration_s=elapsed,
                       interview=st.interview, first_try=first, budget_s=st.budget_s)
        if first:
            if st.interview is not None:
                history.close_interview(st.interview, outcome="submitted", duration_s=elapsed)
            changes = {"submitted_s": elapsed, "first_passed": result.passed}
        else:
            changes = {"fixes": st.fixes + 1, "last_fix_passed": result.passed}
        line = drill.short_verdict(result).plain
        self._update(answered=request, answer={"passed": result.passed, "first_try": first, "line": line}, **changes)
        self.view.graded(elapsed if first else st.submitted_s, result, first=first)
        return result

    def _update(self, **changes) -> None:
        self.state = self.state._replace(**changes)
        try:
            write_state(self.state)
        except OSError:
            pass  # only `--submit` from elsewhere needs it; this session goes on

    def _abandon(self) -> None:
        elapsed = self._elapsed()
        if self.state.interview is not None:
            history.close_interview(self.state.interview, outcome="abandoned", duration_s=elapsed)
        self.view.abandoned(elapsed)

    def _close_round(self, exercise: Exercise) -> RoundEnd:
        """Close the round: the state file goes (the interview is no longer open)."""
        st = self.state
        self.state = None
        on_disk = read_state()
        if on_disk is not None and on_disk.file == st.file:
            clear_state(st)
        return RoundEnd(
            exercise=exercise.id, file=st.file, workspace=st.workspace, budget_s=st.budget_s,
            elapsed_s=st.submitted_s if st.submitted_s is not None else self.watch.elapsed(),
            first_passed=st.first_passed, fixes=st.fixes, last_fix_passed=st.last_fix_passed,
            known=st.known, unknown=st.unknown, interview=st.interview,
        )


def exit_code(rounds: list[RoundEnd]) -> int:
    if any(r.first_passed is None for r in rounds):
        return EXIT_ABANDONED
    return EXIT_PASSED if rounds and all(r.first_passed for r in rounds) else EXIT_FAILED
