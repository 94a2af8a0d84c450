"""`attnprep interview`: the session's event loop with a fake grader, scripted events and a fake
clock; the state file and `--submit`; and end to end with the real grader — a scripted answers
file, and a running interview driven through its stdin and `attnprep interview --submit`."""

from __future__ import annotations

import io
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from attnprep import exercises, history, loop
from attnprep import interview as iv
from attnprep.app import app
from attnprep.grader.result import Diagnosis, ErrorInfo, Result, Verdict, msg

ROOT = Path(__file__).resolve().parent.parent
MHA = exercises.get("mha")


# --- fakes ---------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.t = 1_750_000_000.0

    def __call__(self) -> float:
        return self.t


def result(passed: bool, *mistakes: str, exercise: str = "mha", internal: bool = False) -> Result:
    verdict = Verdict.PASSED if passed else Verdict.ERROR if internal else Verdict.WRONG_OUTPUT
    return Result(
        exercise=exercise, file=f"{exercise}.py", verdict=verdict,
        diagnoses=tuple(Diagnosis(m) for m in mistakes),
        error=ErrorInfo("internal", msg("error.internal_child", text="the grader broke")) if internal else None, internal=internal,
    )


class FakeGrader:
    """Returns the queued results in order and remembers what it graded; each grade takes 2 s."""

    def __init__(self, clock: FakeClock, *results: Result) -> None:
        self.clock, self.results, self.graded = clock, list(results), []

    def __call__(self, path: Path, exercise) -> Result:
        self.graded.append((Path(path), exercise.id, Path(path).read_text(encoding="utf-8")))
        self.clock.t += 2
        return self.results.pop(0)


def after(clock: FakeClock, seconds: float, event):
    """An event that happens ``seconds`` after the previous one."""
    return ("wait", seconds, event)


def events(clock: FakeClock, *steps):
    """Scripted events; ``after(...)`` steps advance the clock first; callables run (to edit a
    file or look at the state) and yield nothing."""
    for step in steps:
        if callable(step):
            step()
            continue
        if isinstance(step, tuple) and step[0] == "wait":
            clock.t += step[1]
            step = step[2]
        yield step


def session(tmp_path, clock, grader, *steps, questions=2, registry=None, live=False):
    out = io.StringIO()
    s = iv.Session(
        events=events(clock, *steps),
        view=iv.ConsoleView(Console(file=out, width=200, no_color=True, highlight=False), live=live),
        grade=grader, clock=clock, questions=questions,
        registry=registry if registry is not None else exercises.registry(),
    )
    return s, out


def enter(text: str = "") -> loop.Reply:
    return loop.Reply(text)


def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


# --- a whole interview, scripted -----------------------------------------------------------------


