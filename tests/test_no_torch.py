"""`--help` (`-h`, bare `attnprep`), `--version`, `list`, `new`, `hint`, `solution` and `today` never
import torch (the CLI contract).

Each command runs in a fresh interpreter whose ``sys.meta_path`` starts with a finder that
records every attempt to import ``torch`` (or a submodule) and makes it fail. Recording, not only
failing, catches code that would swallow the ImportError (``try: import torch except ImportError``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attnprep import exercises

SCRIPT = r"""
import json, sys

preloaded = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
attempts = []

class BlockTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            attempts.append(name)
            raise ImportError(f"torch is blocked in this test (import of {name!r})")
        return None

sys.meta_path.insert(0, BlockTorch())
sys.argv = ["attnprep", *json.loads(sys.argv[1])]
code = 0
try:
    from attnprep.cli import main
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
finally:
    sys.stdout.flush()
    sys.stderr.write("\nNO_TORCH_PROBE " + json.dumps({"preloaded": preloaded, "attempts": attempts}) + "\n")
sys.exit(code)
"""


def run_blocked(args: list[str], cwd: Path) -> tuple[int, str, str, dict]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, json.dumps(args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "80", "NO_COLOR": "1"},
    )
    stderr, _, probe = proc.stderr.rpartition("NO_TORCH_PROBE ")
    assert probe, f"the probe did not report; stderr:\n{proc.stderr}"
    return proc.returncode, proc.stdout, stderr, json.loads(probe.splitlines()[0])


MHA = exercises.get("mha")


def _check_help(out: str, ws: Path) -> None:
    for command in ("list", "new", "check", "solution", "hint"):
        assert command in out


def _check_list(out: str, ws: Path) -> None:
    assert "Multi-head attention" in out and "not started" in out


def _check_list_json(out: str, ws: Path) -> None:
    data = json.loads(out)
    assert [d["id"] for d in data] == list(exercises.registry())
    assert {"id", "title", "difficulty", "minutes", "status"} <= set(data[0])


def _check_new(out: str, ws: Path) -> None:
    written = ws / "attempts" / "mha.py"
    assert written.read_text(encoding="utf-8") == exercises.render_stub(MHA)
    assert "mha.py" in out


def _check_hint(out: str, ws: Path) -> None:
    assert f"hint 1/{len(MHA.hints)}" in out


def _check_solution(out: str, ws: Path) -> None:
    assert "class MultiHeadAttention" in out and "Key points" in out


def _check_today(out: str, ws: Path) -> None:
    first = next(iter(exercises.listing()))
    assert first in out and "not practised yet" in out


def _check_today_json(out: str, ws: Path) -> None:
    data = json.loads(out)
    assert data["items"][0] == {"exercise": next(iter(exercises.listing())), "why": "new", "reason": "not practised yet",
                                "due": None, "interval_days": None, "cards": []}


def _check_interview_help(out: str, ws: Path) -> None:
    assert "--submit" in out and "--answers" in out


def _check_solution_code(out: str, ws: Path) -> None:
    assert out == MHA.solution_path.read_text(encoding="utf-8")


def _check_debug_written(out: str, ws: Path) -> None:
    written = list((ws / "debug").glob("mha-*.py"))
    assert len(written) == 1 and written[0].read_text(encoding="utf-8").startswith("# attnprep: mha\n")


def _check_version(out: str, ws: Path) -> None:
    assert out.startswith("attnprep ")


CASES = {
    "--help": (["--help"], _check_help),
    "bare": ([], _check_help),
    "-h": (["-h"], _check_help),
    "--version": (["--version"], _check_version),
    "list": (["list"], _check_list),
    "list --json": (["list", "--json"], _check_list_json),
    "new": (["new", "mha", "--dir", "attempts"], _check_new),
    "hint": (["hint", "mha"], _check_hint),
    "solution": (["solution", "mha"], _check_solution),
    "solution --code": (["solution", "mha", "--code"], _check_solution_code),
    "today": (["today"], _check_today),
    "today --json": (["today", "--json"], _check_today_json),
    "interview --help": (["interview", "--help"], _check_interview_help),
    "debug --no-clock": (["debug", "mha", "--seed", "1", "--no-clock"], _check_debug_written),
}


@pytest.mark.parametrize("case", list(CASES))
def test_command_runs_without_torch(case, tmp_path):
    args, check = CASES[case]
    ws = tmp_path / "ws"
    ws.mkdir()
    code, out, err, probe = run_blocked(args, ws)
    assert probe["preloaded"] == [], "torch was imported before the test could block it (sitecustomize?)"
    assert probe["attempts"] == [], f"`attnprep {' '.join(args)}` tried to import {probe['attempts']}; stderr:\n{err}"
    assert code == 0, f"exit {code}; stderr:\n{err}"
    check(out, ws)


def test_the_probe_catches_a_torch_import(tmp_path):
    """The finder really blocks and records: an import of torch inside the same harness is seen."""
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.replace("from attnprep.cli import main", "import torch  # noqa"), "[]"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    probe = json.loads(proc.stderr.rpartition("NO_TORCH_PROBE ")[2].splitlines()[0])
    assert probe["attempts"] == ["torch"]
    assert proc.returncode != 0
