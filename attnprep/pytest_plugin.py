"""pytest plugin (SPEC §10): ``pytest --attnprep`` grades a folder of attempts, one test per file.

Registered through the ``pytest11`` entry point, so every pytest that runs where attnprep is
installed loads this module: it must stay cheap (no torch, no attnprep grader at import) and do
nothing unless asked. With ``--attnprep`` (on the command line, or ``addopts = --attnprep`` in a
``pytest.ini``), every ``.py`` file whose first line is ``# attnprep: <id>`` becomes one test
item, graded by the same grader as ``attnprep check``; the run goes to the history like a
``check``. A failure shows the compact report (verdict, error, named mistake, where it first goes
wrong, failed checks); ``-v`` shows the whole report. Without the option nothing is collected, so
attnprep's own test corpus is never graded by accident.

The plugin owns the attempt files it collects: such a file is graded in the grader's child process
and never imported into pytest's, whatever its name (``test_mha.py`` matches pytest's
``python_files``; a path named on the command line is collected whatever its name). Its
``pytest_collect_file`` wraps every other implementation and puts its own collector in place of
theirs (pytest's Python module, doctest's), so none of them can import the file; a folder whose
``__init__.py`` is an attempt is collected as a plain folder, not as a package pytest would import.
A ``conftest.py`` is pytest's own, imported before collection; it is never an attempt.

Words follow the language as the CLI's do (``ATTNPREP_LANG``, the locale), or ``--attnprep-lang``.
Text from the attempt (names, messages, file names) goes through
:func:`attnprep.safe_text.visible`, as in the report.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

OPTION = "--attnprep"
WIDTH = 100

# Every word this module shows is a texts key of the [pytest_plugin] table (attnprep/texts/<lang>.toml).


def _w(key: str, **values) -> str:
    from attnprep import texts

    return texts.t("pytest_plugin." + key, **values)


def _visible(text: object) -> str:
    from attnprep.safe_text import visible

    return visible(text, one_line=True)


def pytest_addoption(parser: pytest.Parser) -> None:
    from attnprep import texts

    group = parser.getgroup("attnprep")
    group.addoption(OPTION, action="store_true", default=False, dest="attnprep", help=_w("help"))
    group.addoption(OPTION + "-lang", choices=texts.LANGUAGES, default=None, dest="attnprep_lang", help=_w("help_lang"))


@pytest.hookimpl(trylast=True)  # after pytest's own, which registers the terminal reporter
def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("attnprep_lang", None):
        from attnprep import texts

        texts.set_language(config.getoption("attnprep_lang"))
    if config.getoption("attnprep", False):
        _say_pytest_words(config)


# pytest's own English (its terminal reporter, pytest 8 and 9), said in the reports' language in a
# run with --attnprep: the separator titles, "collected N items" and the closing counts. Whatever
# does not match (another pytest's words, a plugin's) stays as pytest wrote it.
_TITLES = {
    "test session starts": "session_starts",
    "FAILURES": "failures",
    "ERRORS": "errors",
    "PASSES": "passes",
    "short test summary info": "short_summary",
    "warnings summary": "warnings_summary",
}
_COLLECTED = re.compile(r"^collected (\d+) items?$")
_COUNT = re.compile(r"(?<!\d)(\d+) (failed|passed|errors?|skipped|deselected|warnings?)\b")
_JOINED = re.compile(r", (?=(?:\x1b\[[\d;]*m)*\d+ (?:failed|passed|errors?|skipped|deselected|warnings?)\b)")
_COUNT_KEYS = {"failed": "n_failed", "passed": "n_passed", "error": "n_errors", "errors": "n_errors",
               "skipped": "n_skipped", "deselected": "n_deselected", "warning": "n_warnings", "warnings": "n_warnings"}
_TOOK = re.compile(r" in (\d[\d.]*s(?: \(\d+:\d\d:\d\d\))?)")


_MARKUP = re.compile(r"\x1b\[[\d;]*m")
_STATS = re.compile(r"^(?:no tests ran|\d+ \w+(?:, \d+ \w+)*) in \d[\d.]*s(?: \(\d+:\d\d:\d\d\))?$")


def said_by_pytest(text: str) -> str:
    """pytest's own line ``text`` in the reports' language (the same text where it is not one of
    pytest's: a title of its own, "collected N items", or the closing counts line)."""
    if text in _TITLES:
        return _w(_TITLES[text])
    collected = _COLLECTED.match(text)
    if collected:
        n = int(collected.group(1))
        return _w("collected_1") if n == 1 else _w("collected", n=n)
    if not _STATS.match(_MARKUP.sub("", text)):
        return text

    def count(match: re.Match) -> str:
        n, key = int(match.group(1)), _COUNT_KEYS[match.group(2)]
        return _w(key + "_1") if n == 1 and key in ("n_errors", "n_warnings") else _w(key, n=n)

    text = text.replace("no tests ran", _w("no_tests_ran"))
    text = _COUNT.sub(count, _JOINED.sub(lambda _: _w("count_joiner"), text))
    return _TOOK.sub(lambda m: _w("took", duration=m.group(1)), text)


def _say_pytest_words(config: pytest.Config) -> None:
    """Put :func:`said_by_pytest` between pytest's terminal reporter and the terminal (a run with
    --attnprep whose reports are not in English)."""
    from rich.cells import cell_len

    from attnprep import texts

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or texts.language() == "en":
        return
    write_sep, write_line = reporter.write_sep, reporter.write_line

    def translated_sep(sep: str, title: str | None = None, fullwidth: int | None = None, **markup: bool) -> None:
        if title is not None:
            said = said_by_pytest(title)
            if said != title:  # pytest measures a title by len(): give back the columns wide characters take
                fullwidth = (fullwidth if fullwidth is not None else reporter._tw.fullwidth) - (cell_len(said) - len(said))
            title = said
        write_sep(sep, title, fullwidth, **markup)

    def translated_line(line: str | bytes, **markup: bool) -> None:
        write_line(said_by_pytest(line) if isinstance(line, str) else line, **markup)

    reporter.write_sep, reporter.write_line = translated_sep, translated_line


def pytest_unconfigure(config: pytest.Config) -> None:
    if config.getoption("attnprep_lang", None):  # back to the environment's (a pytest run inside a process)
        from attnprep import texts

        texts.set_language(None)


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.readline(300).decode("utf-8", errors="replace")
    except OSError:
        return ""


def attempt_id(file_path: Path, config: pytest.Config) -> str | None:
    """The exercise id of a file this plugin grades (``--attnprep`` on, a ``.py`` file other than a
    ``conftest.py``, headed ``# attnprep: <id>``), else None."""
    if file_path.suffix != ".py" or file_path.name == "conftest.py" or not config.getoption("attnprep"):
        return None
    from attnprep.attempts import header_id

    return header_id(_first_line(file_path))


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path: Path, parent: pytest.Collector):
    """Every other plugin's collectors of the file (pytest's Python module for ``test_*.py`` or a
    path given on the command line, doctest's …), or, for an attempt, this plugin's alone: the
    others would import it into this process."""
    collectors = yield
    exercise_id = attempt_id(file_path, parent.config)
    if exercise_id is None:
        return collectors
    return [AttemptFile.collector(parent, file_path, exercise_id)]