def test_buggy_first_try_then_a_fix_then_two_cards(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(False, "missing_scale"), result(True))
    ws = workspace(tmp_path)
    s, out = session(tmp_path, clock, grader)
    state = s.open(MHA, ws, budget_s=300)
    path = Path(state.file)
    assert path.parent == ws / "interviews" and path.read_text(encoding="utf-8") == exercises.render_stub(MHA)
    assert iv.read_state().file == str(path) and iv.read_state().owner == os.getpid()
    s.events = events(
        clock,
        lambda: path.write_text("# attnprep: mha\nbuggy\n", encoding="utf-8"),
        after(clock, 250, loop.Tick()),
        after(clock, 10, enter()),  # submit at 4:20
        lambda: path.write_text("# attnprep: mha\nfixed\n", encoding="utf-8"),
        after(clock, 60, enter()),  # the fix
        enter(), enter("y"),  # card 1: reveal, known
        enter(), enter("maybe"), enter("n"),  # card 2: reveal, "maybe" is asked again, then not known
    )
    rounds = s.run(state)

    assert [text.splitlines()[1] for _, _, text in grader.graded] == ["buggy", "fixed"]
    (end,) = rounds
    assert (end.first_passed, end.elapsed_s, end.fixes, end.last_fix_passed, end.known, end.unknown) == (False, 260.0, 1, True, 1, 1)
    assert iv.exit_code(rounds) == iv.EXIT_FAILED

    first, fix = history.runs()
    assert (first.kind, first.first_try, first.passed, first.diagnoses, first.duration_s) == ("check", True, False, ("missing_scale",), 260.0)
    assert (fix.first_try, fix.passed, fix.duration_s) == (False, True, 322.0)
    assert first.interview == fix.interview == end.interview
    (row,) = history.interviews()
    assert (row.id, row.exercise, row.outcome, row.duration_s, row.budget_s) == (end.interview, "mha", "submitted", 260.0, 300.0)
    marks = history.qa_marks()
    assert [(m.card, m.question, m.known, m.interview) for m in marks] == [
        (1, MHA.qa[0].q, True, end.interview), (2, MHA.qa[1].q, False, end.interview)]

    assert iv.read_state() is None  # the interview is closed
    notes = path.with_suffix(".notes.md").read_text(encoding="utf-8")
    assert f"## Q1. {MHA.qa[0].q}" in notes and f"## Q2. {MHA.qa[1].q}" in notes and MHA.qa[0].a not in notes
    text = out.getvalue()
    assert "first try failed after 4:20 (budget 5:00)" in text
    assert "later fix passed" in text
    assert text.index(MHA.qa[0].q) < text.index(MHA.qa[0].a) < text.index(MHA.qa[1].q)
    assert "y (known) or n (not known), please" in text
    assert "mha: first try ✗ failed in 4:20 of 5:00 · 1 later fix, passed · Q&A 1 known, 1 not known" in text


def test_a_first_try_that_passes_goes_straight_to_the_questions(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(True))
    s, out = session(tmp_path, clock, grader, after(clock, 90, enter()), enter(), enter("y"), questions=1)
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert iv.exit_code(rounds) == iv.EXIT_PASSED and len(grader.graded) == 1
    assert [(r.first_try, r.passed) for r in history.runs()] == [(True, True)]
    assert len(history.qa_marks()) == 1
    assert "fix it and press Enter" not in out.getvalue()


def test_nothing_is_graded_before_the_submission_and_the_clock_runs(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(True))
    steps = [after(clock, 30, loop.Tick()) for _ in range(12)]  # six minutes of ticks, no submission
    s, out = session(tmp_path, clock, grader, *steps, lambda: grader.graded.append("no grade before here"),
                     enter(), questions=0)
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert grader.graded[0] == "no grade before here"
    text = out.getvalue()
    for minute, left in ((1, "4:00"), (2, "3:00"), (3, "2:00"), (4, "1:00")):
        assert f"[{minute:02d}:00] {left} left" in text
    assert "[05:00] the budget is spent (5:00); submit when ready" in text
    assert rounds[0].elapsed_s == 360.0


def test_the_live_clock_is_one_line_redrawn(tmp_path):
    clock = FakeClock()
    s, out = session(tmp_path, clock, FakeGrader(clock, result(True)), after(clock, 61, loop.Tick()),
                     after(clock, 0.25, loop.Tick()), after(clock, 300, loop.Tick()), enter(), questions=0, live=True)
    s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    text = out.getvalue()
    assert text.count("\r\x1b[2K1:01 / 5:00  ·  Enter submits") == 1  # redrawn when the second changes
    assert "\r\x1b[2K6:01 / 5:00  (+1:01 over)" in text


def test_q_gives_up_before_submitting(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock)
    s, out = session(tmp_path, clock, grader, after(clock, 42, enter("q")))
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert iv.exit_code(rounds) == iv.EXIT_ABANDONED and grader.graded == []
    assert history.runs() == []
    (row,) = history.interviews()
    assert (row.outcome, row.duration_s) == ("abandoned", 42.0)
    assert "interview given up after 0:42" in out.getvalue()
    assert iv.read_state() is None


