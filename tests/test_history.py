"""The history database: what a run stores, migrations, WAL, survival of a SIGKILL mid-write,
recovery from a corrupt file, summaries and the choice of the weakest exercise."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from attnprep import history, paths
from attnprep.grader.result import Diagnosis, Result, Verdict


def result(verdict: Verdict = Verdict.PASSED, *mistakes: str, exercise: str = "mha") -> Result:
    return Result(
        exercise=exercise,
        file=f"{exercise}.py",
        verdict=verdict,
        diagnoses=tuple(Diagnosis(m) for m in mistakes),
    )


# --- storing -------------------------------------------------------------------------------------


def test_a_run_is_stored_with_every_field():
    rid = history.record(
        result(Verdict.WRONG_OUTPUT, "missing_scale", "scale_d_model"),
        kind="drill", started_at=1000.5, duration_s=42.25, outcome="timeout", mistakes=["softmax_wrong_dim", "missing_scale"],
    )
    (run,) = history.runs()
    assert run == history.Run(
        id=rid, exercise="mha", file="mha.py", kind="drill", started_at=1000.5, duration_s=42.25,
        verdict="wrong_output", diagnoses=("softmax_wrong_dim", "missing_scale", "scale_d_model"),
        passed=False, outcome="timeout", budget_s=None,
    )


def test_the_database_lives_in_attnprep_home_in_wal_mode(attnprep_home):
    history.record(result(), kind="check", started_at=1.0, duration_s=0.2)
    db = attnprep_home / "history.sqlite3"
    assert paths.history_db() == db and db.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_bad_kind_or_outcome_is_a_programming_error():
    with pytest.raises(ValueError):
        history.record(result(), kind="quiz", started_at=0, duration_s=0)
    with pytest.raises(ValueError):
        history.record(result(), kind="drill", started_at=0, duration_s=0, outcome="won")


OLD_INSERT = ("INSERT INTO runs (exercise, file, kind, started_at, duration_s, verdict, diagnoses, passed, outcome)"
              " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")  # what attnprep wrote before 0005_runs_budget


def test_migrations_are_named_applied_in_order_and_once(monkeypatch, attnprep_home):
    first, *rest = history.migrations
    monkeypatch.setattr(history, "migrations", [first])  # an old attnprep created the database
    conn = history.connect()  # ... and wrote a run with the columns it knew
    conn.execute("INSERT INTO runs (exercise, file, kind, started_at, duration_s, verdict, passed)"
                 " VALUES ('mha', 'mha.py', 'check', 1.0, 0.1, 'passed', 1)")
    conn.close()
    monkeypatch.setattr(history, "migrations", [first, *rest])  # a newer one opens it
    history.record(result(), kind="check", started_at=2.0, duration_s=0.1)
    history.record(result(), kind="check", started_at=3.0, duration_s=0.1)
    with sqlite3.connect(attnprep_home / "history.sqlite3") as conn:
        names = [n for (n,) in conn.execute("SELECT name FROM migrations ORDER BY rowid")]
        indexes = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert names == [name for name, _ in history.migrations]
    assert "runs_by_exercise" in indexes
    old, *new = history.runs()
    assert len(new) == 2
    assert (old.started_at, old.passed, old.interview, old.first_try) == (1.0, True, None, None)


# --- durability ----------------------------------------------------------------------------------

WRITER = """
import sys, time
from attnprep import history
from attnprep.grader.result import Result, Verdict
for i in range(100000):
    rid = history.record(Result("mha", f"f{i}.py", Verdict.PASSED), kind="check", started_at=float(i), duration_s=0.5)
    print(rid, flush=True)
