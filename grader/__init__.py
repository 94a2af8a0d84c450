"""The grading engine. It prints nothing; it returns :class:`~attnprep.grader.result.Result` values.

Public API (stable for the CLI, the drill and the tests)::

    from attnprep.grader import grade, warm_up
    result = grade(path, exercise=None, seed=0, device="cpu", timeout=DEFAULT_TIMEOUT, protect=None,
                   divergence=True)

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
    protect: tuple[str | Path, ...] | None = None,
    divergence: bool = True,
) -> Result:
    """Grade one attempt file. Never raises for anything the attempt does; an unknown id raises
    :class:`~attnprep.exercises.UnknownExercise`. ``protect``: folders of the caller the attempt,
    and any process it starts, may not write; by default (None) the user's data folder
    (:func:`data_folder`, where the history is), ``()`` for none. ``divergence=False``:
    the result says no line (its ``divergence`` is None) and no trace child is forked, which a
    caller that reads only verdicts and mistakes saves; the verdict, the checks and the mistakes
    named are the same."""
    from attnprep.grader import engine

    if protect is None:
        protect = (data_folder(),)
    path = Path(path)
    if not hasattr(exercise, "contract"):
        source = path.read_bytes()[:2000].decode("utf-8", errors="replace")
        exercise = engine.exercise_of(path, source, exercise)
    return engine.grade(path, exercise, seed=seed, device=device, timeout=timeout,
                        protect=tuple(str(p) for p in protect), divergence=divergence)


def data_folder() -> Path:
    """The user's data folder, which ``grade`` protects by default: ``$ATTNPREP_HOME`` if set, else
    the platform's. The folder ``attnprep.paths.data_path()`` names (tests/test_sandbox.py holds the
    two equal), said again here because the grader does not import the shell (tests/test_layers.py)."""
    import os

    override = os.environ.get("ATTNPREP_HOME")
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("attnprep", appauthor=False))


def warm_up() -> None:
    """Import torch and the engine now, so the next ``grade`` costs only the fork and the checks."""
    from attnprep.grader import engine

    engine.warm_up()
