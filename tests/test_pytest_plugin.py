"""The pytest plugin (`pytest --attnprep`), installed through the `pytest11` entry point: run as a
user would, pytest in a folder of attempts, in a subprocess (``pytest_in``), or, where the process
does not matter, in this one (``run_pytest_here``, tests/conftest.py: the same session, a new
interpreter's import of pytest and torch saved)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from attnprep import exercises, history
from attnprep.attempts import header_id

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"


def pytest_in(folder: Path, home: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:benchmark", *args],
        cwd=folder, capture_output=True, text=True, timeout=300,
        # CI: pytest's short summary shows a crash message untrimmed there (as under -vv), so the
        # report must be said once whether or not the suite itself runs in a CI
        env={**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "120", "CI": "true", **(env or {})},
    )


@pytest.fixture
def attempts(tmp_path) -> Path:
    """A folder of attempts: one correct, one with a named mistake, and files that are not attempts."""
    folder = tmp_path / "attempts"
    folder.mkdir()
    good = (ROOT / "solutions" / "mha.py").read_text(encoding="utf-8")
    (folder / "mha_good.py").write_text("# attnprep: mha\n" + good, encoding="utf-8")
    (folder / "mha_bad.py").write_text((CORPUS / "mha" / "missing_scale.py").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "helper.py").write_text("x = 1\n", encoding="utf-8")
    (folder / "late_header.py").write_text("import math\n# attnprep: mha\n", encoding="utf-8")  # not on the first line
    (folder / "notes.txt").write_text("# attnprep: mha\n", encoding="utf-8")
    return folder


def test_the_entry_point_is_installed():
    (plugin,) = [ep for ep in entry_points(group="pytest11") if ep.name == "attnprep"]
    assert plugin.value == "attnprep.pytest_plugin"


@pytest.mark.slow
def test_one_pass_one_failure_with_the_mistake_named(attempts, attnprep_home):
    proc = pytest_in(attempts, attnprep_home, "--attnprep", "-v")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed, 1 passed" in out
    assert "mha_good.py::mha PASSED" in out and "mha_bad.py::mha FAILED" in out
    title = exercises.mistake_catalogue()["missing_scale"].title
    failure = out.split("= FAILURES =", 1)[1]
    assert title in failure  # the mistake's name
    assert "wrong output" in failure and re.search(r"output\s+✗", failure)  # the verdict and the failed check
    assert "Traceback" not in failure
    assert "─ shapes" in failure and re.search(r"causality\s+✓", failure)  # -v: the whole report
    assert failure.count("scores = q @ k.transpose(-2, -1)  # (B, H, T, T)") == 1  # the divergence, said once
    summary = out.split("short test summary info", 1)[1]
    assert re.search(r"FAILED mha_bad.py::mha - ✗ mha_bad.py\s+wrong output — " + re.escape(title), summary)
    assert "evidence" not in summary  # the headline alone, not the report again
    # results go to the history like `check`
    runs = history.runs()
    assert sorted((Path(r.file).name, r.kind, r.passed) for r in runs) == [("mha_bad.py", "check", False), ("mha_good.py", "check", True)]
    assert [r.diagnoses for r in runs if not r.passed] == [("missing_scale",)]


@pytest.mark.slow
def test_addopts_in_a_pytest_ini_turns_it_on(attempts, attnprep_home, run_pytest_here):
    (attempts / "pytest.ini").write_text("[pytest]\naddopts = --attnprep\n", encoding="utf-8")
    proc = run_pytest_here(attempts, attnprep_home, "-q")
    assert proc.returncode == 1 and "1 failed, 1 passed" in proc.stdout, proc.stdout
    failure = failure_of(proc)  # -q: the compact report
    assert "where it first goes wrong" in failure and "─ shapes" not in failure and not re.search(r"causality\s+✓", failure)


def test_off_unless_asked(attempts, attnprep_home, run_pytest_here):
    proc = run_pytest_here(attempts, attnprep_home, "-q")
    assert proc.returncode == 5, proc.stdout  # no tests collected
    assert history.runs() == []


def test_attnprep_own_corpus_is_collected_only_when_asked(attnprep_home):
    expected = sorted(p.relative_to(ROOT).as_posix() for p in CORPUS.rglob("*.py")
                      if header_id(p.read_bytes().split(b"\n", 1)[0].decode("utf-8", errors="replace")))
    assert len(expected) > 50
    # --noconftest: tests/conftest.py is this suite's set-up (fixtures; torch imported, ~1.6 s of
    # each run), with no collection hook: what is collected is the plugin's doing alone
    off = pytest_in(ROOT, attnprep_home, "--noconftest", "--collect-only", "-q", "tests/corpus")
    assert off.returncode == 5 and "no tests collected" in off.stdout, off.stdout
    on = pytest_in(ROOT, attnprep_home, "--noconftest", "--attnprep", "--collect-only", "-q", "tests/corpus")
    collected = sorted(line.split("::")[0] for line in on.stdout.splitlines() if "::" in line)
    assert collected == expected


def test_an_unknown_exercise_fails_its_item_with_one_line(tmp_path, attnprep_home, run_pytest_here):
    (tmp_path / "x.py").write_text("# attnprep: mhaa\n", encoding="utf-8")
    proc = run_pytest_here(tmp_path, attnprep_home, "--attnprep", "-q")
    assert proc.returncode == 1 and "1 failed" in proc.stdout
    assert "x.py: unknown exercise 'mhaa'; did you mean 'mha'" in proc.stdout
    assert "Traceback" not in proc.stdout


@pytest.mark.parametrize("line, expected", [
    ("# attnprep: mha\n", "mha"),
    ("\ufeff# attnprep:   gqa  extra\n", "gqa"),
    ("# attnprep:gqa", "gqa"),
    ("#   attnprep: gqa", None),
    ("# attnprep:", None),
    ("#attnprep: mha", None),
    ("import torch", None),
])
def test_the_header_line(line, expected):
    assert header_id(line) == expected


# --- the plugin owns its files: no attempt is imported into pytest's process ---------------------

# Every import of the attempt appends "pid module-name" to IMPORTS; conftest.py (pytest's own,
# imported into its process) writes that process's pid. Its header must not make it an attempt.
RECORDS_IMPORTS = '''
import os as _os
with open(_os.path.join(_os.path.dirname(_os.path.dirname(__file__)), "IMPORTS"), "a") as _f:
    _f.write(f"{_os.getpid()} {__name__}\\n")
'''
CONFTEST = "# attnprep: mha\nimport os\nopen(os.path.join(os.path.dirname(__file__), 'PYTEST_PID'), 'w').write(str(os.getpid()))\n"


@pytest.mark.slow
def test_no_attempt_is_imported_into_the_pytest_process_whatever_its_name(tmp_path, attnprep_home):
    """sub/test_mha.py and sub/mha_test.py match pytest's python_files; pytest imports a package's
    __init__.py (sub/__init__.py) to set up the tests inside it; a path named on the command line
    (attempts/plain.py) is collected by pytest's Python collector whatever its name; and
    --doctest-modules imports every module it collects."""
    good = "# attnprep: mha\n" + RECORDS_IMPORTS + (ROOT / "solutions" / "mha.py").read_text(encoding="utf-8")
    names = ["sub/__init__.py", "sub/test_mha.py", "sub/mha_test.py", "attempts/plain.py"]
    for name in names:
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(good, encoding="utf-8")
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    proc = pytest_in(tmp_path, attnprep_home, "--attnprep", "-v", "--doctest-modules", "sub", "attempts/plain.py")
    assert proc.returncode == 0 and "4 passed" in proc.stdout, proc.stdout + proc.stderr
    assert sorted(re.findall(r"^(\S+)::mha PASSED", proc.stdout, re.M)) == sorted(names)  # each graded, once
    pytest_pid = (tmp_path / "PYTEST_PID").read_text()
    imports = [line.split() for line in (tmp_path / "IMPORTS").read_text().splitlines()]
    assert imports and all(pid != pytest_pid for pid, _ in imports), imports  # imported by the grader's children only
    assert {module for _, module in imports} == {"attnprep_attempt"}
    assert len({pid for pid, _ in imports}) >= len(names)


# --- what a failure says -------------------------------------------------------------------------


def failure_of(proc: subprocess.CompletedProcess) -> str:
    """The failures' section, between pytest's titles (its own English, or said in Chinese)."""
    failures = re.split(r"= (?:FAILURES|未通过的详情) =", proc.stdout, maxsplit=1)[1]
    return re.split(r"\n=+ (?:short test summary info|简短汇总)", failures)[0]


@pytest.fixture
def missing_scale(graded):
    return graded(CORPUS / "mha" / "missing_scale.py")


def test_the_compact_text_and_the_whole_report(missing_scale, monkeypatch):
    from attnprep import texts
    from attnprep.pytest_plugin import failure_text

    monkeypatch.setenv("ATTNPREP_LANG", "en")
    texts.set_language(None)
    compact, full = failure_text(missing_scale, width=100), failure_text(missing_scale, width=100, full=True)
    for text in (compact, full):
        assert text.startswith("✗ missing_scale.py  wrong output — missing 1/sqrt(d) scale")
        assert text.count("scores = q @ k.transpose(-2, -1)  # (B, H, T, T)") == 1  # the divergence, said once
        assert all(line == line.rstrip() for line in text.splitlines())
    for panel in ("─ shapes", "─ attention", "─ output vs reference", "softmax row sums"):
        assert panel in full and panel not in compact


def test_the_failure_text_follows_attnprep_lang(missing_scale, monkeypatch):
    from attnprep import texts
    from attnprep.pytest_plugin import failure_text

    monkeypatch.setenv("ATTNPREP_LANG", "zh")
    texts.set_language(None)
    text = failure_text(missing_scale, width=100, full=True)
    assert "忘了除以 √d" in text and "输出错误" in text and "首个出错位置" in text  # the mistake's zh title, verdict, divergence
    for english in ("wrong output", "missing 1/sqrt(d) scale", "where it first goes wrong", "checks", "stuck?", "evidence"):
        assert english not in text


@pytest.mark.slow
def test_attnprep_lang_option_beats_the_environment(tmp_path, attnprep_home, run_pytest_here):
    (tmp_path / "mha_bad.py").write_text((CORPUS / "mha" / "missing_scale.py").read_text(encoding="utf-8"), encoding="utf-8")
    # one run without -q: the report, and pytest's own lines too (its titles, the collected count
    # and the closing counts, which -q leaves out)
    proc = run_pytest_here(tmp_path, attnprep_home, "--attnprep", "--attnprep-lang", "zh", env={"ATTNPREP_LANG": "en"})
    text = failure_of(proc)
    assert "忘了除以 √d" in text and "输出错误" in text
    assert "wrong output" not in text and "missing 1/sqrt(d) scale" not in text
    out = proc.stdout
    for english in ("test session starts", "collected", "FAILURES", "short test summary info", "failed", " in "):
        assert english not in out.replace("FAILED mha_bad.py", ""), english
    assert "收集到 1 项" in out and "未通过的详情" in out and "简短汇总" in out
    assert re.search(r"=+ 1 项未通过，用时 \d+\.\d+s =+$", out.rstrip().splitlines()[-1])


def test_pytest_words_in_chinese_and_what_is_not_pytest_s_left_alone():
    from attnprep import texts
    from attnprep.pytest_plugin import said_by_pytest

    texts.set_language("zh")
    try:
        assert said_by_pytest("collected 22 items") == "收集到 22 项"
        assert said_by_pytest("2 failed, 20 passed, 1 warning in 3.25s (0:00:03)") == "2 项未通过，20 项通过，1 条警告，用时 3.25s (0:00:03)"
        coloured = "\x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 1.20s\x1b[0m"
        assert said_by_pytest(coloured) == "\x1b[31m\x1b[1m1 项未通过\x1b[0m，\x1b[32m1 项通过\x1b[0m\x1b[31m，用时 1.20s\x1b[0m"
        assert said_by_pytest("no tests ran in 0.01s") == "没有运行任何测试，用时 0.01s"
        assert said_by_pytest("FAILURES") == "未通过的详情"
        for other in ("mha_bad.py::mha FAILED", "plugins: attnprep-0.1.0", "a plugin's line: 2 failed in 3 runs", "collected 2 items / 1 deselected", "x"):
            assert said_by_pytest(other) == other
    finally:
        texts.set_language(None)
