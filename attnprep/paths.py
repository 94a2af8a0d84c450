"""Where attnprep keeps the user's data: ``$ATTNPREP_HOME`` if set, else the platform's data folder.

Read at call time, never at import, so tests (and users) can point it elsewhere per call.
"""

from __future__ import annotations

import os
from pathlib import Path


def data_home() -> Path:
    """The user data folder, created on first use."""
    override = os.environ.get("ATTNPREP_HOME")
    if override:
        home = Path(override).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("attnprep", appauthor=False))
    home.mkdir(parents=True, exist_ok=True)
    return home


def history_db() -> Path:
    return data_home() / "history.sqlite3"


def state_file() -> Path:
    """Small JSON state (hint levels per exercise)."""
    return data_home() / "state.json"