def test_ctrl_c_before_submitting_is_given_up_too(tmp_path):
    clock = FakeClock()

    def interrupted():
        yield loop.Tick()
        clock.t += 5
        raise KeyboardInterrupt

    s, _ = session(tmp_path, clock, FakeGrader(clock))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    s.events = interrupted()
    assert iv.exit_code(s.run(state)) == iv.EXIT_ABANDONED
    assert [r.outcome for r in history.interviews()] == ["abandoned"]


def test_q_after_the_verdict_ends_the_session_but_keeps_the_verdict(tmp_path):
    clock = FakeClock()
    s, _ = session(tmp_path, clock, FakeGrader(clock, result(False, "missing_scale")), enter(), enter("q"))
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert iv.exit_code(rounds) == iv.EXIT_FAILED
    assert [(r.first_try, r.passed) for r in history.runs()] == [(True, False)]
    assert history.qa_marks() == [] and iv.read_state() is None


def test_an_internal_error_is_not_the_first_try(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(False, internal=True), result(False, "missing_scale"))
    s, out = session(tmp_path, clock, grader, enter(), enter(), enter("n"), questions=0)
    s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert [(r.first_try, r.passed) for r in history.runs()] == [(True, False)]
    assert "attnprep could not grade this submission (not counted): attnprep failed while grading: the grader broke" in out.getvalue()


def test_when_the_input_ends_before_a_submission_the_interview_is_given_up(tmp_path):
    """Scripted input that runs out (`--answers /dev/null`): nothing can submit any more from
    here, so the round is given up at once instead of waiting (issue 30: it waited 87 minutes)."""
    clock = FakeClock()
    grader = FakeGrader(clock, result(True))
    s, out = session(tmp_path, clock, grader, after(clock, 5, loop.InputClosed()), after(clock, 5, loop.Tick()),
                     after(clock, 5, loop.Submit("r1")))
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert rounds[0].first_passed is None and grader.graded == []
    assert iv.exit_code(rounds) == iv.EXIT_ABANDONED == 130
    assert "given up, nothing graded" in out.getvalue()
    (row,) = history.interviews()
    assert row.outcome == "abandoned" and row.duration_s == 5.0


def test_a_first_try_past_its_budget_is_not_an_on_time_pass(tmp_path):
    from attnprep import plan

    clock = FakeClock()
    grader = FakeGrader(clock, result(True))
    s, out = session(tmp_path, clock, grader, after(clock, 600, loop.Reply("")), questions=0)
    s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert "past its budget of 5:00" in out.getvalue() and "first try passed in" not in out.getvalue()
    (run,) = history.runs()
    assert run.passed and run.first_try and run.budget_s == 300  # the verdict itself stands
    (review,) = plan.reviews_of(history.runs(), history.interviews())
    assert (review.passed, review.how) == (False, "late")  # `today` brings it back like a failure
    on_time = [r._replace(duration_s=290.0) for r in history.runs()]
    assert plan.reviews_of(on_time, history.interviews())[0].passed


def test_submit_gets_its_answer_when_the_interview_ended_with_it(tmp_path):
    """`--questions 0`: the interview ends right after grading the submission and its state file
    goes; `--submit` still gets the verdict (it used to say "did not answer")."""
    clock = FakeClock()
    grader = FakeGrader(clock, result(False, "missing_scale"))
    s, _ = session(tmp_path, clock, grader, after(clock, 5, loop.Submit("r1")), questions=0)
    s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert iv.read_state() is None
    answer = iv.wait_for_answer("r1", timeout=1)
    assert answer is not None and answer["first_try"] is True and answer["passed"] is False
    assert iv.wait_for_answer("another", timeout=0.3) is None


def test_a_submit_request_is_answered_in_the_state_file(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(False, "missing_scale"), result(True))
    seen = []
    s, _ = session(tmp_path, clock, grader)
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    s.events = events(
        clock,
        after(clock, 20, loop.Submit("first")),
        lambda: seen.append(iv.read_state().answer),
        loop.Submit("again"),  # while the fix prompt waits: a later fix
        lambda: seen.append((iv.read_state().answered, iv.read_state().answer)),
        enter(), enter("y"),
    )
    s.run(state)
    assert seen[0] == {"passed": False, "first_try": True, "line": "wrong output — missing 1/sqrt(d) scale"}
    assert seen[1] == ("again", {"passed": True, "first_try": False, "line": "passed"})
    assert [(r.first_try, r.passed) for r in history.runs()] == [(True, False), (False, True)]


