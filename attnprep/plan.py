"""What to practise today: spaced repetition over the history (SPEC §10, `attnprep today`).

Pure functions over the history's records, with "now" passed in, so that tests drive weeks of
synthetic history directly. Torch-free, prints nothing; the command only renders a :class:`Plan`.

The rules, per exercise (dates are local calendar days):

- A **review** is a timed first try: the first submission of an interview, or a drill (passed =
  passed within its budget; a drill that timed out or was given up, an interview given up
  before submitting or first submitted past its budget, is a failure). Plain `check` runs are
  practice, not reviews.
- After a pass the interval grows: :data:`FIRST_INTERVAL` day(s) after the first pass (or the
  first pass after a failure), then times :data:`GROWTH` (rounded up, at most
  :data:`MAX_INTERVAL`). A pass before the exercise is due keeps the interval (cramming does not
  stretch it). After a failure the interval resets and the exercise is due
  :data:`RETRY_AFTER_FAIL` day(s) later.
- Q&A cards follow the same rule on their own marks: a card marked known comes back after
  :data:`CARD_FIRST_INTERVAL` days, then growing; a card not known comes back the next day.
- New exercises (nothing in the history) are introduced :data:`NEW_PER_DAY` a day, in the
  order of the list; an exercise first practised today takes one of today's places.
- The list is short (:data:`MAX_ITEMS` lines): failures first, then due reviews (most overdue
  first), exercises whose only due work is Q&A cards, exercises checked but never timed, then the
  new ones.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from attnprep.history import Interview, QAMark, Run

FIRST_INTERVAL = 1  # days
GROWTH = 2.5
MAX_INTERVAL = 60
RETRY_AFTER_FAIL = 1
CARD_FIRST_INTERVAL = 3
CARD_RETRY = 1
NEW_PER_DAY = 2
MAX_ITEMS = 6
UPCOMING = 3
PLAN_VERSION = 1

# Why an exercise is on today's list (stable tokens, in the order the list shows them).
WHYS = ("failed", "due", "cards", "untimed", "new")

# Every word this module shows, in one place (str.format templates).
# Every word this module shows is a texts key of the [plan] table (attnprep/texts/<lang>.toml).


def _w(key: str, **values) -> str:
    from attnprep import texts

    return texts.t("plan." + key, **values)


def day_of(timestamp: float) -> dt.date:
    """The local calendar day of a unix time."""
    return dt.date.fromtimestamp(timestamp)


def ago(day: dt.date, today: dt.date) -> str:
    n = (today - day).days
    return _w("today") if n <= 0 else _w("yesterday") if n == 1 else _w("days_ago", n=n)


# --- records -------------------------------------------------------------------------------------


class Review(NamedTuple):
    """One timed first try of an exercise."""

    exercise: str
    at: float  # unix time
    passed: bool
    source: str  # "interview" or "drill"
    mistakes: tuple[str, ...] = ()  # mistake ids of the verdict
    how: str = ""  # of a failure without a verdict of its own: "timeout", "abandoned" or "late"


class Interval(NamedTuple):
    """Where one exercise or one card stands: its interval and the day it is next due."""

    interval: int  # days; 0 right after a failure
    due: dt.date
    last_day: dt.date
    last_passed: bool
    count: int


class ExerciseState(NamedTuple):
    exercise: str
    reviews: tuple[Review, ...]
    schedule: Interval | None  # None: never reviewed
    checks: int  # untimed checks
    first_seen: dt.date | None  # the first day anything of it is in the history


class CardState(NamedTuple):
    exercise: str
    card: int  # 1-based position in the exercise's Q&A
    question: str
    schedule: Interval

    @property
    def known(self) -> bool:
        return self.schedule.last_passed

    def to_json(self) -> dict:
        return {"card": self.card, "question": self.question, "known": self.known,
                "due": self.schedule.due.isoformat(), "interval_days": self.schedule.interval}


class Item(NamedTuple):
    """One line of today's list."""

    exercise: str
    why: str  # one of WHYS
    reason: str  # the line's text after the id
    due: dt.date | None  # None: a new exercise
    interval: int | None
    cards: tuple[CardState, ...]  # Q&A cards of the exercise due today

    def to_json(self) -> dict:
        return {
            "exercise": self.exercise,
            "why": self.why,
            "reason": self.reason,
            "due": None if self.due is None else self.due.isoformat(),
            "interval_days": self.interval,
            "cards": [c.to_json() for c in self.cards],
        }


