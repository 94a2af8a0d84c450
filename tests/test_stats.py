"""`attnprep stats` (table and --json) and the history columns of `attnprep list`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import attnprep.cli  # noqa: F401  (registers the commands on the app)
from attnprep import exercises, history
from attnprep.app import app
from attnprep.commands.practice import sparkline, stats_document
from attnprep.grader.result import Diagnosis, Result, Verdict
from rich.text import Text


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)


def run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def record(exercise: str, verdict: Verdict, *mistakes: str, kind="drill", at=0.0, took=0.0, outcome=None):
    r = Result(exercise, f"{exercise}.py", verdict, diagnoses=tuple(Diagnosis(m) for m in mistakes))
    history.record(r, kind=kind, started_at=at, duration_s=took, outcome=outcome)


@pytest.fixture
def practised():
    """mha: a check with a mistake, four drills (pass, time-out, pass, abandoned); gqa: one check."""
    record("mha", Verdict.WRONG_OUTPUT, "missing_scale", kind="check", at=1, took=0.2)
    record("mha", Verdict.PASSED, kind="drill", at=2, took=240, outcome="passed")
    record("mha", Verdict.MASK_LEAK, "causal_ignored", "missing_scale", at=3, took=300, outcome="timeout")
    record("mha", Verdict.PASSED, at=4, took=120, outcome="passed")
    record("mha", Verdict.ERROR, at=5, took=30, outcome="abandoned")
    record("gqa", Verdict.WRONG_OUTPUT, "gqa_repeat_tiled", kind="check", at=6, took=0.3)


def test_sparkline_scales_against_the_budget_and_marks_timeouts():
    line = sparkline(((30, "passed"), (150, "passed"), (300, "timeout"), (299, "passed"), (400, "passed")), 300)
    assert line.plain == "▁▅✗██"
    assert sparkline((), 300).plain == ""
    # a drill's own budget wins over the default; an abandoned one is a dash
    assert sparkline(((110, "passed", 120), (110, "passed", None), (5, "abandoned", 120)), 300).plain == "█▃—"


def test_stats_measures_a_short_drill_against_its_own_budget(monkeypatch):
    """`drill mha --minutes 2` passed in 1:50: 1:50 / 2:00 (green), not against mha's 5:00."""
    monkeypatch.setenv("COLUMNS", "100")
    r = Result("mha", "mha.py", Verdict.PASSED)
    history.record(r, kind="drill", started_at=1, duration_s=110, outcome="passed", budget_s=120)
    (row,) = [r for r in stats_document()["exercises"] if r["exercise"] == "mha"]
    assert (row["best_drill_budget_s"], row["best_vs_budget"]) == (120, round(110 / 120, 3))
    result = CliRunner().invoke(app, ["stats"], env={"FORCE_COLOR": "1", "COLUMNS": "100"}, color=True)
    lines = [Text.from_ansi(line).plain for line in result.stdout.splitlines()]
    (mha_line,) = [line for line in lines if line.startswith("mha ")]
    assert "1:50 / 2:00" in mha_line and "█" in mha_line  # 92% of its own budget (of 5:00: ▂)


