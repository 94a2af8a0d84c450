"""The drill: its event loop with a fake grader, fake events and a fake clock; the stub file; and
end to end, `python -m attnprep drill` in a non-interactive terminal with the real grader."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from attnprep import drill, exercises, history
from attnprep.grader.result import msg
from attnprep.grader.result import Check, Diagnosis, ErrorInfo, Result, Verdict

ROOT = Path(__file__).resolve().parent.parent


# --- fakes ---------------------------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def result(verdict: Verdict, *mistakes: str) -> Result:
    return Result(
        exercise="mha",
        file="drills/mha-x.py",
        verdict=verdict,
        diagnoses=tuple(Diagnosis(m) for m in mistakes),
    )


class FakeGrader:
    """Returns the queued results in order; each grade advances the clock by ``cost``."""

    def __init__(self, clock: FakeClock, *results: Result, cost: float = 0.3) -> None:
        self.clock, self.results, self.cost, self.calls = clock, list(results), cost, 0

    def __call__(self) -> Result:
        self.calls += 1
        self.clock.t += self.cost
        return self.results.pop(0)


class RecordingView:
    def __init__(self) -> None:
        self.log: list[tuple] = []

    def ready(self):
        self.log.append(("ready",))

    def tick(self, elapsed, remaining):
        self.log.append(("tick", round(elapsed, 2)))

    def grading(self, elapsed, final):
        self.log.append(("grading", round(elapsed, 2), final))

    def graded(self, elapsed, result):
        self.log.append(("graded", round(elapsed, 2), result.verdict.value))

    def superseded(self, elapsed, by):
        self.log.append(("superseded", round(elapsed, 2), round(by, 2)))

    def unreadable(self, elapsed, error):
        self.log.append(("unreadable", round(elapsed, 2)))

    def time_up(self, elapsed):
        self.log.append(("time_up", elapsed))

    def interrupted(self, elapsed):
        self.log.append(("interrupted", round(elapsed, 2)))


def script(clock: FakeClock, *steps):
    """Events at given clock times: ``(t, Saved())``, ``(t, Tick())`` or ``(t, KeyboardInterrupt)``."""
    for t, event in steps:
        clock.t = 100.0 + t
        if event is KeyboardInterrupt:
            raise KeyboardInterrupt
        yield event


S, T = drill.Saved(), drill.Tick()


# --- the loop ------------------------------------------------------------------------------------


def test_first_pass_ends_the_drill_with_the_time_of_that_save():
    clock, view = FakeClock(), RecordingView()
    grade = FakeGrader(clock, result(Verdict.WRONG_OUTPUT, "missing_scale"), result(Verdict.PASSED))
    events = script(clock, (0, T), (1, T), (12, S), (13, T), (40, S), (41, S), (42, T))
    ending = drill.run_loop(events, grade=grade, view=view, budget_s=60, clock=clock)

    assert ending.outcome == "passed" and ending.exit_code == 0
    assert ending.elapsed_s == pytest.approx(40.0)  # the save, not the end of its grading
    assert ending.result.passed and ending.grades == 2 == grade.calls  # the save at 41 is never graded
    assert ending.mistakes == ("missing_scale",)
    assert view.log == [
        ("ready",), ("tick", 0.0), ("tick", 1.0),
        ("grading", 12.0, False), ("graded", 12.0, "wrong_output"), ("tick", 12.3), ("tick", 13.0),
        ("grading", 40.0, False), ("graded", 40.0, "passed"),
    ]


def test_time_up_gives_one_final_grade_and_exit_1():
    clock, view = FakeClock(), RecordingView()
    grade = FakeGrader(clock, result(Verdict.MASK_LEAK, "causal_ignored"), result(Verdict.MASK_LEAK, "causal_ignored"))
    events = script(clock, (0, T), (5, S), (9.9, T), (10.1, T), (10.3, T))
    ending = drill.run_loop(events, grade=grade, view=view, budget_s=10, clock=clock, saved_at=lambda: 105.0)

    assert (ending.outcome, ending.exit_code, ending.elapsed_s) == ("timeout", 1, 10)
    assert grade.calls == 2 and ending.result.verdict is Verdict.MASK_LEAK
    assert ending.mistakes == ("causal_ignored",)
    assert view.log[-3:] == [("time_up", 10), ("grading", 10, True), ("graded", 10, "mask_leak")]


def test_a_save_arriving_after_the_deadline_is_only_the_final_grade():
    clock, view = FakeClock(), RecordingView()
    grade = FakeGrader(clock, result(Verdict.PASSED))
    # saved at 9.95 (just in time) but the event is seen at 10.05: the final grade passes and counts
    events = script(clock, (0, T), (10.05, S))
    ending = drill.run_loop(events, grade=grade, view=view, budget_s=10, clock=clock, saved_at=lambda: 109.95)
    assert ending.outcome == "passed" and ending.elapsed_s == pytest.approx(9.95)
    assert grade.calls == 1 and ("time_up", 10) in view.log


def test_a_pass_saved_after_the_deadline_is_still_a_timeout():
    clock = FakeClock()
    grade = FakeGrader(clock, result(Verdict.PASSED))
    events = script(clock, (0, T), (10.2, S))
    ending = drill.run_loop(events, grade=grade, view=RecordingView(), budget_s=10, clock=clock, saved_at=lambda: 110.2)
    assert ending.outcome == "timeout" and ending.result.passed and ending.exit_code == 1


def test_grading_that_runs_past_the_deadline_ends_the_drill_without_another_event():
    clock, view = FakeClock(), RecordingView()
    grade = FakeGrader(clock, result(Verdict.TIMEOUT), result(Verdict.TIMEOUT), cost=5.0)
    events = script(clock, (0, T), (8, S), (30, T))  # the tick at 30 must never be needed
    ending = drill.run_loop(events, grade=grade, view=view, budget_s=10, clock=clock)
    assert ending.outcome == "timeout" and grade.calls == 2
    assert ("tick", 30.0) not in view.log


def test_ctrl_c_is_abandoned_with_the_last_verdict_and_exit_130():
    clock, view = FakeClock(), RecordingView()
    grade = FakeGrader(clock, result(Verdict.WRONG_SHAPE, "merge_heads_no_transpose"))
    events = script(clock, (0, T), (3, S), (7, T), (8.5, KeyboardInterrupt))
    ending = drill.run_loop(events, grade=grade, view=view, budget_s=60, clock=clock)
    assert (ending.outcome, ending.exit_code) == ("abandoned", 130)
    assert ending.elapsed_s == pytest.approx(8.5) and grade.calls == 1
    assert ending.result.verdict is Verdict.WRONG_SHAPE and view.log[-1] == ("interrupted", 8.5)


def test_ctrl_c_before_any_save_grades_the_file_once():
    clock = FakeClock()
    grade = FakeGrader(clock, result(Verdict.ERROR))
    ending = drill.run_loop(script(clock, (0, T), (2, KeyboardInterrupt)), grade=grade, view=RecordingView(), budget_s=60, clock=clock)
    assert ending.outcome == "abandoned" and grade.calls == 1 and ending.result.verdict is Verdict.ERROR


def test_ctrl_c_during_a_grade_is_abandoned_too():
    clock = FakeClock()

    def grade():
        raise KeyboardInterrupt  # the parent waiting on the forked child gets the SIGINT

    ending = drill.run_loop(script(clock, (0, T), (2, S)), grade=grade, view=RecordingView(), budget_s=60, clock=clock)
    assert ending.outcome == "abandoned" and ending.result is None and ending.started == 100.0


def test_ctrl_c_before_the_watcher_is_ready_never_started():
    clock = FakeClock()
    ending = drill.run_loop(script(clock, (0, KeyboardInterrupt)), grade=FakeGrader(clock), view=RecordingView(), budget_s=60, clock=clock)
    assert ending.outcome == "abandoned" and ending.started is None and ending.result is None


def test_a_file_missing_mid_save_is_skipped_until_the_next_save():
    clock, view = FakeClock(), RecordingView()
    outcomes = [FileNotFoundError(2, "No such file or directory"), result(Verdict.PASSED)]

    def grade():
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    ending = drill.run_loop(script(clock, (0, T), (1, S), (1.1, S)), grade=grade, view=view, budget_s=60, clock=clock)
    assert ending.outcome == "passed" and ending.grades == 1 and ending.elapsed_s == pytest.approx(1.1)
    assert ("unreadable", 1.0) in view.log


def test_internal_grader_failures_are_not_counted_as_mistakes():
    clock = FakeClock()
    broken = Result("mha", "x.py", Verdict.ERROR, diagnoses=(Diagnosis("missing_scale"),), internal=True)
    grade = FakeGrader(clock, broken, result(Verdict.PASSED))
    ending = drill.run_loop(script(clock, (0, T), (1, S), (2, S)), grade=grade, view=RecordingView(), budget_s=60, clock=clock)
    assert ending.outcome == "passed" and ending.mistakes == ()


def test_run_drill_records_the_drill_in_the_history(tmp_path):
    ex = exercises.get("mha")
    path = drill.new_drill_file(ex, tmp_path)
    outcomes = iter([result(Verdict.WRONG_OUTPUT, "missing_scale", "scale_d_model"), result(Verdict.PASSED)])
    run = drill.run_drill(
        ex, path, 300, RecordingView(),
        grade=lambda p, exercise_id: next(outcomes),
        events=[drill.Tick(), drill.Saved(), drill.Saved()],
    )
    assert run.ending.outcome == "passed" and run.recorded is not None
    (row,) = history.runs("mha")
    assert (row.kind, row.outcome, row.passed, row.verdict, row.budget_s) == ("drill", "passed", True, "passed", 300)
    assert row.diagnoses == ("missing_scale", "scale_d_model")
    assert 0 <= row.duration_s < 5 and abs(row.started_at - time.time()) < 30


# --- the views -----------------------------------------------------------------------------------


def test_plain_view_prints_one_progress_line_per_save(capsys):
    from rich.console import Console

    console = Console(file=sys.stdout, width=120, force_terminal=False)  # wide: one screen line each
    view = drill.PlainView(console, budget_s=300)
    view.ready()
    view.tick(59.0, 241.0)  # nothing yet
    view.graded(12.4, Result("mha", "drills/mha-x.py", Verdict.WRONG_OUTPUT,
                             diagnoses=(Diagnosis("missing_scale"),)))
    view.tick(61.0, 239.0)
    view.graded(75.0, Result("mha", "drills/mha-x.py", Verdict.ERROR, error=ErrorInfo("exception", msg("error.raised_no_frame", type="NotImplementedError", text="write forward", stage="forward"))))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[00:00] go: 5:00 on the clock")
    assert lines[1] == "[00:12] saved → wrong output — missing 1/sqrt(d) scale"
    assert lines[2] == "[01:01] 3:59 left"
    assert lines[3] == "[01:15] saved → error — NotImplementedError: write forward during forward"
    assert len(lines) == 4


def test_live_view_renders_countdown_verdict_and_fix():
    from rich.console import Console

    console = Console(record=True, width=100, force_terminal=True, color_system=None)
    with drill.LiveView(console, 300, "mha drill · drills/mha-x.py") as view:
        view.ready()
        view.grading(29.0, False)
        view.tick(30.5, 269.5)
        checking = console.export_text(clear=False)
        view.graded(29.0, Result("mha", "drills/mha-x.py", Verdict.WRONG_OUTPUT, diagnoses=(Diagnosis("missing_scale"),)))
        view.tick(42.0, 258.0)
        text = console.export_text(clear=False)
    assert "checking the save at 00:29 … 1 s" in checking
    assert "4:18 left" in text and "0:42 / 5:00" in text
    assert text.count("[00:29] saved → wrong output — missing 1/sqrt(d) scale") == 1  # a log line, above the display
    assert "fix: Divide the scores by math.sqrt(head_dim)" in text


def test_live_view_wraps_a_long_fix_instead_of_cutting_it():
    from rich.console import Console

    from attnprep import wording

    # the named mistake of mha with the longest fix
    ids = [m.id for m in exercises.get("mha").mistakes]
    longest = max(ids, key=lambda i: len(wording.mistake("mha", Diagnosis(i)).fix))
    words = wording.mistake("mha", Diagnosis(longest))
    assert len(words.fix) > 70
    for width in (50, 80, 120):
        console = Console(record=True, width=width, force_terminal=True, color_system=None)
        with drill.LiveView(console, 300, "mha drill") as view:
            view.graded(3.0, Result("mha", "mha.py", Verdict.WRONG_OUTPUT, diagnoses=(Diagnosis(longest),)))
            text = console.export_text(clear=False)
        assert "…" not in text.replace("first save …", "")
        assert " ".join(words.fix.split()) in " ".join(text.split())  # every word, in order
        assert " ".join(words.title.split()) in " ".join(text.split())


def test_a_superseded_check_is_said_in_both_views(capsys):
    from rich.console import Console

    plain = drill.PlainView(Console(file=sys.stdout, width=100, force_terminal=False), budget_s=300)
    plain.superseded(5.0, 9.0)
    assert capsys.readouterr().out == "[00:05] saved → not checked: superseded by the save at 00:09 (its check was stopped)\n"


# --- the stub ------------------------------------------------------------------------------------


def test_drill_files_are_fresh_and_never_overwrite(tmp_path):
    ex = exercises.get("mha")
    now = time.mktime((2026, 11, 22, 5, 12, 0, 0, 0, -1))
    first = drill.new_drill_file(ex, tmp_path, now=now)
    first.write_text("my work")
    second = drill.new_drill_file(ex, tmp_path, now=now)
    assert first == tmp_path / "drills" / "mha-20261122-0512.py"
    assert second == tmp_path / "drills" / "mha-20261122-0512-2.py"
    assert first.read_text() == "my work"
    assert second.read_text() == exercises.render_stub(ex)
    assert exercises.detect(second.read_text()) == "mha"


def test_watch_events_reports_saves_of_the_file_only(tmp_path):
    target = tmp_path / "a.py"
    target.write_text("x")
    stop = threading.Event()
    seen: list = []

    def writer():
        time.sleep(0.4)
        (tmp_path / "other.py").write_text("y")  # another file: not a save
        time.sleep(0.3)
        target.write_text("x = 1")
        time.sleep(0.5)
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    for event in drill.watch_events(target, tick_s=0.1, stop_event=stop):
        seen.append(event)
    thread.join()
    assert seen.count(drill.Saved()) == 1
    assert seen.count(drill.Tick()) >= 5


# --- end to end, with the real grader ------------------------------------------------------------


def correct_attempt() -> str:
    """A correct MHA from the corpus (``# expect: passed``), else the reference solution."""
    for path in sorted((ROOT / "tests" / "corpus" / "mha").glob("ok_*.py")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) > 1 and lines[1].strip() == "# expect: passed":
            return "".join(lines)
    lines = (ROOT / "solutions" / "mha.py").read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(["# attnprep: mha\n", *lines[1:]])


def wrong_attempt() -> str:
    corpus = ROOT / "tests" / "corpus" / "mha" / "missing_scale.py"
    return corpus.read_text(encoding="utf-8") if corpus.exists() else correct_attempt() + "\nsyntax error(\n"


def grader_works() -> bool:
    return (ROOT / "grader" / "engine.py").exists()


needs_grader = pytest.mark.skipif(not grader_works(), reason="grader/engine.py is not there yet")


def start_drill(workdir: Path, home: Path, seconds: float) -> subprocess.Popen:
    env = {**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "120"}
    return subprocess.Popen(
        [sys.executable, "-m", "attnprep", "drill", "mha", "--dir", str(workdir), "--seconds", str(seconds)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir,
    )


def read_until(proc: subprocess.Popen, marker: str, lines: list[str], deadline: float) -> str:
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            proc.wait(timeout=10)
            lines.append(f"<exit {proc.returncode}; stderr: {proc.stderr.read()}>")
            break
        lines.append(line)
        if marker in line:
            return line
    raise AssertionError(f"no line with {marker!r} in:\n{''.join(lines)}")


def stats_json(home: Path) -> dict:
    env = {**os.environ, "ATTNPREP_HOME": str(home)}
    out = subprocess.run([sys.executable, "-m", "attnprep", "stats", "--json"], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


@pytest.mark.slow
@needs_grader
def test_drill_end_to_end_timeout_and_pass(tmp_path, attnprep_home):
    """Two drills at once (two cores; one history): a blank stub nobody saves times out (exit 1);
    a wrong save then a correct one passes (exit 0); both are in `stats --json`."""
    blank_dir, work_dir = tmp_path / "blank", tmp_path / "work"
    blank_dir.mkdir()
    work_dir.mkdir()
    idle = start_drill(blank_dir, attnprep_home, seconds=1.5)
    proc = start_drill(work_dir, attnprep_home, seconds=90)
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        wrote = read_until(proc, "wrote drills/", lines, deadline)
        path = work_dir / wrote.split("wrote ", 1)[1].split()[0]
        read_until(proc, "go:", lines, deadline)
        path.write_text(wrong_attempt())
        first = read_until(proc, "saved →", lines, deadline)
        assert "wrong output" in first or "error" in first, first
        path.write_text(correct_attempt())
        passed = read_until(proc, "saved →", lines, deadline)
        assert "passed" in passed, passed
        rest, err = proc.communicate(timeout=30)
        idle_out, idle_err = idle.communicate(timeout=60)
    finally:
        proc.kill()
        idle.kill()
    out = "".join(lines) + rest

    assert proc.returncode == 0, out + err
    assert "✓ passed in 0:" in rest and "(recorded: `attnprep stats`)" in rest

    assert idle.returncode == 1, idle_out + idle_err
    blank = next((blank_dir / "drills").glob("mha-*.py"))
    assert blank.read_text() == exercises.render_stub(exercises.get("mha"))
    assert f"wrote drills/{blank.name}" in idle_out
    assert "[00:00] go: 0:02 on the clock" in idle_out
    assert "time is up" in idle_out and "final check → not started" in idle_out  # the untouched stub
    assert "✗ time is up after 0:02: not passing yet" in idle_out
    assert "Traceback" not in idle_err + err

    doc = stats_json(attnprep_home)
    (mha,) = [r for r in doc["exercises"] if r["exercise"] == "mha"]
    assert sorted(d["outcome"] for d in mha["recent_drills"]) == ["passed", "timeout"]
    assert {d["duration_s"] for d in mha["recent_drills"] if d["outcome"] == "timeout"} == {1.5}
    assert mha["drills"] == 2 and mha["drill_passes"] == 1 and mha["passes"] == 1
    assert 0 < mha["best_drill_s"] < 60
    assert "missing_scale" in [m["id"] for m in mha["top_mistakes"]] or wrong_attempt().endswith("syntax error(\n")
    assert doc["totals"]["drills"] == 2


# --- checks in the background: a hang never freezes the drill -------------------------------------


def grade_by_content(path: Path, hang_s: float = 60.0):
    """A grader for ForkedCheck (it runs in the forked child): a file saying "hang" sleeps, one
    saying "slow" ends as a timeout after 0.4 s, anything else passes."""

    def grade() -> Result:
        text = path.read_text(encoding="utf-8")
        if "hang" in text:
            time.sleep(hang_s)
        if "slow" in text:
            time.sleep(0.4)
            return result(Verdict.TIMEOUT)
        return result(Verdict.PASSED)

    return grade


def real_time_events(path: Path, script_steps):
    """Real saves and ticks: ``("save", text)`` writes the file and yields Saved, ``("wait", s)``
    yields a Tick every 20 ms for s seconds; then ticks forever."""
    yield drill.Tick()
    for kind, value in script_steps:
        if kind == "save":
            path.write_text(value, encoding="utf-8")
            yield drill.Saved()
        else:
            until = time.monotonic() + value
            while time.monotonic() < until:
                time.sleep(0.02)
                yield drill.Tick()
    while True:
        time.sleep(0.02)
        yield drill.Tick()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_new_save_cancels_a_hanging_check_and_the_countdown_keeps_going(tmp_path):
    path = tmp_path / "attempt.py"
    checks: list[drill.ForkedCheck] = []

    def start():
        checks.append(drill.ForkedCheck(grade_by_content(path)))
        return checks[-1]

    view = RecordingView()
    began = time.monotonic()
    ending = drill.run_loop(real_time_events(path, [("save", "hang"), ("wait", 0.6), ("save", "fixed")]),
                            view=view, budget_s=30, check=start)
    took = time.monotonic() - began

    assert ending.outcome == "passed" and ending.result.passed and took < 10
    assert len(checks) == 2 and ending.grades == 1
    hang_at = next(e[1] for e in view.log if e[0] == "grading")
    (superseded,) = [e for e in view.log if e[0] == "superseded"]
    assert superseded[1] == hang_at and superseded[2] >= hang_at + 0.5
    # the countdown went on while the hang ran
    ticks = [e[1] for e in view.log if e[0] == "tick" and hang_at <= e[1] <= superseded[2]]
    assert len(ticks) >= 10 and ticks == sorted(ticks) and ticks[-1] - ticks[0] >= 0.5
    # the hung check's child is gone, nothing left behind
    assert not alive(checks[0].pid) and not alive(checks[1].pid)


def test_a_check_left_alone_shows_its_own_verdict_while_the_clock_runs(tmp_path):
    path = tmp_path / "attempt.py"
    view = RecordingView()
    ending = drill.run_loop(real_time_events(path, [("save", "slow"), ("wait", 1.0), ("save", "fixed")]),
                            view=view, budget_s=30, check=lambda: drill.ForkedCheck(grade_by_content(path)))
    assert ending.outcome == "passed"
    graded = [e for e in view.log if e[0] == "graded"]
    assert [g[2] for g in graded] == ["timeout", "passed"]
    assert graded[0][1] == next(e[1] for e in view.log if e[0] == "grading")  # labelled with its save's time
    assert not any(e[0] == "superseded" for e in view.log)
    assert any(e[0] == "tick" and graded[0][1] < e[1] for e in view.log[: view.log.index(graded[0])])


def test_time_up_during_a_check_makes_it_the_final_one(tmp_path):
    path = tmp_path / "attempt.py"
    view = RecordingView()
    checks: list[drill.ForkedCheck] = []

    def start():
        checks.append(drill.ForkedCheck(grade_by_content(path, hang_s=1.5)))
        return checks[-1]

    began = time.monotonic()
    ending = drill.run_loop(real_time_events(path, [("save", "hang")]), view=view, budget_s=0.5, check=start)
    # the check in flight (of the last save) becomes the final one: its verdict once it ends, no second check
    assert ending.outcome == "timeout" and ending.result is not None and 1.4 < time.monotonic() - began < 8
    assert len(checks) == 1 and ("time_up", 0.5) in view.log
    assert view.log[view.log.index(("time_up", 0.5)) + 1][::2] == ("grading", True)  # shown as the final check


def test_forked_checks_report_unreadable_files_and_lost_checks(tmp_path):
    missing = drill.ForkedCheck(lambda: (tmp_path / "gone.py").read_text())
    missing.wait()
    with pytest.raises(FileNotFoundError):
        missing.outcome()
    killed = drill.ForkedCheck(lambda: time.sleep(60))
    os.kill(killed.pid, 9)
    with pytest.raises(drill.CheckLost, match="stopped without a verdict.*SIGKILL"):
        killed.outcome()


def test_ctrl_c_waits_for_the_first_check_in_flight(tmp_path):
    path = tmp_path / "attempt.py"

    def events():
        yield from [drill.Tick()]
        path.write_text("slow", encoding="utf-8")
        yield drill.Saved()
        raise KeyboardInterrupt

    ending = drill.run_loop(events(), view=RecordingView(), budget_s=30,
                            check=lambda: drill.ForkedCheck(grade_by_content(path)))
    assert ending.outcome == "abandoned" and ending.result.verdict is Verdict.TIMEOUT and ending.grades == 1


def test_plain_view_lines_wrap_between_words_at_80_columns(capsys):
    """A long verdict wraps at the console's width between words (it used to be written as one
    line the terminal cut anywhere: `yo`/`u submit`)."""
    from rich.console import Console

    console = Console(file=sys.stdout, width=80, force_terminal=False)
    view = drill.PlainView(console, budget_s=300)
    view.graded(12.4, Result("mha", "drills/mha-x.py", Verdict.WRONG_OUTPUT, diagnoses=(Diagnosis("missing_scale"),)))
    view.unreadable(20.0, OSError(13, "permission denied while reading the file you saved just now in the drills folder"))
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert len(out.splitlines()) >= 3
    assert "permission denied while reading the file you saved just now in the drills folder" in " ".join(out.split())
def test_ctrl_c_ending_says_the_final_check_once(capsys, monkeypatch):
    """Issue 30 §12: after Ctrl-C the log's "final check → wrong output — …" line is the verdict;
    the report under it goes on with the mistake and the failed check, without a second verdict
    line; a passing ending is a few lines."""
    from types import SimpleNamespace

    from attnprep.commands import practice

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("NO_COLOR", "1")
    wrong = Result("mha", "drills/mha-x.py", Verdict.WRONG_OUTPUT, diagnoses=(Diagnosis("missing_scale"),),
                   checks=(Check("output", False, msg("check.output.bad", bad=3, total=36, case="plain")),))
    run = SimpleNamespace(ending=drill.Ending("abandoned", 3.0, wrong, 0.0, 1, ("missing_scale",)), budget_s=300.0, recorded=None)
    practice._render_ending(run, exercises.get("mha"))
    out = capsys.readouterr().out
    assert "wrong output" not in out and "mha-x.py" not in out  # said once, by the log
    assert "missing 1/sqrt(d) scale" in out and "3/36 cases differ" in out
    assert "abandoned after 0:03" in out
    passed = Result("mha", "drills/mha-x.py", Verdict.PASSED, checks=(Check("output", True, msg("check.output.ok", total=36)),))
    run = SimpleNamespace(ending=drill.Ending("passed", 100.0, passed, 0.0, 2, ()), budget_s=300.0, recorded=None)
    practice._render_ending(run, exercises.get("mha"))
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) <= 4, out