class Plan(NamedTuple):
    today: dt.date
    items: tuple[Item, ...]
    more: int  # due items beyond the short list
    upcoming: tuple[tuple[str, dt.date], ...]  # the next exercises to come due, soonest first

    def to_json(self) -> dict:
        return {
            "version": PLAN_VERSION,
            "date": self.today.isoformat(),
            "items": [i.to_json() for i in self.items],
            "more_due": self.more,
            "upcoming": [{"exercise": e, "due": d.isoformat()} for e, d in self.upcoming],
        }


# --- the schedule --------------------------------------------------------------------------------


def schedule(outcomes: Iterable[tuple[float, bool]], *, first: int, retry: int) -> Interval | None:
    """Replay (unix time, passed) outcomes, oldest first, into an interval and a due day."""
    state: Interval | None = None
    for at, passed in sorted(outcomes):
        day = day_of(at)
        if not passed:
            state = Interval(0, day + dt.timedelta(days=retry), day, False, (state.count if state else 0) + 1)
            continue
        if state is None or state.interval == 0:
            interval = first
        elif day >= state.due:
            interval = min(MAX_INTERVAL, max(state.interval + 1, math.ceil(state.interval * GROWTH)))
        else:  # passed again before it was due: the interval stays
            interval = state.interval
        state = Interval(interval, day + dt.timedelta(days=interval), day, True, (state.count if state else 0) + 1)
    return state


def on_time(duration_s: float, budget_s: float | None) -> bool:
    """Whether a timed first try ended within its budget (unknown budget: yes)."""
    return budget_s is None or duration_s <= budget_s


def reviews_of(runs: Iterable[Run], interviews: Iterable[Interview] = ()) -> list[Review]:
    """The timed first tries in the history, oldest first. An interview's first try that passed
    past its budget is a failure ("late"): the interviewer's clock ran out first."""
    interviews = list(interviews)
    budgets = {i.id: i.budget_s for i in interviews}
    found = []
    for run in runs:
        if run.first_try:
            budget = run.budget_s if run.budget_s is not None else budgets.get(run.interview)
            late = run.passed and not on_time(run.duration_s, budget)
            found.append(Review(run.exercise, run.started_at, run.passed and not late, "interview", run.diagnoses,
                                "late" if late else ""))
        elif run.kind == "drill" and run.outcome in ("passed", "timeout", "abandoned"):
            passed = run.outcome == "passed"
            found.append(Review(run.exercise, run.started_at, passed, "drill", () if passed else run.diagnoses,
                                "" if passed else run.outcome))
    for interview in interviews:
        if interview.outcome == "abandoned":
            found.append(Review(interview.exercise, interview.started_at, False, "interview", (), "abandoned"))
    return sorted(found, key=lambda r: r.at)


def exercise_states(exercise_ids: Sequence[str], runs: Sequence[Run], interviews: Sequence[Interview] = ()) -> dict[str, ExerciseState]:
    reviews = reviews_of(runs, interviews)
    states = {}
    for exercise in exercise_ids:
        mine = tuple(r for r in reviews if r.exercise == exercise)
        seen = [r.started_at for r in runs if r.exercise == exercise] + [i.started_at for i in interviews if i.exercise == exercise]
        states[exercise] = ExerciseState(
            exercise=exercise,
            reviews=mine,
            schedule=schedule(((r.at, r.passed) for r in mine), first=FIRST_INTERVAL, retry=RETRY_AFTER_FAIL),
            checks=sum(1 for r in runs if r.exercise == exercise and r.kind == "check" and r.first_try is None),
            first_seen=day_of(min(seen)) if seen else None,
        )
    return states


def card_states(marks: Iterable[QAMark]) -> dict[tuple[str, int], CardState]:
    """Each card ever marked, by (exercise, card)."""
    by_card: dict[tuple[str, int], list[QAMark]] = {}
    for mark in marks:
        by_card.setdefault((mark.exercise, mark.card), []).append(mark)
    states = {}
    for key, card_marks in by_card.items():
        card_marks.sort(key=lambda m: m.marked_at)
        interval = schedule(((m.marked_at, m.known) for m in card_marks), first=CARD_FIRST_INTERVAL, retry=CARD_RETRY)
        states[key] = CardState(key[0], key[1], card_marks[-1].question, interval)
    return states


