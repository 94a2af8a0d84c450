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