def test_stats_json_has_every_exercise_with_the_summary(practised):
    result = run("stats", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert doc["version"] == 1
    assert [r["exercise"] for r in doc["exercises"]] == list(exercises.registry())
    mha = next(r for r in doc["exercises"] if r["exercise"] == "mha")
    budget = exercises.get("mha").minutes * 60.0
    assert mha == {
        "exercise": "mha",
        "title": exercises.get("mha").title,
        "status": "passed",
        "attempts": 5,
        "passes": 2,
        "pass_rate": 0.4,
        "drills": 4,
        "drill_passes": 2,
        "budget_s": budget,
        "best_drill_s": 120,
        "best_drill_budget_s": budget,  # recorded without a budget of its own: the exercise's
        "median_drill_s": 180,
        "median_drill_budget_s": budget,
        "best_vs_budget": round(120 / budget, 3),
        "median_vs_budget": round(180 / budget, 3),
        "recent_drills": [
            {"duration_s": 240, "outcome": "passed", "budget_s": budget},
            {"duration_s": 300, "outcome": "timeout", "budget_s": budget},
            {"duration_s": 120, "outcome": "passed", "budget_s": budget},
            {"duration_s": 30, "outcome": "abandoned", "budget_s": budget},
        ],
        "top_mistakes": [
            {"id": "missing_scale", "count": 2, "title": "missing 1/sqrt(d) scale"},
            {"id": "causal_ignored", "count": 1, "title": exercises.mistake_catalogue()["causal_ignored"].title},
        ],
        "last_verdict": "error",
        "last_at": 5.0,
    }
    gqa = next(r for r in doc["exercises"] if r["exercise"] == "gqa")
    assert (gqa["status"], gqa["attempts"], gqa["best_drill_s"], gqa["recent_drills"]) == ("attempted", 1, None, [])
    untouched = [r for r in doc["exercises"] if r["exercise"] not in ("mha", "gqa")]
    assert all(r["attempts"] == 0 and r["status"] == "new" for r in untouched)
    assert doc["totals"] == {"attempts": 6, "passes": 2, "drills": 4, "drill_passes": 2}


def test_stats_keeps_exercises_the_registry_no_longer_has():
    record("retired", Verdict.PASSED, kind="check", at=1, took=0.1)
    rows = stats_document()["exercises"]
    assert rows[-1]["exercise"] == "retired" and rows[-1]["budget_s"] is None and rows[-1]["title"] is None


def test_stats_table(practised):
    result = run("stats")
    assert result.exit_code == 0
    out = result.stdout
    budget = history.format_duration(exercises.get("mha").minutes * 60)
    (mha_line,) = [line for line in out.splitlines() if line.startswith("mha ")]
    assert mha_line.split()[:3] == ["mha", "5", "40%"]
    assert f"2:00 / {budget}" in mha_line and f"3:00 / {budget}" in mha_line
    spark = sparkline(((240, "passed"), (300, "timeout"), (120, "passed"), (30, "abandoned")), exercises.get("mha").minutes * 60)
    assert spark.plain.endswith("—") and spark.plain in mha_line
    assert "missing 1/sqrt(d) scale ×2" in mha_line
    assert "— abandoned" in " ".join(out.split())  # the legend names every glyph
    assert "5 runs" not in out and "6 runs, 2 passed; 2 of 4 drills passed in time." in out
    never = next(e for e in exercises.registry() if e not in ("mha", "gqa"))
    assert "not practised yet: " in out and never in out.split("not practised yet: ")[1]


def test_stats_with_an_empty_history():
    result = run("stats")
    assert result.exit_code == 0
    assert "no runs recorded yet" in result.stdout


# --- `attnprep list` shows the history -----------------------------------------------------------


def test_list_shows_record_and_best_drill_time(practised, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    result = run("list")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[-2:] == ["record", "best"]
    by_id = {line.split()[0]: line for line in lines[1:] if line and not line[0].isspace()}
    assert by_id["mha"].split()[-3:] == ["started", "passed", "2:00"]
    assert by_id["gqa"].split()[-3:] == ["not", "started", "attempted"]
    assert by_id["mqa"].rstrip().endswith("not started")  # no history: nothing shown
    assert all(len(line) <= 80 for line in lines)
    assert "record, best: from your history" in result.stdout

    data = {d["id"]: d for d in json.loads(run("list", "--json").stdout)}
    assert data["mha"]["history"] == {"status": "passed", "attempts": 5, "passes": 2, "best_drill_s": 120}
    assert data["gqa"]["history"] == {"status": "attempted", "attempts": 1, "passes": 0, "best_drill_s": None}
    assert "history" not in data["mqa"]


def test_reading_an_empty_history_creates_no_database(attnprep_home):
    assert run("stats").exit_code == 0 and run("list").exit_code == 0
    assert not (attnprep_home / "history.sqlite3").exists()


def test_stats_and_list_do_not_import_torch(practised):
    import subprocess
    import sys

    code = (
        "import sys; from typer.testing import CliRunner; from attnprep.app import app\n"
        "for args in (['stats'], ['stats', '--json'], ['list'], ['drill', '--help']):\n"
        "    assert CliRunner().invoke(app, args).exit_code == 0, args\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_stats_at_80_columns_keeps_the_median_and_puts_the_mistakes_below(practised, monkeypatch):
    """At 80 columns the numbers keep their columns (the median included) and the mistakes get the
    whole width below the table, instead of a narrow cell that breaks their titles."""
    monkeypatch.setenv("COLUMNS", "80")
    out = run("stats").stdout
    header = out.splitlines()[0]
    assert "median" in header and "most frequent mistakes" not in header
    assert "not shown at this width" not in out
    below = out.split("most frequent mistakes", 1)[1]
    (mha_line,) = [line for line in below.splitlines() if line.startswith("mha ")]
    titles = [exercises.get("mha").mistake(m).title for m in ("missing_scale", "causal_ignored")]
    assert titles[0] == "missing 1/sqrt(d) scale" and f"{titles[0]} ×2" in mha_line and f"{titles[1]} ×1" in mha_line
    assert all(len(line) <= 80 and line == line.rstrip() for line in out.splitlines())


def test_stats_at_120_columns_has_the_mistakes_in_the_table(practised):
    header = run("stats").stdout.splitlines()[0]
    assert "median" in header and "most frequent mistakes" in header


def test_one_run_is_said_in_the_singular():
    record("mha", Verdict.PASSED, at=1, took=100, outcome="passed")
    out = " ".join(run("stats").stdout.split())
    assert "1 run, 1 passed; 1 of 1 drill passed in time." in out


def test_zh_stats_mistake_titles_are_not_cut(practised, monkeypatch):
    from rich.cells import cell_len

    from attnprep import texts

    monkeypatch.setattr(texts, "_override", "zh")
    record("gqa", Verdict.WRONG_OUTPUT, "gqa_heads_tiled", kind="check", at=7, took=0.3)
    for width in ("60", "80"):
        monkeypatch.setenv("COLUMNS", width)
        out = run("stats").stdout
        assert "…" not in out.split(texts.t("cli.stats.legend", "zh", abandoned="—")[:4])[0], out
        assert all(cell_len(line) <= int(width) for line in out.splitlines())
        title = exercises.mistake_catalogue("zh")["gqa_heads_tiled"].title
        assert "".join(title.split()) in "".join(out.split())  # whole, only wrapped
def test_a_blank_stub_checked_is_not_started(tmp_path, monkeypatch):
    """Issue 30 §8: checking the untouched stub records no run: `stats` has no attempt, `list`
    says blank (not "attempted"), `today` does not plan it as a failure; the message names what the
    stub has (NotImplementedError), not TODOs it does not have."""
    monkeypatch.chdir(tmp_path)
    assert run("new", "mqa").exit_code == 0
    # an editor that trims trailing spaces and the last newline leaves it blank for every command
    stub = tmp_path / "mqa.py"
    stub.write_text("\n".join(l.rstrip() for l in stub.read_text(encoding="utf-8").splitlines()), encoding="utf-8")
    checked = run("check", "mqa")
    assert checked.exit_code == 1
    flat = " ".join(checked.stdout.split())
    assert "blank stub" in flat and "NotImplementedError" in flat and "TODO" not in flat
    assert flat.startswith("· mqa.py not started —")
    assert history.runs() == []
    doc = json.loads(run("stats", "--json").stdout)
    assert next(r for r in doc["exercises"] if r["exercise"] == "mqa")["attempts"] == 0
    listed = {d["id"]: d for d in json.loads(run("list", "--json").stdout)}
    assert listed["mqa"]["status"] == "blank" and "history" not in listed["mqa"]
    plan = json.loads(run("today", "--json").stdout)
    assert not [i for i in plan["items"] if i["exercise"] == "mqa" and i["why"] != "new"]  # not "checked 1×"
    assert "mqa failed" not in " ".join(run("today").stdout.split())


def test_one_blank_test_for_list_and_check(tmp_path):
    """`list` (workspace.status_of) and `check` (the grader) ask the registry's one is_blank, with
    one normalisation: they agree on every text."""
    from attnprep import workspace
    from attnprep.grader import grade

    assert workspace.is_blank is exercises.is_blank
    stub = exercises.blank_stub("gqa")
    ex = exercises.get("gqa")
    for text, blank in ((stub, True), (stub.replace("\n", "\r\n"), True), ("\n\n" + stub + "   \n\n", True),
                        (stub.replace("raise NotImplementedError", "pass  # raise NotImplementedError", 1), False)):
        assert exercises.is_blank("gqa", text) is blank
        (tmp_path / "gqa.py").write_text(text, encoding="utf-8", newline="")
        assert (workspace.status_of(ex, tmp_path) is workspace.Status.BLANK) is blank
        assert grade(tmp_path / "gqa.py", ex).blank is blank