@pytest.hookimpl(wrapper=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector):
    """A folder whose ``__init__.py`` is an attempt is a plain folder, not a package: pytest imports
    a package's ``__init__.py`` to set up the tests inside it (the file is graded as any other)."""
    collector = yield
    if isinstance(collector, pytest.Package) and attempt_id(path / "__init__.py", parent.config):
        return pytest.Dir.from_parent(parent, path=path)
    return collector


class AttemptFile(pytest.File):
    """An attempt file: one item, named after the exercise it is graded as."""

    def __init__(self, *, exercise_id: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.exercise_id = exercise_id

    @classmethod
    def collector(cls, parent: pytest.Collector, path: Path, exercise_id: str) -> AttemptFile:
        """The collector of ``path``; its node id (which pytest prints) with the control characters
        of the file's name shown."""
        node = cls.from_parent(parent, path=path, exercise_id=exercise_id)
        if _visible(node.nodeid) != node.nodeid:
            node = cls.from_parent(parent, path=path, exercise_id=exercise_id, name=_visible(node.name), nodeid=_visible(node.nodeid))
        return node

    def collect(self):
        yield AttemptItem.from_parent(self, name=_visible(self.exercise_id), exercise_id=self.exercise_id)


class AttemptFailed(Exception):
    """The attempt did not pass: its result, or a message (an unknown exercise)."""

    def __init__(self, result=None, message: str = "") -> None:
        super().__init__(message)
        self.result, self.message = result, message


class AttemptRepr:
    """A failed attempt's report as pytest's long representation: the report's text, and as the
    crash message the headline alone. (A plain string would be pytest's crash message whole, so
    the short summary repeats the whole report where pytest runs untrimmed: under ``CI`` or ``-vv``.)"""

    def __init__(self, text: str) -> None:
        self.text = text
        self.reprcrash = _Crash(text.split("\n", 1)[0])

    def toterminal(self, tw) -> None:
        for line in self.text.split("\n"):
            tw.line(line)

    def __str__(self) -> str:
        return self.text


class _Crash:
    """What pytest reads of a crash: its message (the short summary's text after the node id)."""

    def __init__(self, message: str) -> None:
        self.message = message


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
            raise AttemptFailed(message=_w("unknown", file=_visible(self.path.name), error=_visible(exc))) from None
        result = grade_attempt(self.path, exercise, record=True)
        if not result.passed:
            raise AttemptFailed(result)

    def repr_failure(self, excinfo, style=None):
        failure = excinfo.value
        if not isinstance(failure, AttemptFailed):
            return super().repr_failure(excinfo, style=style)
        if failure.result is None:
            return AttemptRepr(failure.message)
        try:
            width = self.config.get_terminal_writer().fullwidth
        except Exception:  # no terminal writer (a plugin replaced it): the report's usual width
            width = WIDTH
        return AttemptRepr(failure_text(failure.result, width=width, full=self.config.get_verbosity() > 0))

    def reportinfo(self):
        shown = _visible(self.path)
        return shown if shown != str(self.path) else self.path, 0, _w("location", file=_visible(self.path.name), id=_visible(self.exercise_id))


def failure_text(result, *, width: int = WIDTH, full: bool = False) -> str:
    """The report as plain text: the compact one (verdict, error, named mistakes, where it first goes
    wrong, failed checks), or with ``full`` the whole report of ``attnprep check``."""
    from rich.console import Console

    from attnprep.report import render_result

    buffer = io.StringIO()
    render_result(result, Console(file=buffer, width=width, no_color=True, force_terminal=False, highlight=False, emoji=False), full=full)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip().splitlines())