def card_order(exercise: str, count: int, marks: Iterable[QAMark], *, now: float) -> list[int]:
    """The order in which an interview asks the cards (1-based numbers) of an exercise with
    ``count`` cards: due cards not known, then other due cards, then cards never asked (in their
    order), then the rest, soonest due first."""
    today = day_of(now)
    states = {card: s for (ex, card), s in card_states(marks).items() if ex == exercise and 1 <= card <= count}

    def rank(card: int) -> tuple:
        state = states.get(card)
        if state is None:
            return (2, dt.date.min, card)
        due = state.schedule.due
        if due <= today:
            return (0 if not state.known else 1, due, card)
        return (3, due, card)

    return sorted(range(1, count + 1), key=rank)


def _failure(review: Review, today: dt.date, mistake_title: Callable[[str], str]) -> str:
    when = ago(day_of(review.at), today)
    if review.mistakes:
        return _w("failed_mistake", ago=when, mistake=mistake_title(review.mistakes[0]))
    if review.how == "timeout":
        return _w("failed_timeout", ago=when)
    if review.how == "abandoned":
        return _w("failed_abandoned", ago=when)
    if review.how == "late":
        return _w("failed_late", ago=when)
    return _w("failed", ago=when)


def _cards_text(cards: Sequence[CardState]) -> str:
    text = _w("cards_1") if len(cards) == 1 else _w("cards", n=len(cards))
    unknown = sum(1 for c in cards if not c.known)
    return _w("with_unknown", cards=text, unknown=_w("cards_unknown", n=unknown)) if unknown else text


def make_plan(
    exercise_ids: Sequence[str],
    runs: Sequence[Run],
    interviews: Sequence[Interview] = (),
    marks: Sequence[QAMark] = (),
    *,
    now: float,
    mistake_title: Callable[[str], str] = lambda m: m,
    new_per_day: int = NEW_PER_DAY,
    max_items: int = MAX_ITEMS,
) -> Plan:
    """Today's plan for the exercises ``exercise_ids`` (in teaching order) from the history."""
    today = day_of(now)
    states = exercise_states(exercise_ids, runs, interviews)
    cards = card_states(marks)
    due_cards: dict[str, list[CardState]] = {}
    for (exercise, _), card in sorted(cards.items()):
        if card.schedule.due <= today:
            due_cards.setdefault(exercise, []).append(card)

    due: list[tuple[tuple, Item]] = []
    new: list[Item] = []
    introduced_today = 0
    for index, exercise in enumerate(exercise_ids):
        state = states[exercise]
        mine = tuple(due_cards.get(exercise, ()))
        s = state.schedule
        if state.first_seen == today:
            introduced_today += 1
        if s is not None and s.due <= today:
            if not s.last_passed:
                why, reason = "failed", _failure(state.reviews[-1], today, mistake_title)
            else:
                why = "due"
                reason = _w("due_1" if s.interval == 1 else "due", ago=ago(s.last_day, today), n=s.interval)
            if mine:
                reason = _w("with_cards", reason=reason, cards=_cards_text(mine))
            due.append(((WHYS.index(why), s.due, index), Item(exercise, why, reason, s.due, s.interval, mine)))
        elif mine:
            first_due = min(c.schedule.due for c in mine)
            due.append(((WHYS.index("cards"), first_due, index),
                        Item(exercise, "cards", _cards_text(mine), first_due, None if s is None else s.interval, mine)))
        elif s is None and state.first_seen is None:
            new.append(Item(exercise, "new", _w("new"), None, None, ()))
        elif s is None:  # checked (or an interview left before its first submission), never timed
            reason = _w("untimed", n=state.checks) if state.checks else _w("started")
            due.append(((WHYS.index("untimed"), today, index), Item(exercise, "untimed", reason, today, None, ())))

    due.sort(key=lambda pair: pair[0])
    items = [item for _, item in due][:max_items]
    slots = max(0, min(new_per_day - introduced_today, max_items - len(items)))
    items += new[:slots]
    upcoming = sorted(
        ((ex, st.schedule.due) for ex, st in states.items() if st.schedule is not None and st.schedule.due > today),
        key=lambda pair: (pair[1], exercise_ids.index(pair[0])),
    )
    return Plan(today, tuple(items), max(0, len(due) - max_items), tuple(upcoming[:UPCOMING]))


def plan_from_history(*, now: float) -> Plan:
    """Today's plan for the registry's exercises from the user's history."""
    from attnprep import exercises, history

    catalogue = exercises.mistake_catalogue()

    def title(mistake_id: str) -> str:
        known = catalogue.get(mistake_id)
        return known.title if known is not None else mistake_id

    return make_plan(
        list(exercises.listing()),
        history.runs(),
        history.interviews(),
        history.qa_marks(),
        now=now,
        mistake_title=title,
    )
