"""Hostile attempts (the grader's promises): each ends in its verdict, the grader never hangs, crashes or passes
what it should not. tests/corpus/hostile/EXPECT.toml says what each file must get."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from attnprep import texts
from attnprep.grader import grade, sandbox

HOSTILE = Path(__file__).parent / "corpus" / "hostile"
EXPECT = tomllib.loads((HOSTILE / "EXPECT.toml").read_text(encoding="utf-8")) if (HOSTILE / "EXPECT.toml").exists() else {}
TIMEOUT = 3.0


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_hostile_attempt(name):
    spec = EXPECT[name]
    if spec.get("needs") == "landlock" and not sandbox.HIDES_FILES:
        pytest.skip("no Landlock in this kernel: the solutions stay readable by a program the attempt runs")
    timeout = spec.get("timeout", TIMEOUT)
    start = time.monotonic()
    result = grade(HOSTILE / name, spec.get("exercise", "mha"), timeout=timeout)
    elapsed = time.monotonic() - start
    assert not result.internal, result.error
    assert result.verdict.value == spec["expect"], (result.verdict, result.checks, result.error)
    # (a runaway attempt the machine starves of CPU is given up to STARVED_WALL times its time)
    assert elapsed < timeout * sandbox.STARVED_WALL + 5, "the grader must end a runaway attempt within its time limit"
    if spec["expect"] != "passed":
        assert not result.passed
    if spec.get("detail_contains"):
        text = " ".join([texts.render(c.message) for c in result.checks] + ([texts.render(result.error.message)] if result.error else []))
        assert spec["detail_contains"] in text


def test_every_hostile_file_has_an_expectation():
    files = {p.name for p in HOSTILE.iterdir() if p.is_file() and p.name != "EXPECT.toml" and not p.name.startswith(".")}
    assert files, "no hostile corpus"
    assert files == set(EXPECT)


def test_json_stays_clean_when_the_attempt_prints(tmp_path):
    """`check --json` in a real process: stdout is one JSON document whatever the attempt prints."""
    target = HOSTILE / "prints_megabytes.py"
    env = dict(os.environ, ATTNPREP_HOME=str(tmp_path / "home"))
    proc = subprocess.run([sys.executable, "-m", "attnprep", "check", str(target), "-e", "mha", "--json"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    doc = json.loads(proc.stdout)
    assert doc["results"][0]["verdict"] == "passed"
    assert proc.returncode == 0


def test_the_reference_is_seen_from_a_loop_that_called_torch_cleanly_before():
    """The observer walks the stack once per calling frame (observe.Observer._from_solutions): a
    loop's body that called torch cleanly, then a function of the solutions folder called from that
    same body, is still seen, also when nothing is recorded for the report (``record=False``)."""
    import torch

    from attnprep.grader.observe import SOLUTIONS_DIR, Observer

    namespace: dict = {}
    exec(compile("import torch\ndef attention(x):\n    return torch.softmax(x, -1)\n",
                 os.path.join(SOLUTIONS_DIR, "pretend.py"), "exec"), namespace)
    for record in (True, False):
        observer = Observer(3, 3, record=record)
        x = torch.randn(3, 3)
        with observer:
            for i in range(4):
                y = torch.exp(x)  # the same frame calls torch again and again
                if i == 2:
                    y = namespace["attention"](y)
        assert "attnprep's reference solution" in observer.obs.builtins, record
        clean = Observer(3, 3, record=record)
        with clean:
            for _ in range(4):
                torch.exp(x)
        assert not clean.obs.builtins


def test_reference_modules_the_grading_process_imported_are_gone_in_the_child():
    """The grading process names its reference modules before it forks (grader/child.py,
    reference_modules); the child drops them: an attempt that looks for them by name finds none."""
    import importlib

    importlib.import_module("attnprep.solutions.mha")
    assert "attnprep.solutions.mha" in sys.modules
    result = grade(HOSTILE / "looks_for_the_reference.py", "mha", timeout=TIMEOUT)
    assert result.verdict.value == "error"
    assert "reference modules here: []" in texts.render(result.error.message)
    assert "attnprep.solutions.mha" in sys.modules  # the grading process keeps its own


def test_a_reference_module_whose_file_was_removed_is_still_named(monkeypatch):
    """reference_modules reads the solutions folder's names (kept per the folder's mtime), and what
    was imported from a file removed since stays imported: it is named too, so the child drops it
    (a test that adds a solution beside the others and removes it, then a hostile attempt, in one
    worker: the attempt found the module)."""
    import importlib

    from attnprep import exercises
    from attnprep.grader import child

    name = "zz_removed_reference"
    path = exercises.SOLUTIONS_DIR / f"{name}.py"
    try:
        path.write_text("X = 1\n", encoding="utf-8")
        importlib.invalidate_caches()
        importlib.import_module(f"attnprep.solutions.{name}")
        assert f"attnprep.solutions.{name}" in child.reference_modules()
        path.unlink()
        assert f"attnprep.solutions.{name}" in child.reference_modules()
    finally:
        path.unlink(missing_ok=True)
        sys.modules.pop(f"attnprep.solutions.{name}", None)
        package = sys.modules.get("attnprep.solutions")
        if package is not None and hasattr(package, name):
            delattr(package, name)
