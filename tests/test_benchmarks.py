"""Smoke tests of `python benchmarks/run.py`: it runs and its --json has the documented shape.

These assert nothing about speed (the figures belong to benchmarks/README.md, not to a timed
test on a shared machine); they keep the one benchmark command from rotting.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"
ROWS = ["list", "list-practised", "check", "check-fail", "check-all", "drill", "memory", "compare", "teardown"]
ROW_KEYS = {"name", "what", "unit", "subject_median", "baseline", "baseline_median", "ratio",
            "target", "target_kind", "ok", "runs", "samples"}


def bench(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUN), *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def assert_row(row: dict, name: str) -> None:
    assert ROW_KEYS <= row.keys(), f"{name}: missing {ROW_KEYS - row.keys()}"
    assert row["name"] == name
    assert row["subject_median"] > 0
    assert row["target_kind"] in ("ratio", "seconds", "info")
    if row["target_kind"] == "ratio":
        assert row["ratio"] > 0 and row["baseline_median"] > 0
        assert row["ok"] == (row["ratio"] <= row["target"])
    elif row["target_kind"] == "seconds":
        assert row["ok"] == (row["subject_median"] <= row["target"])
    else:
        assert row["target"] is None and row["ok"] is None


def test_list_row_json_has_the_documented_keys():
    proc = bench("--repeat", "1", "--no-warm-up", "--json", "--only", "list")
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["version"] == 1 and doc["repeat"] == 1
    assert {"date", "cpus", "python", "torch", "attnprep_command"} <= doc["machine"].keys()
    assert [row["name"] for row in doc["rows"]] == ["list"]
    row = doc["rows"][0]
    assert_row(row, "list")
    assert row["target"] == 1.6 and row["runs"] == 1
    assert len(row["samples"]["subject"]) == len(row["samples"]["baseline"]) == 1
    assert proc.returncode == (0 if row["ok"] else 1)


def test_table_has_a_line_per_row():
    proc = bench("--repeat", "1", "--no-warm-up", "--only", "list")
    assert proc.returncode in (0, 1), proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("| name") and "ratio" in line and "target" in line for line in lines)
    list_line = next(line for line in lines if line.startswith("| list "))
    assert "≤ 1.6×" in list_line and ("yes" in list_line or "NO" in list_line)
    assert "torch" in lines[1] and "Python" in lines[1]


def test_unknown_row_is_a_usage_error():
    proc = bench("--only", "nope")
    assert proc.returncode == 2
    assert "unknown row nope" in proc.stderr


# every row once, and one of the per-exercise check rows of each kind (they are the same measure).
# list and list-practised run in test_only_runs_the_rows_asked_in_the_order_asked, which holds each
# of its rows to assert_row. The rows whose baseline is bare `import torch` run in one run.py with
# --one-baseline (that baseline measured once for all of them, not once per row: about 1.9 s of CPU
# a row; compare's too, in run.py's process), and the drill row with them (a run.py less), shared by
# their tests through ``once``.
TOGETHER = ["list-practised", "list"]
ONCE = [row for row in ROWS if row not in TOGETHER] + ["check-gqa", "fail-flash"]
ONE_BASELINE = ["check", "check-fail", "check-all", "memory", "teardown", "check-gqa", "fail-flash", "compare", "drill"]


def _row_run(name: str, once) -> tuple[int, str, dict]:
    """(run.py's exit code, its stderr, the row ``name``) of a smoke run with --repeat 1."""
    def run(names: list[str]) -> tuple[int, str, dict]:
        proc = bench("--repeat", "1", "--no-warm-up", "--json", "--one-baseline", "--only", ",".join(names))
        rows = json.loads(proc.stdout)["rows"] if proc.returncode in (0, 1) else []
        assert [row["name"] for row in rows] in ([], names)
        return proc.returncode, proc.stderr, {row["name"]: row for row in rows}

    if name in ONE_BASELINE:
        code, stderr, rows = once("benchmarks/run.py " + ",".join(ONE_BASELINE), lambda: run(ONE_BASELINE))
    else:
        code, stderr, rows = run([name])
    return code, stderr, rows.get(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", ONCE)
def test_every_row_runs_once(name, once):
    code, stderr, row = _row_run(name, once)
    assert code in (0, 1), stderr
    assert row is not None, stderr
    assert_row(row, name)
    if name == "check":
        assert all(g["verdict"] == "passed" for g in row["graded"])
    elif name == "check-fail":
        assert row["graded"][0]["diagnoses"] == ["gqa_heads_tiled"]
    elif name == "fail-flash":
        assert row["graded"][0]["verdict"] != "passed" and row["target"] == 1.5
    elif name == "check-all":
        from attnprep import exercises

        assert [g["exercise"] for g in row["graded"]] == list(exercises.registry())
    elif name == "drill":
        assert row["p90"] >= row["subject_median"] > 0
    elif name == "memory":
        assert row["attnprep_process_mib"] > 0 and row["grading_child_mib"] > 0


def test_only_runs_the_rows_asked_in_the_order_asked():
    proc = bench("--repeat", "1", "--no-warm-up", "--json", "--only", ",".join(TOGETHER))
    assert proc.returncode in (0, 1), proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert [row["name"] for row in rows] == TOGETHER  # not the table's order (list first)
    for row, name in zip(rows, TOGETHER):
        assert_row(row, name)


def test_every_exercise_has_a_failing_row_of_an_attempt_that_fails():
    """fail-<id>: a corpus attempt of the exercise whose header says it fails."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import bench_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    from attnprep import exercises

    from per_exercise import CORPUS, chosen

    for exercise_id in exercises.registry():
        path = bench_check.failing_attempt(exercise_id)
        assert path == CORPUS / exercise_id / chosen(exercise_id, "benchmark")  # the tests' reader agrees
        expect = next(line for line in path.read_text(encoding="utf-8").splitlines()[:3] if line.startswith("# expect:"))
        assert expect.split(":", 1)[1].strip() != "passed", path




def _lines_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import lines
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return lines


def test_every_bug_line_annotation_points_at_code_of_a_failing_attempt():
    """benchmarks/lines.py's second source: a failing corpus attempt ending with ``# bug-line: N[, M]``;
    each N is a line of code in the file (not blank, not a comment), the header expects a failure."""
    lines = _lines_module()
    annotated = [p for p in (ROOT / "tests" / "corpus").glob("*/*.py") if lines.bug_lines(p)]
    assert len({p.parent.name for p in annotated}) >= 14 and len(annotated) >= 60
    for path in annotated:
        text = path.read_text(encoding="utf-8").splitlines()
        assert text[-1].startswith("# bug-line:"), path
        expect = next(line for line in text[:3] if line.startswith("# expect:"))
        assert expect.split(":", 1)[1].strip() != "passed", path
        for n in lines.bug_lines(path):
            assert 1 <= n < len(text), (path, n)
            assert text[n - 1].strip() and not text[n - 1].strip().startswith("#"), (path, n)


def test_bug_line_annotation_is_read_from_the_last_line_only(tmp_path):
    lines = _lines_module()
    path = tmp_path / "a.py"
    path.write_text("# attnprep: mha\n# expect: wrong_output\nx = 1\n# bug-line: 3, 5\n\n", encoding="utf-8")
    assert lines.bug_lines(path) == (3, 5)
    path.write_text("# bug-line: 3\nx = 1\n", encoding="utf-8")
    assert lines.bug_lines(path) == ()


def test_lines_benchmark_on_one_exercise(graded, monkeypatch, capsys):
    """`python benchmarks/lines.py --only swiglu --json`: both sources counted, their numbers consistent
    (within ≤ with a line ≤ failing), every miss said with the line got and the lines expected.
    Its ``main`` runs here, as the script's last line calls it; the corpus files it grades are
    graded once per test run (``graded``, tests/conftest.py: a fresh grade's result), the planted
    ones as the script grades them."""
    lines = _lines_module()
    from attnprep import grader

    fresh = grader.grade
    corpus = ROOT / "tests" / "corpus"

    def grade(path, exercise=None, **kwargs):
        if not kwargs and Path(path).resolve().is_relative_to(corpus):
            return graded(path, exercise.id)
        return fresh(path, exercise, **kwargs)

    monkeypatch.setattr(grader, "grade", grade)
    assert lines.main(["--only", "swiglu", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tolerance"] == 1 and set(doc["rows"]) == {"planted", "corpus"}
    corpus_files = [p for p in (corpus / "swiglu").glob("*.py") if lines.bug_lines(p)]
    for source in ("planted", "corpus"):
        row = doc["rows"][source]["swiglu"]
        assert row["not_failed"] == []
        assert 0 <= row["within"] <= row["with_line"] <= row["failing"]
        assert row["with_line"] - row["within"] == len(row["off"])
        assert all({"file", "got", "expected", "code", "reason"} <= o.keys() for o in row["off"])
        assert doc["total"][source]["failing"] == row["failing"]
    assert doc["rows"]["planted"]["swiglu"]["failing"] >= 6  # seeds 1-6, duplicates once, and the pairs
    assert doc["rows"]["corpus"]["swiglu"]["failing"] == len(corpus_files)
    assert lines.main(["--only", "swiglu", "--source", "corpus"]) == 0
    assert any(line.startswith("| swiglu ") for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize("listing", sorted((ROOT / "benchmarks").glob("heldout_24*.txt")), ids=lambda p: p.stem)
def test_every_held_out_round_lists_corpus_attempts_with_headers(listing):
    """A held-out round (benchmarks/heldout_24*.txt, read by corpus_names.py and lines.py --round)
    names attempts that are in the corpus, once each, with an ``# expect:`` header."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from corpus_names import header, round_of
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    paths = [p for group in round_of(listing).values() for p in group]
    assert paths and len(paths) == len(set(paths))
    for path in paths:
        expect, _ = header(path)
        assert path.is_file() and expect is not None, path
