"""The one place `interview` and the pytest plugin grade an attempt, and how an attempt file names
its exercise for the plugin.

Everything else of theirs reads a :class:`~attnprep.grader.result.Result` through ``.passed``,
``.internal`` and the diagnoses' ids only, so a change of the grader's entry point (an
``Exercise`` instead of an id) or of its verdict values is a change of :func:`grade_attempt` alone.
Torch is imported by the grader when :func:`grade_attempt` first runs, never at import.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnprep.exercises import Exercise
    from attnprep.grader.result import Result

HEADER = "# attnprep:"


def grade_attempt(path: Path, exercise: Exercise, *, record: bool) -> Result:
    """Grade one file as ``exercise`` (seed 0, on the CPU, the check's time limit); with
    ``record`` the run goes to the history as a `check`."""
    from attnprep.commands.grading import DEFAULT_TIMEOUT, run_checks

    (result,) = run_checks([(Path(path), exercise)], seed=0, device="cpu", timeout=DEFAULT_TIMEOUT, record=record)
    return result


def header_id(first_line: str) -> str | None:
    """The exercise id of an attempt whose first line is ``# attnprep: <id>``, else None."""
    line = first_line.lstrip("\ufeff").strip()
    if not line.startswith(HEADER):
        return None
    rest = line[len(HEADER):].split()
    return rest[0] if rest else None
