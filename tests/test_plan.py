"""`attnprep today`'s spaced repetition (attnprep.plan) on synthetic histories spanning weeks:
intervals grow after first-try passes and reset after failures, Q&A cards not known come back
sooner, new exercises arrive a few a day in list order; and the command on a real history."""

from __future__ import annotations

import datetime as dt
import json

from typer.testing import CliRunner

from attnprep import exercises, history, plan
from attnprep.app import app
from attnprep.grader.result import Diagnosis, Result, Verdict

START = dt.datetime(2025, 3, 3, 9, 0)  # a Monday, local time
IDS = ["a", "b", "c", "d", "e"]  # exercise ids in list order: the plan takes them as given, opaque


def at(day: int, hour: int = 9) -> float:
    """Unix time of ``day`` days after START at ``hour`` o'clock, local time."""
    return (START + dt.timedelta(days=day)).replace(hour=hour).timestamp()


def date(day: int) -> dt.date:
    return (START + dt.timedelta(days=day)).date()


class History:
    """Builds history.Run / Interview / QAMark records the way attnprep stores them."""

    def __init__(self) -> None:
        self.runs: list[history.Run] = []
        self.interviews: list[history.Interview] = []
        self.marks: list[history.QAMark] = []

    def _run(self, exercise, day, kind, passed, mistakes=(), outcome=None, first_try=None, interview=None):
        self.runs.append(history.Run(len(self.runs) + 1, exercise, f"{exercise}.py", kind, at(day), 60.0,
                                     "passed" if passed else "wrong output", tuple(mistakes), passed, outcome,
                                     interview, first_try))

    def interview(self, exercise, day, passed, *mistakes, fixed=False):
        row = len(self.interviews) + 1
        self.interviews.append(history.Interview(row, exercise, f"{exercise}.py", at(day), 300.0, "submitted", 60.0))
        self._run(exercise, day, "check", passed, mistakes, first_try=True, interview=row)
        if fixed:
            self._run(exercise, day, "check", True, first_try=False, interview=row)

    def abandoned_interview(self, exercise, day):
        self.interviews.append(history.Interview(len(self.interviews) + 1, exercise, f"{exercise}.py", at(day), 300.0, "abandoned", 30.0))

    def drill(self, exercise, day, outcome, *mistakes):
        self._run(exercise, day, "drill", outcome == "passed", mistakes, outcome=outcome)

    def check(self, exercise, day, passed, *mistakes):
        self._run(exercise, day, "check", passed, mistakes)

    def mark(self, exercise, card, day, known, hour=10):
        self.marks.append(history.QAMark(exercise, card, f"question {card}", known, at(day, hour), None))

    def plan(self, day, **kwargs) -> plan.Plan:
        return plan.make_plan(IDS, self.runs, self.interviews, self.marks, now=at(day, 8),
                              mistake_title=lambda m: f"<{m}>", **kwargs)


def lines(p: plan.Plan) -> list[tuple[str, str, str]]:
    return [(i.exercise, i.why, i.reason) for i in p.items]


# --- the interval rule ---------------------------------------------------------------------------


def replay(outcomes: list[tuple[int, bool]]) -> list[tuple[int, dt.date]]:
    """The (interval, due day) after each outcome."""
    seen = []
    for n in range(1, len(outcomes) + 1):
        s = plan.schedule(((at(d), p) for d, p in outcomes[:n]), first=plan.FIRST_INTERVAL, retry=plan.RETRY_AFTER_FAIL)
        seen.append((s.interval, s.due))
    return seen


def test_each_pass_on_time_grows_the_interval_and_a_failure_resets_it():
    outcomes = [(0, True), (1, True), (4, True), (12, True), (32, False), (33, False), (34, True), (35, True), (38, True)]
    assert replay(outcomes) == [
        (1, date(1)), (3, date(4)), (8, date(12)), (20, date(32)),  # 1 → 3 → 8 → 20 days
        (0, date(33)), (0, date(34)),  # failed: back the next day, twice
        (1, date(35)), (3, date(38)), (8, date(46)),  # passes grow it again from the start
    ]


def test_passing_again_before_the_due_day_does_not_stretch_the_interval():
    assert replay([(0, True), (1, True), (2, True), (3, True)]) == [(1, date(1)), (3, date(4)), (3, date(5)), (3, date(6))]


def test_the_interval_is_capped():
    day, outcomes = 0, []
    for _ in range(10):
        outcomes.append((day, True))
        day += 200
    assert replay(outcomes)[-1][0] == plan.MAX_INTERVAL