# --- the chain -----------------------------------------------------------------------------------


def chained_registry(*follow_ups: str) -> dict:
    registry = dict(exercises.registry())
    registry["mha"] = registry["mha"]._replace(follow_ups=follow_ups)
    return registry


def test_the_chained_exercise_is_the_first_the_bank_has():
    other = next(e for e in exercises.registry() if e not in ("mha", "gqa"))  # any third exercise
    registry = chained_registry("no_such_exercise", "gqa", other)
    assert iv.follow_up_of(registry["mha"], registry).id == "gqa"
    assert iv.follow_up_of(registry["mha"], registry, done=["gqa"]).id == other
    assert iv.follow_up_of(chained_registry("no_such_exercise")["mha"], registry) is None


def test_every_chain_of_the_bank_names_other_exercises():
    for ex in exercises.registry().values():
        assert ex.id not in ex.follow_ups
        assert all(i == i.strip().lower() and i.isidentifier() for i in ex.follow_ups), ex.id


def test_the_follow_up_is_a_new_round(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(True), result(False, "gqa_heads_tiled", exercise="gqa"))
    registry = chained_registry("no_such_exercise", "gqa")
    s, out = session(tmp_path, clock, grader, enter(), enter(), enter("y"),  # mha, one card
                     enter("y"),  # start the follow-up
                     after(clock, 100, enter()), enter("n"), enter(), enter("n"),  # gqa, one card
                     questions=1, registry=registry)
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert [(r.exercise, r.first_passed) for r in rounds] == [("mha", True), ("gqa", False)]
    assert [g[1] for g in grader.graded] == ["mha", "gqa"]
    assert Path(rounds[1].file).parent == workspace(tmp_path) / "interviews"
    assert Path(rounds[1].file).name.startswith("gqa-")
    assert [(i.exercise, i.outcome, i.budget_s) for i in history.interviews()] == [
        ("mha", "submitted", 300.0), ("gqa", "submitted", exercises.get("gqa").minutes * 60.0)]
    assert [(m.exercise, m.known) for m in history.qa_marks()] == [("mha", True), ("gqa", False)]
    assert "next in the chain: Grouped-query attention (gqa)" in out.getvalue()
    assert iv.exit_code(rounds) == iv.EXIT_FAILED


def test_the_follow_up_can_be_declined(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(True))
    s, _ = session(tmp_path, clock, grader, enter(), enter("n"), questions=0, registry=chained_registry("gqa"))
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert [r.exercise for r in rounds] == ["mha"] and len(history.interviews()) == 1


# --- files and the state -------------------------------------------------------------------------


def test_the_stub_never_overwrites_a_file(tmp_path):
    ws = workspace(tmp_path)
    now = time.time()
    first = iv.new_interview_file(MHA, ws, now=now)
    first.write_text("my work", encoding="utf-8")
    second = iv.new_interview_file(MHA, ws, now=now)
    assert first != second and first.read_text(encoding="utf-8") == "my work"
    assert second.name.endswith("-2.py")


def test_the_notes_file_is_only_appended_to(tmp_path):
    clock = FakeClock()
    s, _ = session(tmp_path, clock, FakeGrader(clock, result(True)))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    notes = Path(state.notes)
    notes.write_text("my own notes\n", encoding="utf-8")
    s.events = events(clock, enter(), enter(), enter("y"))
    s.run(state)
    text = notes.read_text(encoding="utf-8")
    assert text.startswith("my own notes\n") and "## Q1." in text


