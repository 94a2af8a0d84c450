"""Where attnprep keeps the user's data: ``$ATTNPREP_HOME`` if set, else the platform's data folder.

Read at call time, never at import, so tests (and users) can point it elsewhere per call.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


class DataFolderError(OSError):
    """The data folder cannot be created or is not a folder; the message is one line for the user."""


def data_path() -> Path:
    """Where the user data folder is, whether or not it exists yet."""
    override = os.environ.get("ATTNPREP_HOME")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("attnprep", appauthor=False))


def data_home() -> Path:
    """The user data folder, created on first use (:class:`DataFolderError` if it cannot be)."""
    home = data_path()
    override = os.environ.get("ATTNPREP_HOME")
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


def cached(name: str, sources: Iterable[Path], compute: Callable[[], Any]) -> Any:
    """``compute()``, kept as JSON in the data folder's cache under a key of the path, size and
    modification time of every file it is computed from (as Python keys its bytecode): for what
    every command reads first (its texts, the exercise listing), json's C parser is several times
    faster than parsing the TOML again. Only an accelerator: any problem with the copy (no data
    folder yet, a read-only one, a stale or broken copy) means computing afresh; it never creates
    the data folder itself (whose errors are texts, read through here)."""
    import json

    key = " ".join(f"{p}:{st.st_size}:{st.st_mtime_ns}" for p, st in ((p, p.stat()) for p in sources))
    copy = None
    try:
        home = data_path()
        if home.is_dir():
            copy = home / "cache" / f"{name}.json"
            head, _, body = copy.read_text(encoding="utf-8").partition("\n")
            if head == key:
                return json.loads(body)
    except (OSError, ValueError):
        pass
    value = compute()
    if copy is not None:
        tmp = copy.with_name(f".{copy.name}.{os.getpid()}.tmp")
        try:
            copy.parent.mkdir(exist_ok=True)
            tmp.write_text(f"{key}\n{json.dumps(value, ensure_ascii=False)}", encoding="utf-8")
            os.replace(tmp, copy)
        except (OSError, TypeError, ValueError):
            with contextlib.suppress(OSError):
                tmp.unlink()
    return value
