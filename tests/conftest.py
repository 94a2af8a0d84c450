"""Shared fixtures: every test gets its own user data folder ($ATTNPREP_HOME); ``graded`` grades a
file once per session."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pytest

_GRADES: dict[tuple, object] = {}
_HOME_NUMBERS = itertools.count()


@pytest.fixture(scope="session")
def _homes(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("attnprep-homes")


@pytest.fixture(autouse=True)
def attnprep_home(_homes, monkeypatch) -> Path:
    """A data folder of the test's own, not created yet. (Not under ``tmp_path``: making a
    ``tmp_path`` for each of the thousands of tests that never ask for one took seconds.)"""
    home = _homes / f"home-{next(_HOME_NUMBERS)}"
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    return home


def grade_key(path: str | Path, exercise: str | None, seed: int) -> tuple:
    """What a grade depends on: the file (its path, which the result names, and its bytes), the
    exercise id and the seed. Not the language: a result holds text keys, rendered at the edge."""
    path = Path(path).resolve()
    return str(path), hashlib.sha256(path.read_bytes()).hexdigest(), exercise, seed


@pytest.fixture(scope="session")
def graded():
    """``graded(path, exercise=None, seed=0)``: ``grade(path, exercise, seed=seed)`` with the
    default device and timeout, computed once per session for the same file, exercise and seed
    (the corpus files are graded by several test modules). The result is shared: read it, do not
    change it. A test that watches the grading itself (monkeypatches the engine, times it, passes
    another timeout) calls ``grade`` directly."""
    from attnprep.grader import grade

    def graded_once(path: str | Path, exercise: str | None = None, *, seed: int = 0):
        if exercise is not None and not isinstance(exercise, str):
            raise TypeError("graded() takes an exercise id; grade an Exercise object with grade()")
        key = grade_key(path, exercise, seed)
        if key not in _GRADES:
            _GRADES[key] = grade(path, exercise, seed=seed)
        return _GRADES[key]

    return graded_once