def test_a_broken_state_file_means_no_open_interview(attnprep_home):
    attnprep_home.mkdir(parents=True, exist_ok=True)
    iv.state_path().write_text("{not json", encoding="utf-8")
    assert iv.read_state() is None
    iv.state_path().write_text(json.dumps({"version": 99}), encoding="utf-8")
    assert iv.read_state() is None


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_owner_alive():
    assert iv.owner_alive(os.getpid())
    assert not iv.owner_alive(dead_pid())


def test_submit_requests_go_through_a_file(attnprep_home):
    attnprep_home.mkdir(parents=True, exist_ok=True)
    assert iv.take_request() is None
    request = iv.request_submit()
    assert iv.take_request() == request and iv.take_request() is None


# --- the command ---------------------------------------------------------------------------------

runner = CliRunner()
ENV = {"COLUMNS": "120", "NO_COLOR": "1"}


def test_submit_without_an_open_interview_is_a_usage_error():
    out = runner.invoke(app, ["interview", "--submit"], env=ENV)
    assert out.exit_code == 2
    assert out.output.strip() == "error: no interview is open: start one with `attnprep interview ID`"


def test_a_running_interview_is_not_started_twice(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    s.open(MHA, workspace(tmp_path), budget_s=300)  # owned by this (live) process
    out = runner.invoke(app, ["interview", "gqa"], env=ENV)
    assert out.exit_code == 2 and "an interview of mha is running" in out.output
    assert not (tmp_path / "interviews").exists()


def test_an_unknown_id_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["interview", "mhaa"], env=ENV)
    assert out.exit_code == 2 and "did you mean 'mha'" in out.output
    assert not (tmp_path / "interviews").exists()


CORPUS = ROOT / "tests" / "corpus" / "mha"


@pytest.fixture
def fake_grading(monkeypatch):
    """The command with a fake grader (passes every file whose text says so) and no torch."""
    from attnprep.commands import rehearse

    graded = []

    def grade(path, exercise):
        graded.append((Path(path).name, exercise.id))
        return result("passes" in Path(path).read_text(encoding="utf-8"), exercise=exercise.id)

    monkeypatch.setattr(iv, "_default_grade", grade)
    monkeypatch.setattr(rehearse, "_warm_up", lambda out, live: None)
    return graded


def answers(tmp_path, *lines: str) -> str:
    script = tmp_path / "answers.txt"
    script.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(script)


def test_without_an_id_the_first_of_today_is_asked(tmp_path, monkeypatch, fake_grading):
    monkeypatch.chdir(tmp_path)
    first = next(iter(exercises.listing()))
    out = runner.invoke(app, ["interview", "--answers", answers(tmp_path, "", "n"), "--questions", "0"], env=ENV)
    assert out.exit_code == 1, out.output
    assert f"no ID given: {first} — not practised yet" in out.stdout
    assert [ex for _, ex in fake_grading] == [first]
    assert [r.exercise for r in history.runs()] == [first]


def test_an_interview_left_open_is_resumed(tmp_path, monkeypatch, fake_grading):
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    clock.t = time.time() - 60
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    iv.write_state(state._replace(owner=dead_pid()))
    Path(state.file).write_text("passes", encoding="utf-8")
    out = runner.invoke(app, ["interview", "--answers", answers(tmp_path, ""), "--questions", "0"], env=ENV)
    assert out.exit_code == 0, out.output
    assert "resuming the open interview of mha" in out.stdout and "resumed: the clock kept running" in out.stdout
    (run,) = history.runs()
    assert (run.interview, run.first_try) == (state.interview, True)
    assert fake_grading == [(Path(state.file).name, "mha")]
    assert run.duration_s >= 60
    assert len(history.interviews()) == 1


def test_an_interview_left_open_is_given_up_when_another_starts(tmp_path, monkeypatch, fake_grading):
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    iv.write_state(state._replace(owner=dead_pid()))
    out = runner.invoke(app, ["interview", "gqa", "--answers", answers(tmp_path, "q")], env=ENV)
    assert out.exit_code == 130, out.output
    assert "the interview of mha left open" in out.stdout
    assert [(i.exercise, i.outcome) for i in history.interviews()] == [("mha", "abandoned"), ("gqa", "abandoned")]
    assert Path(state.file).is_file()  # the user's file stays