"""


def test_sigkill_mid_write_keeps_every_committed_record(attnprep_home):
    """Kill writers at arbitrary points (three times, so some kills land inside a commit): the
    database opens and holds every record a writer reported as committed."""
    env = {**os.environ, "ATTNPREP_HOME": str(attnprep_home)}
    committed: list[int] = []
    for round_ in range(3):
        proc = subprocess.Popen([sys.executable, "-c", WRITER], stdout=subprocess.PIPE, text=True, env=env)
        target = 30 + 17 * round_
        seen = 0
        while seen < target:
            line = proc.stdout.readline()
            assert line, "the writer died on its own"
            committed.append(int(line))
            seen += 1
        time.sleep(0.005 * round_)  # land somewhere inside the next records
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
    stored = {run.id for run in history.runs()}
    assert set(committed) <= stored
    assert len(stored) >= len(committed)  # plus, perhaps, records committed but not yet printed
    with sqlite3.connect(attnprep_home / "history.sqlite3") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # and it keeps working
    assert history.record(result(), kind="check", started_at=0.0, duration_s=0.1) is not None


def test_a_corrupt_database_is_moved_aside_with_one_line(attnprep_home, capsys):
    db = attnprep_home / "history.sqlite3"
    attnprep_home.mkdir(parents=True, exist_ok=True)
    garbage = b"this is not a database\n" * 200
    db.write_bytes(garbage)
    (attnprep_home / "history.sqlite3-wal").write_bytes(b"stale wal")

    rid = history.record(result(), kind="check", started_at=5.0, duration_s=0.3)

    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("attnprep: history database was unreadable (file is not a database); kept it as ")
    assert err.rstrip().endswith("and started a fresh one")
    (aside,) = attnprep_home.glob("history.sqlite3.corrupt-*[0-9]")
    assert aside.read_bytes() == garbage  # kept, untouched
    assert str(aside) in err
    assert (attnprep_home / f"{aside.name}-wal").read_bytes() == b"stale wal"
    assert [r.id for r in history.runs()] == [rid]  # the fresh database works, and says nothing more
    assert capsys.readouterr().err == ""


def test_a_damaged_database_is_recovered_too(attnprep_home, capsys):
    history.record(result(), kind="check", started_at=0.0, duration_s=0.1)
    db = attnprep_home / "history.sqlite3"
    with sqlite3.connect(db) as conn:  # many runs at once, to fill several pages
        conn.executemany(
            "INSERT INTO runs (exercise, file, kind, started_at, duration_s, verdict, diagnoses, passed)"
            " VALUES ('mha', 'mha.py', 'check', ?, 0.1, 'wrong output', '[\"missing_scale\"]', 0)",
            [(float(i),) for i in range(300)],
        )
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(db.read_bytes())
    data[4096 : 4096 * 3] = b"\xff" * (4096 * 2)  # scribble over pages 2 and 3, keep the header
    db.write_bytes(bytes(data))

    assert history.exercise_summaries() == {}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "kept it as" in err and "Traceback" not in err


def test_stats_survives_a_corrupt_database_from_the_command_line(attnprep_home):
    attnprep_home.mkdir(parents=True, exist_ok=True)
    (attnprep_home / "history.sqlite3").write_bytes(b"\x00garbage" * 100)
    env = {**os.environ, "ATTNPREP_HOME": str(attnprep_home)}
    proc = subprocess.run([sys.executable, "-m", "attnprep", "stats", "--json"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0
    assert len(proc.stderr.splitlines()) == 1 and "kept it as" in proc.stderr
    assert json.loads(proc.stdout)["totals"]["attempts"] == 0


def test_a_locked_database_skips_the_record_with_one_line(attnprep_home, monkeypatch, capsys):
    history.record(result(), kind="check", started_at=1.0, duration_s=0.1)
    monkeypatch.setattr(history, "BUSY_TIMEOUT_S", 0.05)
    blocker = sqlite3.connect(attnprep_home / "history.sqlite3", isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        assert history.record(result(), kind="check", started_at=2.0, duration_s=0.1) is None
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    err = capsys.readouterr().err
    assert err.startswith("attnprep: this run was not recorded in the history") and err.count("\n") == 1
    assert not list(attnprep_home.glob("*.corrupt-*"))  # busy is not corrupt
    assert len(history.runs()) == 1


# --- summaries -----------------------------------------------------------------------------------


def test_summaries_count_runs_and_time_drills():
    rec = history.record
    rec(result(Verdict.WRONG_OUTPUT, "missing_scale"), kind="check", started_at=10, duration_s=0.2)
    rec(result(Verdict.PASSED), kind="drill", started_at=20, duration_s=200, outcome="passed", mistakes=["missing_scale", "softmax_wrong_dim"])
    rec(result(Verdict.MASK_LEAK, "causal_ignored"), kind="drill", started_at=30, duration_s=300, outcome="timeout")
    rec(result(Verdict.ERROR), kind="drill", started_at=40, duration_s=12, outcome="abandoned")
    rec(result(Verdict.PASSED), kind="drill", started_at=50, duration_s=100, outcome="passed")
    rec(result(Verdict.PASSED), kind="drill", started_at=60, duration_s=160, outcome="passed")
    rec(result(Verdict.PASSED, exercise="gqa"), kind="check", started_at=70, duration_s=0.3)

    summaries = history.exercise_summaries()
    assert set(summaries) == {"mha", "gqa"}
    s = summaries["mha"]
    assert (s.attempts, s.passes, s.drills, s.drill_passes) == (6, 3, 5, 3)
    assert s.pass_rate == pytest.approx(0.5)
    assert (s.best_drill_s, s.median_drill_s) == (100, 160)
    assert [d[:2] for d in s.recent_drills] == [(200, "passed"), (300, "timeout"), (12, "abandoned"), (100, "passed"),
                                                (160, "passed")]
    assert s.recent_drill_s == (200, 100, 160)
    assert s.top_mistakes == (("missing_scale", 2), ("causal_ignored", 1), ("softmax_wrong_dim", 1))
    assert (s.last_verdict, s.last_at, s.status) == ("passed", 60, "passed")
    assert summaries["gqa"].best_drill_s is None and summaries["gqa"].status == "passed"
    assert s.to_json()["recent_drills"][1] == {"duration_s": 300, "outcome": "timeout", "budget_s": None}


def test_recent_drills_keep_the_last_twelve():
    for i in range(15):
        history.record(result(), kind="drill", started_at=float(i), duration_s=float(i + 1), outcome="passed")
    s = history.exercise_summaries()["mha"]
    assert [d.duration_s for d in s.recent_drills] == [float(i + 1) for i in range(3, 15)]


def test_each_drill_is_measured_against_its_own_budget(attnprep_home, monkeypatch):
    """`drill --minutes 2` is stored with its budget (0003_runs_budget); drills recorded before the
    migration (no budget) keep working and count against the exercise's default."""
    first, second, *rest = history.migrations
    monkeypatch.setattr(history, "migrations", [first, second])  # the database of an older attnprep
    with contextlib.closing(history.connect()) as conn:
        conn.execute(OLD_INSERT, ("mha", "d1.py", "drill", 1.0, 150.0, "passed", "[]", 1, "passed"))
    monkeypatch.setattr(history, "migrations", [first, second, *rest])
    history.record(result(), kind="drill", started_at=2.0, duration_s=100.0, outcome="passed", budget_s=120.0)
    history.record(result(Verdict.ERROR), kind="drill", started_at=3.0, duration_s=20.0, outcome="abandoned", budget_s=120.0)
    history.record(result(), kind="check", started_at=4.0, duration_s=0.5)

    assert [r.budget_s for r in history.runs()] == [None, 120.0, 120.0, None]
    s = history.exercise_summaries({"mha": 300.0})["mha"]
    assert s.recent_drills == ((150.0, "passed", 300.0), (100.0, "passed", 120.0), (20.0, "abandoned", 120.0))
    assert (s.best_drill_s, s.best_drill_budget_s, s.best_vs_budget) == (100.0, 120.0, 100 / 120)
    assert s.median_vs_budget == pytest.approx((150 / 300 + 100 / 120) / 2)
    assert s.median_drill_budget_s is None  # 5:00 and 2:00: no one budget to show
    assert history.exercise_summaries()["mha"].recent_drills[0].budget_s is None  # no default given: unknown
    # the weakest exercise is judged against the budget the best drill had
    assert history.pick_weakest([SimpleNamespace(id="mha", minutes=5)]) == (
        "mha", "mha has the worst best drill time against its budget: 1:40 of 2:00 (83%)")


