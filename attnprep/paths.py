"""Where attnprep keeps the user's data: ``$ATTNPREP_HOME`` if set, else the platform's data folder.

Read at call time, never at import, so tests (and users) can point it elsewhere per call.
"""

from __future__ import annotations

import os
from pathlib import Path


class DataFolderError(OSError):
    """The data folder cannot be created or is not a folder; the message is one line for the user."""


def data_home() -> Path:
    """The user data folder, created on first use (:class:`DataFolderError` if it cannot be)."""
    override = os.environ.get("ATTNPREP_HOME")
    if override:
        home = Path(override).expanduser()
    else:
        import platformdirs

        home = Path(platformdirs.user_data_dir("attnprep", appauthor=False))
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from attnprep import texts

        where = texts.t("sys.data_folder_env", home=home) if override else str(home)
        reason = exc.strerror.lower() if exc.strerror else type(exc).__name__
        raise DataFolderError(texts.t("sys.data_folder", where=where, reason=reason)) from None
    return home


def history_db() -> Path:
    return data_home() / "history.sqlite3"


def state_file() -> Path:
    """Small JSON state (hint levels per exercise)."""
    return data_home() / "state.json"
