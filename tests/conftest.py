"""Shared fixtures: every test gets its own user data folder ($ATTNPREP_HOME)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def attnprep_home(tmp_path, monkeypatch):
    home = tmp_path / "attnprep-home"
    monkeypatch.setenv("ATTNPREP_HOME", str(home))
    return home