# --- the weakest exercise ------------------------------------------------------------------------


def ex(exercise_id: str, minutes: int = 5):
    return SimpleNamespace(id=exercise_id, minutes=minutes)


def summary(exercise_id, *, attempts=1, passes=1, best=None, last_at=0.0, last_verdict="passed"):
    return history.ExerciseSummary(exercise_id, attempts, passes, 1, int(best is not None), best, best, (), (), last_verdict, last_at)


NOW = 1_000_000.0


def test_pick_weakest_never_passed_first_in_teaching_order():
    exercises = [ex("mha"), ex("mqa"), ex("gqa")]
    summaries = {
        "mha": summary("mha", best=400),  # passed, slow
        "mqa": summary("mqa", attempts=3, passes=0, last_verdict="mask_leak"),
        # gqa: never attempted, but after mqa in teaching order
    }
    picked, why = history.pick_weakest(exercises, summaries, now=NOW)
    assert picked == "mqa"
    assert why == "mqa has never passed (3 attempts, last verdict: mask leak)"
    picked, why = history.pick_weakest(exercises, {}, now=NOW)
    assert picked == "mha" and "never been attempted" in why


def test_pick_weakest_then_the_worst_time_against_the_budget():
    exercises = [ex("mha", 5), ex("gqa", 10), ex("mqa", 20)]
    summaries = {
        "mha": summary("mha", best=270),  # 90 %
        "gqa": summary("gqa", best=720),  # 120 %: the worst
        "mqa": summary("mqa", best=1200),  # 100 %
    }
    picked, why = history.pick_weakest(exercises, summaries, now=NOW)
    assert picked == "gqa"
    assert why == "gqa has the worst best drill time against its budget: 12:00 of 10:00 (120%)"
    # passed by a check but never in a timed drill counts as worse than any time
    summaries["mqa"] = summary("mqa", best=None)
    picked, why = history.pick_weakest(exercises, summaries, now=NOW)
    assert (picked, why) == ("mqa", "mqa has passed a check but never a timed drill (budget 20:00)")


