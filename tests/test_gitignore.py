"""The checkout stays clean: what the README's set-up (``python -m venv .venv``, ``pip install -e``),
the tests and Jupyter create is ignored by git, and nothing the repository tracks is."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# one file of each thing a set-up, a test run or a notebook leaves behind
CREATED = [
    ".venv/pyvenv.cfg",
    ".venv/bin/python",
    "attnprep.egg-info/PKG-INFO",
    "attnprep/__pycache__/cli.cpython-311.pyc",
    "tests/__pycache__/conftest.cpython-311-pytest-8.3.0.pyc",
    ".pytest_cache/v/cache/lastfailed",
    ".ipynb_checkpoints/practice-checkpoint.ipynb",
    "notebooks/.ipynb_checkpoints/mha-checkpoint.ipynb",
    "build/lib/attnprep/__init__.py",
    "dist/attnprep-0.1.0-py3-none-any.whl",
]


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


@pytest.fixture(scope="module", autouse=True)
def in_a_checkout():
    if shutil.which("git") is None or git("rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        pytest.skip("not a git checkout")


@pytest.mark.parametrize("path", CREATED)
def test_what_the_set_up_creates_is_ignored(path):
    # --no-index: the rules alone decide, whether or not the file exists or is tracked
    assert git("check-ignore", "--no-index", "-q", path).returncode == 0, f"{path} would show as untracked"


@pytest.mark.parametrize("path", ["attnprep/notebook.py", "tests/test_notebook.py", "README.md", ".ci/run", "pyproject.toml"])
def test_the_project_is_not_ignored(path):
    assert git("check-ignore", "--no-index", "-q", path).returncode == 1


def test_nothing_tracked_is_ignored():
    listed = git("ls-files", "--cached", "--ignored", "--exclude-standard")
    assert listed.returncode == 0 and listed.stdout == ""
