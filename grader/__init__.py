"""The grading engine. It prints nothing; it returns :class:`~attnprep.grader.result.Result` values.

Public API (stable for the CLI, the drill and the tests)::

    from attnprep.grader import grade, warm_up
    result = grade(path, exercise=None, seed=0, device="cpu", timeout=DEFAULT_TIMEOUT, protect=())

``exercise`` is a resolved :class:`~attnprep.exercises.Exercise` (what the CLI passes), an id, or
None for the file's ``# attnprep: <id>`` line, then its file name. ``grade`` imports torch on first
use (in this process, single-threaded so that it can fork), runs the attempt in a forked child with
a time and memory limit, computes the reference here, and compares. ``warm_up()`` does the imports
ahead of time (the drill calls it once).
"""

from __future__ import annotations

from pathlib import Path

from attnprep.grader.engine import DEFAULT_TIMEOUT  # noqa: F401
from attnprep.grader.result import Result, Verdict  # noqa: F401


def grade(
    path: str | Path,
    exercise=None,
    *,
    seed: int = 0,
    device: str = "cpu",
    timeout: float = DEFAULT_TIMEOUT,
    protect: tuple[str | Path, ...] = (),
) -> Result:
    """Grade one attempt file. Never raises for anything the attempt does; an unknown id raises
    :class:`~attnprep.exercises.UnknownExercise`. ``protect``: folders of the caller the attempt,
    and any process it starts, may not write (the shell passes the user's data folder)."""
    from attnprep.grader import engine

    path = Path(path)
    if not hasattr(exercise, "contract"):
        source = path.read_bytes()[:2000].decode("utf-8", errors="replace")
        exercise = engine.exercise_of(path, source, exercise)
    return engine.grade(path, exercise, seed=seed, device=device, timeout=timeout,
                        protect=tuple(str(p) for p in protect))


def warm_up() -> None:
    """Import torch and the engine now, so the next ``grade`` costs only the fork and the checks."""
    from attnprep.grader import engine

    engine.warm_up()