def test_a_card_not_known_comes_back_sooner_than_a_known_one():
    h = History()
    h.mark("b", 1, 0, known=True)
    h.mark("b", 2, 0, known=False)
    cards = plan.card_states(h.marks)
    assert cards[("b", 1)].schedule.due == date(plan.CARD_FIRST_INTERVAL)
    assert cards[("b", 2)].schedule.due == date(plan.CARD_RETRY)
    assert plan.CARD_RETRY < plan.CARD_FIRST_INTERVAL
    h.mark("b", 1, 3, known=True)  # known again on its due day: it grows
    h.mark("b", 2, 1, known=True)
    cards = plan.card_states(h.marks)
    assert cards[("b", 1)].schedule.interval > plan.CARD_FIRST_INTERVAL
    assert cards[("b", 2)].schedule.interval == plan.CARD_FIRST_INTERVAL


def test_what_counts_as_a_first_try():
    """Interview first submissions and drills count; later fixes and plain checks do not; a drill
    past its budget or given up, and an interview given up, are failures."""
    h = History()
    h.interview("b", 0, False, "missing_scale", fixed=True)
    h.check("b", 0, True)
    h.drill("d", 0, "timeout", "gqa_heads_tiled")
    h.drill("c", 0, "abandoned")
    h.abandoned_interview("e", 0)
    reviews = plan.reviews_of(h.runs, h.interviews)
    assert [(r.exercise, r.passed, r.source, r.how) for r in reviews] == [
        ("b", False, "interview", ""), ("d", False, "drill", "timeout"), ("c", False, "drill", "abandoned"),
        ("e", False, "interview", "abandoned"),
    ]
    assert reviews[0].mistakes == ("missing_scale",)


# --- the plan over weeks -------------------------------------------------------------------------


def test_a_month_of_practice():
    h = History()
    # day 0: nothing yet → the first two exercises of the list, in order
    assert lines(h.plan(0)) == [("a", "new", "not practised yet"), ("b", "new", "not practised yet")]
    h.interview("a", 0, True)
    h.interview("b", 0, False, "missing_scale", fixed=True)  # the fix does not make it a pass
    h.mark("b", 1, 0, known=True)
    h.mark("b", 2, 0, known=False)
    # that evening: nothing is due, and today's two new places are taken
    assert plan.make_plan(IDS, h.runs, h.interviews, h.marks, now=at(0, 20)).items == ()

    # day 1: the failure first, with its mistake and its card not known; then the pass due; then
    # two new exercises
    p = h.plan(1)
    assert lines(p) == [
        ("b", "failed", "failed yesterday (<missing_scale>); 1 Q&A card due (1 not known)"),
        ("a", "due", "passed yesterday, interval 1 day"),
        ("c", "new", "not practised yet"),
        ("d", "new", "not practised yet"),
    ]
    assert [c.card for c in p.items[0].cards] == [2]
    h.drill("b", 1, "passed")
    h.drill("a", 1, "passed")  # on its due day: 1 → 3 days
    h.mark("b", 2, 1, known=True)
    h.drill("c", 1, "timeout")
    h.drill("d", 1, "passed")

    # day 2: the time-out first; b and d passed yesterday for the first time; the last new one
    p = h.plan(2)
    assert lines(p) == [
        ("c", "failed", "failed yesterday (drill timed out)"),
        ("b", "due", "passed yesterday, interval 1 day"),
        ("d", "due", "passed yesterday, interval 1 day"),
        ("e", "new", "not practised yet"),
    ]
    assert p.upcoming == (("a", date(4)),)
    for ex in ("c", "b", "d", "e"):
        h.drill(ex, 2, "passed")

    # day 3: b is not due (3 days) but its card 1, known on day 0, is
    assert lines(h.plan(3)) == [
        ("c", "due", "passed yesterday, interval 1 day"),
        ("e", "due", "passed yesterday, interval 1 day"),
        ("b", "cards", "1 Q&A card due"),
    ]

    # days 3..30: pass whatever is due; every interval only grows
    intervals: dict[str, list[int]] = {}
    for day in range(3, 31):
        for item in h.plan(day).items:
            if item.why != "cards":
                h.drill(item.exercise, day, "passed")
            for card in item.cards:
                h.mark(card.exercise, card.card, day, known=True)
        for ex, state in plan.exercise_states(IDS, h.runs, h.interviews).items():
            intervals.setdefault(ex, []).append(state.schedule.interval)
    for ex, seen in intervals.items():
        assert seen == sorted(seen), ex
    assert intervals["a"][-1] == 20  # 1, 3, 8, 20
    assert plan.card_states(h.marks)[("b", 1)].schedule.interval > plan.CARD_FIRST_INTERVAL

    # day 31: a failed first try resets d; it is back the next day, with its mistake
    h.interview("d", 31, False, "gqa_heads_tiled")
    assert ("d", "failed", "failed yesterday (<gqa_heads_tiled>)") in lines(h.plan(32))
    assert plan.exercise_states(IDS, h.runs, h.interviews)["d"].schedule.interval == 0
    assert "d" not in [i.exercise for i in h.plan(31).items]  # not the same day


