"""The grading engine. It prints nothing; it returns :class:`~attnprep.grader.result.Result` values.

Public API (stable for the CLI, the drill and the tests)::

    from attnprep.grader import grade, warm_up
    result = grade(path, exercise_id=None, seed=0, device="cpu", timeout=DEFAULT_TIMEOUT)

``grade`` imports torch on first use (in this process, single-threaded so that it can fork),
runs the attempt in a forked child with a time and memory limit, computes the reference here,
and compares. ``warm_up()`` does the imports ahead of time (the drill calls it once).
"""

from __future__ import annotations

from pathlib import Path

from attnprep.grader.result import Result, Verdict  # noqa: F401

DEFAULT_TIMEOUT = 10.0


def grade(
    path: str | Path,
    exercise_id: str | None = None,
    *,
    seed: int = 0,
    device: str = "cpu",
    timeout: float = DEFAULT_TIMEOUT,
) -> Result:
    """Grade one attempt file. ``exercise_id`` defaults to the file's ``# attnprep: <id>`` line,
    then to its file name. Never raises for anything the attempt does."""
    from attnprep.grader.engine import grade as _grade

    return _grade(Path(path), exercise_id, seed=seed, device=device, timeout=timeout)


def warm_up() -> None:
    """Import torch and the engine now, so the next ``grade`` costs only the fork and the checks."""
    from attnprep.grader import engine

    engine.warm_up()