def test_pick_weakest_breaks_ties_by_the_oldest_practice():
    exercises = [ex("mha"), ex("mqa"), ex("gqa")]
    summaries = {
        "mha": summary("mha", best=150, last_at=NOW - 3600),
        "mqa": summary("mqa", best=150, last_at=NOW - 3 * 86400),  # longest ago
        "gqa": summary("gqa", best=150, last_at=NOW - 60),
    }
    picked, why = history.pick_weakest(exercises, summaries, now=NOW)
    assert picked == "mqa"
    assert why.endswith("of those tied, practised longest ago (3 days ago)")


def test_pick_weakest_reads_the_history_by_default():
    history.record(result(Verdict.WRONG_OUTPUT, exercise="mha"), kind="check", started_at=1.0, duration_s=0.1)
    history.record(result(exercise="mqa"), kind="drill", started_at=2.0, duration_s=100, outcome="passed")
    assert history.pick_weakest([ex("mha"), ex("mqa")])[0] == "mha"
    history.record(result(exercise="mha"), kind="drill", started_at=3.0, duration_s=200, outcome="passed")
    assert history.pick_weakest([ex("mha"), ex("mqa")]) == (
        "mha", "mha has the worst best drill time against its budget: 3:20 of 5:00 (67%)"
    )


def test_a_history_of_labels_is_migrated_to_tokens(attnprep_home):
    """Before the JSON's version 2 the history stored English labels ('wrong output'); migration
    0003 turns them into tokens, and stats and list read the old rows."""
    attnprep_home.mkdir(parents=True, exist_ok=True)
    db = attnprep_home / "history.sqlite3"
    with sqlite3.connect(db) as conn:  # the schema as migrations 0001 and 0002 left it
        conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        for name, sql in history.migrations[:2]:
            for statement in history._statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO migrations VALUES (?, 0)", (name,))
        labels = ["wrong output", "mask leak", "used a built-in", "syntax error", "wrong shape", "passed", "timeout"]
        conn.executemany(
            "INSERT INTO runs (exercise, file, kind, started_at, duration_s, verdict, diagnoses, passed)"
            " VALUES ('mqa', 'mqa.py', 'check', ?, 0.1, ?, '[]', ?)",
            [(float(i), v, int(v == "passed")) for i, v in enumerate(labels)],
        )
    assert [r.verdict for r in history.runs()] == [
        "wrong_output", "mask_leak", "used_builtin", "syntax_error", "wrong_shape", "passed", "timeout"]
    from attnprep.grader.result import Verdict

    assert all(Verdict(r.verdict) for r in history.runs())
    summary = history.exercise_summaries()["mqa"]
    assert summary.attempts == 7 and summary.last_verdict == "timeout"


# --- interviews and Q&A cards (migration 0004) ---------------------------------------------------


def test_an_interview_its_submissions_and_its_cards():
    row = history.open_interview("gqa", "interviews/gqa-1.py", started_at=100.0, budget_s=480.0)
    assert history.interviews() == [history.Interview(row, "gqa", "interviews/gqa-1.py", 100.0, 480.0, "open", None)]
    first = history.record(result(Verdict.WRONG_OUTPUT, "gqa_heads_tiled", exercise="gqa"), kind="check",
                           started_at=100.0, duration_s=300.0, interview=row, first_try=True)
    history.close_interview(row, outcome="submitted", duration_s=300.0)
    history.record(result(exercise="gqa"), kind="check", started_at=100.0, duration_s=400.0, interview=row, first_try=False)
    history.close_interview(row, outcome="abandoned", duration_s=999.0)  # too late: the first submission stays
    history.mark_card("gqa", 2, "How big is the cache?", known=False, marked_at=500.0, interview=row)
    (interview,) = history.interviews()
    assert (interview.outcome, interview.duration_s) == ("submitted", 300.0)
    runs = history.runs("gqa")
    assert [(r.id == first, r.interview, r.first_try, r.passed) for r in runs] == [(True, row, True, False), (False, row, False, True)]
    assert history.qa_marks("gqa") == [history.QAMark("gqa", 2, "How big is the cache?", False, 500.0, row)]
    assert history.qa_marks("mha") == []
    # a submission is still an attempt for `stats`
    assert history.exercise_summaries()["gqa"].attempts == 2


def test_an_interview_submission_is_a_check_with_first_try():
    with pytest.raises(ValueError):
        history.record(result(), kind="drill", started_at=0, duration_s=0, outcome="passed", first_try=True)
    with pytest.raises(ValueError):
        history.record(result(), kind="check", started_at=0, duration_s=0, interview=1)
    with pytest.raises(ValueError):
        history.close_interview(1, outcome="open", duration_s=0)


def test_reading_interviews_and_cards_never_creates_the_database(attnprep_home):
    assert history.interviews() == [] and history.qa_marks() == []
    assert not (attnprep_home / "history.sqlite3").exists()