def test_submit_with_an_id_is_a_usage_error(tmp_path, fake_grading):
    clock = FakeClock()
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    s.open(MHA, workspace(tmp_path), budget_s=300)
    out = runner.invoke(app, ["interview", "--submit", "gqa"], env=ENV)
    assert out.exit_code == 2 and "--submit takes no ID" in out.output
    assert fake_grading == []


def test_a_bad_budget_or_answers_file_is_a_usage_error(tmp_path, monkeypatch, fake_grading):
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["interview", "mha", "--minutes", "0"], env=ENV)
    assert out.exit_code == 2 and "positive number of minutes" in out.output
    out = runner.invoke(app, ["interview", "mha", "--answers", str(tmp_path / "missing.txt")], env=ENV)
    assert out.exit_code == 2 and "cannot read the answers file" in out.output
    assert not (tmp_path / "interviews").exists() and history.interviews() == []


@pytest.mark.slow
def test_scripted_answers_file_end_to_end(tmp_path, monkeypatch):
    """`attnprep interview mha --answers FILE` with the real grader: the untouched stub is
    submitted (a failed first try), no fix, two cards."""
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "answers.txt"
    script.write_text("\nn\n\ny\n\nn\n", encoding="utf-8")
    out = runner.invoke(app, ["interview", "mha", "--answers", str(script), "--questions", "2"], env=ENV)
    assert out.exit_code == 1, out.output
    (run,) = history.runs()
    assert (run.exercise, run.first_try, run.passed) == ("mha", True, False)
    assert [m.known for m in history.qa_marks()] == [True, False]
    (stub,) = (tmp_path / "interviews").glob("mha-*.py")
    assert run.file == str(stub.resolve())
    assert "nothing written yet" in out.stdout and "first try failed" in out.stdout


