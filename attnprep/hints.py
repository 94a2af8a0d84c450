"""Progressive hints: each ``attnprep hint ID`` shows the next one.

How many hints of each exercise the user has seen is kept in the user data folder
(:func:`attnprep.paths.state_file`, JSON ``{"hints": {"<id>": <level>}}``), written atomically so
a kill mid-write leaves the old state. Other top-level keys of that file are preserved. A data
folder that cannot be created or written does not stop a hint from being shown: the step says
why its progress was not remembered (:attr:`HintStep.not_saved`). Torch-free, prints nothing.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from attnprep import paths, texts
from attnprep.exercises import Exercise

_KEY = "hints"


@dataclass(frozen=True)
class HintStep:
    """What to show for one ``hint`` call.

    ``number`` is the 1-based hint just revealed (``"hint 2/4"``); when every hint was already
    shown, ``exhausted`` is true, ``number`` is ``total`` and ``revealed`` holds them all.
    """

    exercise_id: str
    number: int
    total: int
    text: str
    exhausted: bool
    revealed: tuple[str, ...]  # hints 1..number
    not_saved: str = ""  # why the progress could not be remembered, one line (empty: it was, or nothing changed)

    @property
    def label(self) -> str:
        return f"hint {self.number}/{self.total}"


# --- state file ------------------------------------------------------------------------------


def load_state(path: Path | None = None) -> dict:
    """The state document; an absent or damaged file reads as empty (it only holds hint levels)."""
    path = path or paths.state_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class StateNotSaved(OSError):
    """The state file could not be written; ``str()`` is one line for the user."""


def save_state(state: dict, path: Path | None = None) -> None:
    """Write the state document atomically: a temporary file in the same folder, then os.replace.
    :class:`StateNotSaved` (or :class:`~attnprep.paths.DataFolderError`) when it cannot be."""
    path = path or paths.state_file()
    try:
        fd, tmp = tempfile.mkstemp(prefix=".state.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise StateNotSaved(_cannot_write(path, exc)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(state, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise StateNotSaved(_cannot_write(path, exc)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _cannot_write(path: Path, exc: OSError) -> str:
    reason = exc.strerror.lower() if exc.strerror else type(exc).__name__
    return texts.t("sys.cannot_write", name=path.name, folder=path.parent, reason=reason)


def level(exercise_id: str) -> int:
    """How many hints of this exercise the user has seen (0 = none)."""
    levels = load_state().get(_KEY, {})
    value = levels.get(exercise_id, 0) if isinstance(levels, dict) else 0
    return value if isinstance(value, int) and value >= 0 else 0


def _set_level(exercise_id: str, value: int | None) -> None:
    state = load_state()
    levels = state.get(_KEY)
    if not isinstance(levels, dict):
        levels = {}
    if value is None:
        levels.pop(exercise_id, None)
    else:
        levels[exercise_id] = value
    state[_KEY] = levels
    save_state(state)


# --- the progression -------------------------------------------------------------------------


def next_hint(exercise: Exercise) -> HintStep:
    """Reveal the next hint and remember it. After the last one, every call returns all of them
    with ``exhausted=True`` (and the level stays at the end)."""
    total = len(exercise.hints)
    if total == 0:
        return HintStep(exercise.id, 0, 0, "", True, ())
    problem = ""
    try:
        seen = min(level(exercise.id), total)
    except paths.DataFolderError as exc:  # no data folder: nothing was seen, nothing will be kept
        seen, problem = 0, str(exc)
    if seen >= total:
        return HintStep(exercise.id, total, total, exercise.hints[-1], True, tuple(exercise.hints))
    number = seen + 1
    if not problem:
        try:
            _set_level(exercise.id, number)
        except OSError as exc:  # StateNotSaved, DataFolderError
            problem = str(exc)
    return HintStep(exercise.id, number, total, exercise.hints[number - 1], False, tuple(exercise.hints[:number]),
                    not_saved=problem)


def reset(exercise_id: str) -> None:
    """Start over: the next call shows hint 1 again (:class:`StateNotSaved` or
    :class:`~attnprep.paths.DataFolderError` when that cannot be remembered)."""
    _set_level(exercise_id, None)
