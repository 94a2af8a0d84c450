"""The CLI in the places a user's terminal puts it: a pipe closed early (`| head -1`), an unusable
data folder, narrow and wide consoles, a pager. Commands run as `python -m attnprep` in a fresh
interpreter where the terminal matters, through CliRunner where a Rich console of a given width is
enough."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"


def attnprep(args: list[str], cwd: Path, home: Path, *, stdout=subprocess.PIPE, env: dict | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attnprep", *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                          text=True, timeout=timeout,
                          env={**os.environ, "ATTNPREP_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "80", **(env or {})})


# --- a broken pipe -------------------------------------------------------------------------------


def closed_pipe() -> int:
    """The write end of a pipe whose reader has already gone: every write gets EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    return write_end


def run_into_closed_pipe(args: list[str], cwd: Path, home: Path) -> subprocess.CompletedProcess:
    write_end = closed_pipe()
    try:
        return attnprep(args, cwd, home, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.fixture
def workspace(tmp_path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(CORPUS / "gqa" / "ok_repeat_kv_llama.py", ws / "gqa.py")
    shutil.copy(CORPUS / "mha" / "missing_scale.py", ws / "mha.py")
    return ws


@pytest.mark.parametrize(("args", "code"), [
    (["list"], 0),
    (["list", "--json"], 0),
    (["--help"], 0),
    (["solution", "mla"], 0),
    (["solution", "mla", "--code"], 0),
    (["hint", "gqa"], 0),
    (["stats"], 0),
    (["compare", "--preset", "seed"], 0),
    (["check", "gqa"], 0),  # passes: still 0 although nobody read the report
    (["check", "mha"], 1),  # fails: still 1
    (["check", "gqa", "--json"], 0),
    (["new", "causal"], 0),
], ids=lambda v: " ".join(v) if isinstance(v, list) else str(v))
def test_a_closed_pipe_is_silent_and_keeps_the_exit_code(args, code, workspace, attnprep_home):
    proc = run_into_closed_pipe(args, workspace, attnprep_home)
    assert proc.stderr == "", proc.stderr
    assert proc.returncode == code


def test_head_dash_1_on_a_passing_check(workspace, attnprep_home):
    """The shell's own pipe: the first line arrives, the exit status is the check's."""
    script = f"{sys.executable} -m attnprep check gqa | head -1; echo \"status ${{PIPESTATUS[0]}}\""
    proc = subprocess.run(["bash", "-c", script], cwd=workspace, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ATTNPREP_HOME": str(attnprep_home), "NO_COLOR": "1"})
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("✓ gqa.py") and lines[-1] == "status 0", proc.stdout
    assert proc.stderr == ""


# --- a data folder that cannot be written ----------------------------------------------------------


def unwritable_homes(tmp_path: Path) -> dict[str, Path]:
    """Data folders that exist but where state.json cannot be written, for any user (root too)."""
    blocked = tmp_path / "blocked"
    (blocked / "state.json").mkdir(parents=True)  # a folder where the file should be
    homes = {"state.json is a folder": blocked}
    if os.geteuid() != 0:  # root writes through permission bits
        readonly = tmp_path / "readonly"
        readonly.mkdir()
        readonly.chmod(0o555)
        homes["read-only folder"] = readonly
    return homes


def test_hint_with_an_unwritable_data_folder_still_shows_the_hint(tmp_path):
    from attnprep import exercises

    mha = exercises.get("mha")
    for what, home in unwritable_homes(tmp_path).items():
        for _ in range(2):  # nothing is remembered: hint 1 both times
            proc = attnprep(["hint", "mha"], tmp_path, home)
            assert proc.returncode == 0, (what, proc.stderr)
            assert f"hint 1/{len(mha.hints)}" in proc.stdout and mha.hints[0].split()[0] in proc.stdout
            assert "next:" not in proc.stdout  # it would show hint 1 again
            (line,) = proc.stderr.splitlines()
            assert line.startswith("attnprep: cannot write state.json in the data folder ") and line.endswith(
                "; hint 1 is shown but not remembered"), (what, line)
        reset = attnprep(["hint", "mha", "--reset"], tmp_path, home)
        assert reset.returncode == 2 and reset.stdout == ""
        (line,) = reset.stderr.splitlines()
        assert line.startswith("error: cannot reset the hints of mha: cannot write state.json"), line


def test_hint_without_any_data_folder_still_shows_the_hint(tmp_path):
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    proc = attnprep(["hint", "gqa"], tmp_path, tmp_path / "a-file" / "home")
    assert proc.returncode == 0 and "hint 1/" in proc.stdout
    (line,) = proc.stderr.splitlines()
    assert line.startswith("attnprep: cannot use the data folder ") and "not remembered" in line


def test_the_history_says_plainly_that_the_folder_is_not_writable(tmp_path, monkeypatch):
    from attnprep import history
    from attnprep.grader.result import Result, Verdict

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    real_access = os.access
    monkeypatch.setattr(history.os, "access", lambda p, mode: False if Path(p) == home else real_access(p, mode))
    (home / "history.sqlite3").mkdir()  # SQLite: "unable to open database file"
    with pytest.raises(history.HistoryUnavailable, match=f"the data folder {home} is not writable"):
        history.connect()
    assert history.record(Result("mha", "mha.py", Verdict.PASSED), kind="check", started_at=0.0, duration_s=1.0) is None