def test_checked_or_started_but_never_timed_is_on_the_list():
    h = History()
    h.check("a", 0, False)
    h.check("a", 0, True)
    h.interviews.append(history.Interview(1, "b", "b.py", at(0), 300.0, "open", None))  # killed before submitting
    assert lines(h.plan(1)) == [
        ("a", "untimed", "checked 2×, never timed (interview or drill)"),
        ("b", "untimed", "started, never finished"),
        ("c", "new", "not practised yet"),
        ("d", "new", "not practised yet"),
    ]


def test_an_exercise_first_practised_today_takes_a_new_place():
    h = History()
    h.check("c", 0, True)  # out of order, today
    assert [i.exercise for i in h.plan(0).items if i.why == "new"] == ["a"]
    assert [i.exercise for i in h.plan(0, new_per_day=3).items if i.why == "new"] == ["a", "b"]


def test_the_list_is_short_and_says_how_many_more_are_due():
    h = History()
    for ex in IDS:
        h.drill(ex, 0, "timeout")
    p = h.plan(5, max_items=3)
    assert [i.exercise for i in p.items] == IDS[:3] and p.more == 2
    assert all(i.reason == "failed 5 days ago (drill timed out)" for i in p.items)


def test_cards_are_asked_not_known_first_then_never_asked_then_the_rest():
    h = History()
    h.mark("b", 1, 0, known=True)  # due on day 3
    h.mark("b", 3, 0, known=False)  # due on day 1
    h.mark("b", 5, 0, known=True)
    assert plan.card_order("b", 6, h.marks, now=at(1)) == [3, 2, 4, 6, 1, 5]
    assert plan.card_order("b", 6, h.marks, now=at(3)) == [3, 1, 5, 2, 4, 6]
    assert plan.card_order("d", 2, h.marks, now=at(3)) == [1, 2]


def test_the_plan_as_json():
    h = History()
    h.interview("b", 0, False, "missing_scale")
    h.mark("b", 2, 0, known=False)
    h.drill("a", 0, "passed")
    doc = json.loads(json.dumps(h.plan(1).to_json()))
    assert doc["version"] == plan.PLAN_VERSION and doc["date"] == date(1).isoformat()
    first = doc["items"][0]
    assert first["exercise"] == "b" and first["why"] == "failed" and first["due"] == date(1).isoformat()
    assert first["cards"] == [{"card": 2, "question": "question 2", "known": False, "due": date(1).isoformat(), "interval_days": 0}]
    assert doc["items"][1]["why"] == "due" and doc["items"][1]["interval_days"] == 1


# --- the command, on a real history --------------------------------------------------------------


def result(exercise: str, passed: bool, *mistakes: str) -> Result:
    return Result(exercise=exercise, file=f"{exercise}.py", verdict=Verdict.PASSED if passed else Verdict.WRONG_OUTPUT,
                  diagnoses=tuple(Diagnosis(m) for m in mistakes))


def test_today_reads_the_history():
    days = 86400.0
    now = dt.datetime.now().replace(hour=12).timestamp()
    row = history.open_interview("gqa", "gqa.py", started_at=now - 2 * days, budget_s=480)
    history.record(result("gqa", False, "gqa_heads_tiled"), kind="check", started_at=now - 2 * days, duration_s=300,
                   interview=row, first_try=True)
    history.close_interview(row, outcome="submitted", duration_s=300)
    history.record(result("mha", True), kind="drill", started_at=now - 1 * days, duration_s=200, outcome="passed")
    history.mark_card("mha", 1, "Why divide by sqrt(d_k)?", known=False, marked_at=now - days)
    runner = CliRunner()
    out = runner.invoke(app, ["today"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert out.exit_code == 0, out.output
    title = exercises.mistake_catalogue()["gqa_heads_tiled"].title
    text = " ".join(out.stdout.split())
    assert f"gqa failed 2 days ago ({title})" in text
    assert "start: `attnprep interview gqa`" in text
    assert "mha passed yesterday, interval 1 day; 1 Q&A card due (1 not known)" in text
    first_new = next(ex for ex in exercises.listing() if ex not in ("gqa", "mha"))
    assert f"{first_new} not practised yet" in text
    doc = json.loads(runner.invoke(app, ["today", "--json"]).stdout)
    assert [i["exercise"] for i in doc["items"]][:2] == ["gqa", "mha"]
    assert doc["items"][1]["cards"][0]["question"] == "Why divide by sqrt(d_k)?"
