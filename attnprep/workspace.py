"""The user's workspace: the folder where attempts live as ``<id>.py``.

Library side of ``attnprep list`` and ``attnprep new``: the commands only render what these
functions return. Torch-free (``list`` and ``new`` must not import torch), prints nothing.

User data is safe: :func:`write_stub` never replaces a file it has not first kept as a backup,
and every write goes to a temporary file in the same folder that is then moved into place.
Its records are NamedTuples, cheap to define (see :mod:`attnprep.exercises`).
"""

from __future__ import annotations

import enum
import errno
import os
from pathlib import Path
from typing import NamedTuple

from attnprep import exercises, texts
from attnprep.exercises import Exercise


class WorkspaceError(Exception):
    """A user-facing problem with the workspace (file exists, folder not writable …); the message
    is one line meant for the user."""


class Status(str, enum.Enum):
    NOT_STARTED = "not started"  # no <id>.py in the folder
    BLANK = "blank"  # <id>.py is exactly the rendered stub
    IN_PROGRESS = "in progress"  # <id>.py was edited
    UNREADABLE = "unreadable"  # <id>.py exists but cannot be read (a folder, no permission …)


class ExerciseRow(NamedTuple):
    """One row of ``attnprep list``.

    History columns (passed?, best drill time) slot in as extra fields with defaults, filled by
    :func:`exercise_rows` from ``attnprep.history.exercise_summaries()``, plus a key in
    :meth:`to_json` and a column in the command's column list.
    """

    id: str
    title: str
    difficulty: str
    minutes: int
    status: Status
    path: Path

    def to_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "difficulty": self.difficulty,
            "minutes": self.minutes,
            "status": self.status.value,
        }


# One test of "is this the untouched stub?" for `list`, `check`, `stats` and `today`: the registry's,
# which the grader uses too (so `list` and `check` cannot disagree).
blank_stub = exercises.blank_stub
is_blank = exercises.is_blank


def status_of(exercise: Exercise | exercises.Listing, folder: Path) -> Status:
    """Whether ``folder/<id>.py`` is missing, the untouched stub, or edited (the full exercise is
    loaded only when the file exists)."""
    path = Path(folder) / exercise.filename
    if not path.exists():
        return Status.NOT_STARTED
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return Status.IN_PROGRESS  # not the stub, whatever it is
    except OSError:
        return Status.UNREADABLE
    return Status.BLANK if exercises.is_blank(exercise.id, source) else Status.IN_PROGRESS


def exercise_rows(folder: str | Path) -> list[ExerciseRow]:
    """Every exercise in registry (teaching) order with its status in ``folder``."""
    folder = Path(folder)
    return [
        ExerciseRow(
            id=ex.id,
            title=ex.title,
            difficulty=ex.difficulty,
            minutes=ex.minutes,
            status=status_of(ex, folder),
            path=folder / ex.filename,
        )
        for ex in exercises.listing().values()
    ]


# --- writing stubs ---------------------------------------------------------------------------


class Written(NamedTuple):
    """What :func:`write_stub` did: the file written and, with ``force``, where the old one went."""

    path: Path
    backup: Path | None = None


def _describe(exc: OSError) -> str:
    return exc.strerror.lower() if exc.strerror else type(exc).__name__


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_temp(folder: Path, name: str, text: str) -> Path:
    """``text`` in a new temporary file next to its destination (same file system, so it can be
    moved into place atomically)."""
    import tempfile  # here: `list` only writes when its stub cache misses

    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a user's file gets the usual mode
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def _link_no_clobber(src: Path, dst: Path) -> bool:
    """Give ``src`` the second name ``dst`` unless ``dst`` exists (atomic check-and-create).
    Returns False if ``dst`` exists. Falls back to copying where hard links are not supported."""
    try:
        os.link(src, dst)
        return True
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK, errno.ENOSYS):
            raise
    # No hard links here (some network or FAT file systems): exclusive create, then copy.
    try:
        with open(dst, "xb") as out:
            out.write(src.read_bytes())
            out.flush()
            os.fsync(out.fileno())
        return True
    except FileExistsError:
        return False


def backup_path(path: Path) -> Path:
    """The first free name among ``<file>.bak``, ``<file>.bak.1``, ``<file>.bak.2`` …"""
    candidate = path.with_name(path.name + ".bak")
    n = 0
    while candidate.exists() or candidate.is_symlink():
        n += 1
        candidate = path.with_name(f"{path.name}.bak.{n}")
    return candidate


def _keep_backup(path: Path) -> Path:
    """Keep the current content of ``path`` under the first free backup name; never overwrites."""
    while True:
        candidate = backup_path(path)
        if _link_no_clobber(path, candidate):
            return candidate
        # someone took that name between the look and the link: try the next one


def cannot_write(exc: OSError, folder: Path) -> str:
    """The one wording of a file attnprep could not write into ``folder`` (`new`, `drill`,
    `interview`): the folder could not be created, or nothing can be written in it."""
    where = Path(exc.filename) if exc.filename else folder
    if where.suffix == ".py" or where.name.startswith("."):  # the file (or its temporary): say its folder
        where = where.parent
    if isinstance(exc, FileExistsError) and not where.is_dir():
        return texts.t("workspace.folder_is_file", folder=where)
    key = "workspace.cannot_create" if not where.is_dir() else "workspace.cannot_write_in"
    return texts.t(key, folder=where, reason=_describe(exc))


def write_stub(exercise: Exercise, folder: str | Path, *, force: bool = False) -> Written:
    """Write the blank stub of ``exercise`` to ``folder/<id>.py`` (``folder`` is created).

    Without ``force`` an existing file is left untouched and :class:`WorkspaceError` is raised.
    With ``force`` the old file is first kept as ``<id>.py.bak`` (or ``.bak.1``, ``.bak.2`` …,
    never over an existing backup), then replaced atomically.
    """
    folder = Path(folder)
    path = folder / exercise.filename
    text = exercises.render_stub(exercise)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise WorkspaceError(texts.t("workspace.folder_is_file", folder=folder)) from None
    except OSError as exc:
        raise WorkspaceError(texts.t("workspace.cannot_create", folder=folder, reason=_describe(exc))) from None
    if not folder.is_dir():
        raise WorkspaceError(texts.t("workspace.not_a_folder", folder=folder))
    if path.is_dir():
        raise WorkspaceError(texts.t("workspace.path_is_folder", path=path))
    if path.exists() and not force:
        raise WorkspaceError(texts.t("workspace.exists_force", path=path))

    try:
        tmp = _write_temp(folder, exercise.filename, text)
    except OSError as exc:
        raise WorkspaceError(texts.t("workspace.cannot_write_in", folder=folder, reason=_describe(exc))) from None
    try:
        backup = None
        if path.exists() or path.is_symlink():
            if not force:  # appeared since the check above
                raise WorkspaceError(texts.t("workspace.exists", path=path))
            backup = _keep_backup(path)
            os.replace(tmp, path)
        elif not _link_no_clobber(tmp, path):  # created by someone else meanwhile: leave it alone
            raise WorkspaceError(texts.t("workspace.exists", path=path))
    except OSError as exc:
        raise WorkspaceError(texts.t("workspace.cannot_write", path=path, reason=_describe(exc))) from None
    finally:
        tmp.unlink(missing_ok=True)
    return Written(path=path, backup=backup)
