"""pytest plugin (SPEC §10): ``pytest --attnprep`` grades a folder of attempts, one test per file.

Registered through the ``pytest11`` entry point, so every pytest that runs where attnprep is
installed loads this module: it must stay cheap (no torch, no attnprep grader at import) and do
nothing unless asked. With ``--attnprep`` (on the command line, or ``addopts = --attnprep`` in a
``pytest.ini``), every ``.py`` file whose first line is ``# attnprep: <id>`` becomes one test
item, graded by the same grader as ``attnprep check``; the run goes to the history like a
``check``. A failure shows the report's verdict, the named mistake, the divergence (when the
grader found one) and the failed checks. Without the option nothing is collected, so attnprep's
own test corpus is never graded by accident.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

OPTION = "--attnprep"
WIDTH = 100

# Every word the plugin shows, in one place (str.format templates).
# Every word this module shows is a texts key of the [pytest_plugin] table (attnprep/texts/<lang>.toml).


def _w(key: str, **values) -> str:
    from attnprep import texts

    return texts.t("pytest_plugin." + key, **values)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("attnprep")
    group.addoption(OPTION, action="store_true", default=False, dest="attnprep", help=_w("help"))


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.readline(300).decode("utf-8", errors="replace")
    except OSError:
        return ""


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix != ".py" or not parent.config.getoption("attnprep"):
        return None
    from attnprep.attempts import header_id

    exercise_id = header_id(_first_line(file_path))
    if exercise_id is None:
        return None
    return AttemptFile.from_parent(parent, path=file_path, exercise_id=exercise_id)


class AttemptFile(pytest.File):
    """An attempt file: one item, named after the exercise it is graded as."""

    def __init__(self, *, exercise_id: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.exercise_id = exercise_id

    def collect(self):
        yield AttemptItem.from_parent(self, name=self.exercise_id, exercise_id=self.exercise_id)


class AttemptFailed(Exception):
    """The attempt did not pass: its result, or a message (an unknown exercise)."""

    def __init__(self, result=None, message: str = "") -> None:
        super().__init__(message)
        self.result, self.message = result, message


class AttemptItem(pytest.Item):
    def __init__(self, *, exercise_id: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.exercise_id = exercise_id

    def runtest(self) -> None:
        from attnprep import exercises
        from attnprep.attempts import grade_attempt

        try:
            exercise = exercises.get(self.exercise_id)
        except exercises.UnknownExercise as exc:
            raise AttemptFailed(message=_w("unknown", file=self.path.name, error=exc)) from None
        result = grade_attempt(self.path, exercise, record=True)
        if not result.passed:
            raise AttemptFailed(result)

    def repr_failure(self, excinfo, style=None):
        failure = excinfo.value
        if not isinstance(failure, AttemptFailed):
            return super().repr_failure(excinfo, style=style)
        if failure.result is None:
            return failure.message
        try:
            width = self.config.get_terminal_writer().fullwidth
        except Exception:  # no terminal writer (a plugin replaced it): the report's usual width
            width = WIDTH
        return failure_text(failure.result, width=width)

    def reportinfo(self):
        return self.path, 0, _w("location", file=self.path.name, id=self.exercise_id)


def failure_text(result, *, width: int = 100) -> str:
    """The compact report (verdict, error, named mistakes, failed checks) as plain text, and the
    divergence when the result has one."""
    from rich.console import Console

    from attnprep.report import render_result

    buffer = io.StringIO()
    render_result(result, Console(file=buffer, width=width, no_color=True, force_terminal=False, highlight=False, emoji=False), full=False)
    text = buffer.getvalue().rstrip()
    divergence = getattr(result, "divergence", None)  # SPEC §8: {line, code, detail}, when the grader has it
    if divergence is not None:
        get = divergence.get if isinstance(divergence, dict) else lambda key: getattr(divergence, key, None)
        line = _w("divergence", line=get("line"), code=get("code") or "")
        if line not in text:
            text += "\n" + line + (f"\n  {get('detail')}" if get("detail") else "")
    return text