class Owner:
    """`attnprep interview` running in a child process, driven through its stdin."""

    def __init__(self, cwd: Path, home: Path, *args: str) -> None:
        env = {**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "120"}
        self.proc = subprocess.Popen([sys.executable, "-m", "attnprep", "interview", *args], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")

    def wait_for(self, text: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
            if line == "" and self.proc.poll() is not None:
                break
        raise AssertionError(f"never saw {text!r}; output:\n{''.join(self.seen)}")

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()


@pytest.mark.slow
def test_a_running_interview_submitted_from_elsewhere_end_to_end(tmp_path, attnprep_home, monkeypatch):
    """The interview runs in its own process; the test edits the file and submits with
    `attnprep interview --submit` (a buggy attempt, then the fix), then answers two cards through
    the interview's stdin. The history holds the first try, the fix and the two cards."""
    monkeypatch.chdir(tmp_path)
    owner = Owner(tmp_path, attnprep_home, "mha", "--questions", "2")
    try:
        line = owner.wait_for("write your answer in")
        path = tmp_path / line.split("write your answer in ", 1)[1].split(";")[0]
        assert path.is_file() and path.parent.name == "interviews"
        path.write_text((CORPUS / "missing_scale.py").read_text(encoding="utf-8"), encoding="utf-8")

        submitted = runner.invoke(app, ["interview", "--submit"], env=ENV)
        assert submitted.exit_code == 1, submitted.output
        assert "first try: wrong output" in submitted.stdout and "scale" in submitted.stdout
        owner.wait_for("first try failed")

        path.write_text((ROOT / "solutions" / "mha.py").read_text(encoding="utf-8"), encoding="utf-8")
        fixed = runner.invoke(app, ["interview", "--submit"], env=ENV)
        assert fixed.exit_code == 0, fixed.output
        assert "later fix: passed" in fixed.stdout

        owner.send("n")  # on to the questions
        owner.wait_for("Q1/2")
        owner.send("")
        owner.wait_for("did you know it?")
        owner.send("y")
        owner.wait_for("Q2/2")
        owner.send("")
        owner.wait_for("did you know it?")
        owner.send("n")
        owner.wait_for("next in the chain")  # mha's chained exercise (its toml's `next`) is in the bank
        owner.send("n")
        owner.wait_for("Q&A 1 known, 1 not known")
        assert owner.proc.wait(timeout=60) == 1
    finally:
        if owner.proc.poll() is None:
            owner.proc.kill()
            owner.proc.wait()

    first, fix = history.runs()
    assert (first.first_try, first.passed, first.diagnoses) == (True, False, ("missing_scale",))
    assert (fix.first_try, fix.passed) == (False, True)
    (row,) = history.interviews()
    assert row.outcome == "submitted" and first.interview == fix.interview == row.id
    assert [(m.card, m.known) for m in history.qa_marks()] == [(1, True), (2, False)]
    assert iv.read_state() is None


@pytest.mark.slow
def test_submit_takes_over_an_interview_whose_terminal_is_gone(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    clock = FakeClock()
    clock.t = time.time() - 120
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    iv.write_state(state._replace(owner=dead_pid()))  # its attnprep was killed
    Path(state.file).write_text((ROOT / "solutions" / "mha.py").read_text(encoding="utf-8"), encoding="utf-8")
    script = tmp_path / "answers.txt"
    script.write_text("\ny\n", encoding="utf-8")
    out = runner.invoke(app, ["interview", "--submit", "--answers", str(script), "--questions", "1"], env=ENV)
    assert out.exit_code == 0, out.output
    assert "no attnprep is running the interview of mha any more" in out.stdout
    (run,) = history.runs()
    assert (run.first_try, run.passed, run.interview) == (True, True, state.interview)
    assert run.duration_s >= 120
    assert [m.known for m in history.qa_marks()] == [True]
    assert iv.read_state() is None


def test_no_exercise_id_is_written_in_the_rehearsal_code():
    """The chains and everything else about an exercise live in its folder (exercise.toml)."""
    import ast

    ids = set(exercises.registry()) | {i for ex in exercises.registry().values() for i in ex.follow_ups}
    modules = ["attnprep/interview.py", "attnprep/plan.py", "attnprep/attempts.py", "attnprep/pytest_plugin.py",
               "attnprep/commands/rehearse.py"]
    found = [(m, node.lineno, node.value) for m in modules for node in ast.walk(ast.parse((ROOT / m).read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip() in ids]
    assert found == []


def test_a_scripted_interview_whose_input_is_empty_exits_130(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = runner.invoke(app, ["interview", "mha", "--questions", "0", "--answers", os.devnull], env=ENV)
    assert out.exit_code == 130, out.output
    assert history.runs() == [] and history.interviews()[0].outcome == "abandoned"
    assert iv.read_state() is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_interview_prose_wraps_at_80_columns_between_words(tmp_path, lang):
    """Questions, model answers and instructions wrap to the console's width: English between
    words, Chinese between characters but never before a closing mark (issue 30 point 6)."""
    from attnprep import texts

    texts.set_language(lang)
    try:
        ex = exercises.registry(lang)["mha"]
        out = io.StringIO()
        view = iv.ConsoleView(Console(file=out, width=80, no_color=True, highlight=False))
        path = workspace(tmp_path) / "interviews" / "mha-20261123-2011.py"
        view.started(ex, path, 300, False)
        for qa in ex.qa[:3]:
            view.question(1, 3, qa, path.with_suffix(".notes.md"))
            view.answer(qa)
        shown = out.getvalue()
    finally:
        texts.set_language(None)
    lines = shown.splitlines()
    assert all(len(line) <= 80 if lang == "en" else True for line in lines)
    assert max(len(line) for line in lines) > 60  # wrapped to the width, not to some other measure
    flat = " ".join(shown.split())
    for qa in ex.qa[:3]:
        if lang == "en":
            assert " ".join(qa.a.split()) in flat  # no word cut in two
        else:
            assert "".join(qa.a.split()) in "".join(shown.split())
            assert not any(line[:1] and line[0] in "，。、；：！？）" for line in lines), shown


# --- the open interview taken up (iv.opening: the library side of the command) -------------------


def left_open(tmp_path, *, alive: bool):
    clock = FakeClock()
    clock.t = time.time() - 30
    s, _ = session(tmp_path, clock, FakeGrader(clock))
    state = s.open(MHA, workspace(tmp_path), budget_s=300)
    if not alive:
        state = state._replace(owner=dead_pid())
        iv.write_state(state)
    return state


def same(typed: str) -> str:
    return typed


def test_opening_with_nothing_open(tmp_path):
    assert iv.opening(None, submit=False, resolve=same) == iv.Opening(iv.NEW)
    with pytest.raises(iv.Refused) as refused:
        iv.opening(None, submit=True, resolve=same)
    assert refused.value.key == "no_open"


def test_opening_for_submit_hands_off_or_takes_over(tmp_path):
    running = left_open(tmp_path, alive=True)
    assert iv.opening(None, submit=True, resolve=same) == iv.Opening(iv.HAND_OFF, running)
    with pytest.raises(iv.Refused) as refused:
        iv.opening("gqa", submit=True, resolve=same)
    assert (refused.value.key, refused.value.values) == ("submit_no_id", {"id": "mha"})
    gone = left_open(tmp_path, alive=False)
    assert iv.opening(None, submit=True, resolve=same) == iv.Opening(iv.TAKE_OVER, gone)
    first = next(iv.session_events(iv.TAKE_OVER, loop.StreamLines(io.StringIO(""))))
    assert first == loop.Submit(None)  # a take-over begins by grading
    assert next(iv.session_events(iv.RESUME, loop.StreamLines(io.StringIO("")))) == loop.InputClosed()


def test_opening_refuses_a_second_interview_and_resumes_one_whose_owner_is_gone(tmp_path):
    left_open(tmp_path, alive=True)
    with pytest.raises(iv.Refused) as refused:
        iv.opening("gqa", submit=False, resolve=same)
    assert refused.value.key == "running" and refused.value.values["id"] == "mha"
    gone = left_open(tmp_path, alive=False)
    asked = []
    assert iv.opening(None, submit=False, resolve=asked.append) == iv.Opening(iv.RESUME, gone) and asked == []
    assert iv.opening("MHA", submit=False, resolve=str.lower) == iv.Opening(iv.RESUME, gone)  # what the id resolves to
    assert iv.read_state() == gone  # resuming keeps it


def test_opening_another_gives_up_the_one_left_open(tmp_path):
    gone = left_open(tmp_path, alive=False)
    Path(gone.file).write_text("my work", encoding="utf-8")
    opened = iv.opening("gqa", submit=False, resolve=same)
    assert opened == iv.Opening(iv.NEW, stale=gone)
    assert iv.read_state() is None and Path(gone.file).read_text(encoding="utf-8") == "my work"
    (row,) = history.interviews()
    assert row.outcome == "abandoned" and row.duration_s >= 30


def test_opening_forgets_an_open_interview_with_nothing_left(tmp_path):
    gone = left_open(tmp_path, alive=False)
    Path(gone.file).unlink()
    assert iv.opening(None, submit=False, resolve=same) == iv.Opening(iv.NEW)
    assert iv.read_state() is None


def test_a_submission_while_a_question_waits_is_a_later_fix_and_the_question_goes_on(tmp_path):
    clock = FakeClock()
    grader = FakeGrader(clock, result(True), result(False, "missing_scale"))
    s, out = session(tmp_path, clock, grader, enter(), loop.Tick(), loop.Submit("late"), enter(), enter("n"), questions=1)
    rounds = s.run(s.open(MHA, workspace(tmp_path), budget_s=300))
    assert [(r.first_try, r.passed) for r in history.runs()] == [(True, True), (False, False)]
    (end,) = rounds
    assert (end.first_passed, end.fixes, end.last_fix_passed, end.unknown) == (True, 1, False, 1)
    text = out.getvalue()
    assert text.count(MHA.qa[0].q) == 1 and text.index("later fix: still failing") < text.index(MHA.qa[0].a)
