"""The torch-free commands: ``list``, ``new``, ``solution``, ``hint``.

They parse and render; the work is in :mod:`attnprep.workspace`, :mod:`attnprep.hints` and the
registry. Nothing here (nor anything it imports) may import torch: the tests prove it. `list` is
the command people run most: what only other commands need is imported inside them.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Optional

import typer
from rich.table import Table
from rich.text import Text

from attnprep import paths, texts, workspace
from attnprep.app import command_app, complete_id, console, get_exercise, usage_error
from attnprep.workspace import ExerciseRow, Status

if TYPE_CHECKING:
    from attnprep.history import ExerciseSummary

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

CMD = "bold cyan"  # a command the user can type next

STATUS_STYLE = {
    Status.NOT_STARTED: "dim",
    Status.BLANK: "yellow",
    Status.IN_PROGRESS: "magenta",
    Status.UNREADABLE: "red",
}


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the current folder when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _prose_type():
    from attnprep.prose import Prose  # here: `list` does not need it

    return Prose


def _prose(text: str, style: str = "") -> Text:
    """Text that wraps Chinese between characters, never before a closing mark (attnprep.prose)."""
    return _prose_type()(text, style=style)


def _bullets(items, marker: str = "•") -> Table:
    """A list with hanging indentation that wraps cleanly at 80 columns."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for item in items:
        grid.add_row(marker, item if isinstance(item, Text) else _prose(item))
    return grid


# --- list ------------------------------------------------------------------------------------


class Column(NamedTuple):
    header: str
    cell: Callable[[ExerciseRow], Text | str]
    options: dict


# One entry per column of `attnprep list`; history columns (passed?, best drill) are appended here.
# Only the title wraps (between words, and only down to TITLE_MIN: narrower, it is left out).
TITLE_MIN = 24
COLUMNS: list[Column] = [
    Column("id", lambda r: Text(r.id, style="bold"), {"no_wrap": True}),
    Column("title", lambda r: r.title, {"min_width": TITLE_MIN, "overflow": "fold"}),
    Column("difficulty", lambda r: texts.t(f"cli.difficulty.{r.difficulty}"), {"no_wrap": True}),
    Column("drill", lambda r: texts.t("cli.minutes", minutes=r.minutes), {"no_wrap": True, "justify": "right"}),
    Column("status", lambda r: Text(texts.t(f"cli.status.{r.status.name.lower()}"), style=STATUS_STYLE.get(r.status, "")), {"no_wrap": True}),
]


# History columns: the record from `attnprep.history` (blank when the exercise has no runs).
HISTORY_STYLE = {"passed": "green", "attempted": "yellow"}
# A cell gets None for an exercise with no runs.
HISTORY_COLUMNS: list[Column] = [
    Column("record", lambda s: Text(texts.t(f"cli.record.{s.status}"), style=HISTORY_STYLE.get(s.status, "")) if s and s.attempts else "", {"no_wrap": True}),
    Column("best", lambda s: _duration(s.best_drill_s) if s and s.best_drill_s is not None else "", {"no_wrap": True, "justify": "right"}),
]


def _label(header: str) -> str:
    """A column's header as shown (the header itself is the column's id)."""
    return texts.t(f"cli.column.{header}")


def _duration(seconds: float) -> str:
    from attnprep.history import format_duration

    return format_duration(seconds)


# What a narrower terminal leaves out, in turn (the id, the status and the history never): the
# difficulty, the drill budget, then the title. See attnprep.layout.
DROPPED_IN_TURN = ("difficulty", "drill", "title")


def layouts(history: bool) -> tuple[list[tuple[str, ...]], int]:
    """The column sets of `list`, widest first (the last is the id alone), and the index of the
    first without a title: taken only when no layout with titles fits (attnprep.layout.choose)."""
    every = [c.header for c in COLUMNS] + ([c.header for c in HISTORY_COLUMNS] if history else [])
    found = [tuple(h for h in every if h not in DROPPED_IN_TURN[:n]) for n in range(len(DROPPED_IN_TURN) + 1)]
    return [*found, ("id", "status"), ("id",)], len(DROPPED_IN_TURN)


GAP = 2  # the table's padding between two columns


def cells(rows: list[ExerciseRow], summaries: dict[str, ExerciseSummary] | None) -> dict[str, list[Text | str]]:
    """Every column's cells by header (the history's only with a history), in table order."""
    found = {c.header: [c.cell(row) for row in rows] for c in COLUMNS}
    if summaries is not None:
        found.update({c.header: [c.cell(summaries.get(row.id)) for row in rows] for c in HISTORY_COLUMNS})
    return found


def rows_table(rows: list[ExerciseRow], summaries: dict[str, ExerciseSummary] | None = None,
               shown: tuple[str, ...] | None = None, width: int | None = None) -> tuple[Table, tuple[str, ...]]:
    """The table of `list` and the columns it shows: those ``shown``, else those that fit ``width``
    (attnprep.layout.choose; None: every one)."""
    from attnprep import layout

    by_header = cells(rows, summaries)
    options = {c.header: c.options for c in [*COLUMNS, *HISTORY_COLUMNS]}
    if shown is None and width is not None:
        candidates, without_titles = layouts(summaries is not None)

        def columns(headers: tuple[str, ...]) -> list[layout.Col]:
            return [layout.Col([_label(h), *(c if isinstance(c, str) else c.plain for c in by_header[h])],
                               wrap=not options[h].get("no_wrap", False), min_width=options[h].get("min_width", 0))
                    for h in headers]

        # a long id (attention_backward) narrows the titles: up to one title in six may take a
        # second line before the difficulty is left out
        shown = layout.choose(width, candidates, columns, gap=GAP, slack=max(1, len(rows) // 6), fallback_from=without_titles)
    shown = tuple(by_header) if shown is None else shown
    table = Table(box=None, header_style="bold", pad_edge=False, padding=(0, GAP, 0, 0))
    for header in shown:
        table.add_column(_label(header), **options[header])
    for i in range(len(rows)):
        table.add_row(*(by_header[h][i] for h in shown))
    return table, shown


def exercise_summaries() -> dict[str, ExerciseSummary]:
    """The history's summaries; with no history file yet there is nothing to read (nor SQLite to
    load), and an unusable data folder is said in one line: the list is shown without history."""
    try:
        if not paths.history_db().exists():
            return {}
    except paths.DataFolderError as exc:
        sys.stderr.write("attnprep: " + texts.t("cli.list.no_history", error=exc) + "\n")
        return {}
    from attnprep import history

    return history.exercise_summaries()


def _history_json(summary: ExerciseSummary) -> dict:
    return {"status": summary.status, "attempts": summary.attempts, "passes": summary.passes,
            "best_drill_s": None if summary.best_drill_s is None else round(summary.best_drill_s, 2)}


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="A JSON list of the exercises on stdout."),
) -> None:
    """List the exercises with their status in the current folder."""
    rows = workspace.exercise_rows(Path.cwd())
    summaries = exercise_summaries()
    if as_json:  # "history" only for exercises with recorded runs
        import json

        data = [{**r.to_json(), **({"history": _history_json(summaries[r.id])} if r.id in summaries else {})} for r in rows]
        typer.echo(json.dumps(data, indent=2))
        return
    out = console()
    history = summaries or None  # the history's columns once there is a history
    table, shown = rows_table(rows, history, width=out.width)
    out.print(table)
    left_out = [header for header in layouts(history is not None)[0][0] if header not in shown]
    if left_out:
        out.print(Text(texts.t("cli.list.left_out", columns=texts.t("shell.comma").join(_label(h) for h in left_out)), style="dim"))
    out.print()
    out.print(Text(texts.t("cli.list.status_legend"), style="dim"))
    if summaries and "record" in shown:
        out.print(Text(texts.t("cli.list.record_legend"), style="dim"))
    todo = next((r for r in rows if r.status is Status.NOT_STARTED), None)
    if todo is not None:
        out.print(Text.assemble(texts.t("cli.list.start_one"), (f"`attnprep new {todo.id}`", CMD)))


# --- new -------------------------------------------------------------------------------------


@app.command("new")
def new(
    exercise_id: str = typer.Argument(..., metavar="ID", autocompletion=complete_id, help="Exercise id, e.g. mha (see `attnprep list`)."),
    folder: Optional[Path] = typer.Option(
        None, "--dir", "-d", help="Folder to write ID.py in (default: the current folder; created if missing)."
    ),
    force: bool = typer.Option(False, "--force", "-f", help="Replace an existing file, keeping it as ID.py.bak first."),
) -> None:
    """Write the blank exercise file ID.py."""
    exercise = get_exercise(exercise_id)
    target = folder if folder is not None else Path(".")
    try:
        written = workspace.write_stub(exercise, target, force=force)
    except workspace.WorkspaceError as exc:
        usage_error(str(exc))
    out = console()
    out.print(
        Text.assemble(
            texts.t("shell.wrote"),
            (_shown(written.path), "bold"),
            texts.t("cli.new.about", title=exercise.title, difficulty=texts.t(f"cli.difficulty.{exercise.difficulty}"), minutes=exercise.minutes),
        )
    )
    if written.backup is not None:
        out.print(Text.assemble(texts.t("cli.new.kept"), (_shown(written.backup), "bold")))
    import shlex

    in_cwd = written.path.parent.resolve() == Path.cwd().resolve()
    check = f"attnprep check {exercise.id}" if in_cwd else f"attnprep check {shlex.quote(_shown(written.path))}"
    out.print(Text.assemble(texts.t("cli.new.next"), (f"`{check}`", CMD)))


# --- solution --------------------------------------------------------------------------------


@app.command("solution")
def solution(
    exercise_id: str = typer.Argument(..., metavar="ID", autocompletion=complete_id, help="Exercise id, e.g. mha."),
    code: bool = typer.Option(False, "--code", help="Only the bare source on stdout, ready to pipe into a file."),
) -> None:
    """Show the reference solution with notes, interview Q&A and the classic mistakes."""
    from rich.rule import Rule

    exercise = get_exercise(exercise_id)
    try:
        source = exercise.solution_path.read_text(encoding="utf-8")
    except OSError:
        usage_error(texts.t("cli.solution.missing", id=exercise.id, path=exercise.solution_path))
    from attnprep.wording import solution_source

    source = solution_source(exercise.id, source)  # its comments and docstrings in the language
    if code:
        typer.echo(source, nl=False)
        return

    out = console()
    with paged(out):
        out.print(Rule(Text(f"{exercise.id} · {exercise.title} · " + texts.t("cli.solution.title"), style="bold"), align="left"))
        view, cut = numbered_source(source, out.width)
        out.print(view)
        if cut:
            out.print(Text(texts.t("shell.solution_cut_1" if cut == 1 else "shell.solution_cut", n=cut, id=exercise.id), style="dim"))
        _solution_notes(out, exercise)


def numbered_source(source: str, width: int):
    """The reference as written, one row per line of the file with its line number: never
    re-flowed. A line wider than ``width`` beside its number is cut at the edge with "…" (the
    whole line is in `solution --code`). The view and how many lines were cut."""
    from rich.cells import cell_len
    from rich.syntax import Syntax

    lines = source.splitlines()
    highlighted = Syntax(source, "python", theme="ansi_dark", background_color="default").highlight(source)
    rows = highlighted.split("\n", allow_blank=True)
    digits = len(str(len(lines)))
    room = max(1, width - digits - 1)
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(justify="right", no_wrap=True, style="dim", width=digits)
    grid.add_column(no_wrap=True, overflow="ellipsis", max_width=room)
    for number in range(len(lines)):
        row = rows[number] if number < len(rows) else Text(lines[number])
        row.rstrip()
        grid.add_row(str(number + 1), row)
    return grid, sum(cell_len(line.rstrip()) > room for line in lines)


@contextlib.contextmanager
def paged(out):
    """Output longer than the terminal goes through the pager ($PAGER, else less; with LESS unset,
    less gets -FRX: colours, and it quits at once on a screenful); piped, or short, it is printed."""
    if not out.is_terminal:
        yield
        return
    with out.capture() as captured:
        yield
    text = captured.get()
    if text.count("\n") < out.height:
        out.file.write(text)
        out.file.flush()
        return
    import os

    from rich.pager import SystemPager

    os.environ.setdefault("LESS", "FRX")  # as git does: colours pass through, a short text just prints
    SystemPager().show(text)


def _solution_notes(out, exercise) -> None:
    if exercise.key_points:
        out.print()
        out.print(Text(texts.t("cli.solution.key_points"), style="bold underline"))
        out.print(_bullets(exercise.key_points))
    if exercise.qa:
        out.print()
        out.print(Text(texts.t("cli.solution.qa"), style="bold underline"))
        for i, qa in enumerate(exercise.qa):
            if i:
                out.print()
            out.print(_bullets([_prose(qa.q, style="bold")], marker="Q:"))
            out.print(_bullets([qa.a], marker="A:"))
    if exercise.mistakes:
        out.print()
        out.print(Text(texts.t("cli.solution.mistakes"), style="bold underline"))
        out.print(
            _bullets(_prose_type().assemble((m.title, "bold"), "\n", (texts.t("cli.solution.fix"), "green"), m.fix) for m in exercise.mistakes)
        )
    out.print()
    out.print(Text(texts.t("cli.solution.bare", id=exercise.id), style="dim"))


# --- hint ------------------------------------------------------------------------------------


@app.command("hint")
def hint(
    exercise_id: str = typer.Argument(..., metavar="ID", autocompletion=complete_id, help="Exercise id, e.g. mha."),
    reset: bool = typer.Option(False, "--reset", help="Start over: the next call shows hint 1 again."),
) -> None:
    """Show the next hint of an exercise (each call reveals one more)."""
    from attnprep import hints

    exercise = get_exercise(exercise_id)
    out = console()
    if reset:
        try:
            hints.reset(exercise.id)
        except OSError as exc:  # StateNotSaved, DataFolderError: one line, said as such
            usage_error(texts.t("cli.hint.cannot_reset", id=exercise.id, error=exc))
        out.print(Text.assemble(texts.t("cli.hint.reset", id=exercise.id), (f"`attnprep hint {exercise.id}`", CMD), texts.t("cli.hint.reset_after")))
        return
    step = hints.next_hint(exercise)
    if step.not_saved:  # the hint is still shown; the next call will show it again
        sys.stderr.write("attnprep: " + texts.t("cli.hint.not_saved", error=step.not_saved, number=step.number) + "\n")
    if step.total == 0:
        out.print(Text(texts.t("cli.hint.none", id=exercise.id)))
        return
    if step.exhausted:
        out.print(Text(texts.t("cli.hint.no_more", id=exercise.id, total=step.total), style="bold"))
        out.print(_numbered(step.revealed))
        out.print(
            Text.assemble(
                (f"`attnprep solution {exercise.id}`", CMD), texts.t("cli.hint.shows_reference"),
                (f"`attnprep hint {exercise.id} --reset`", CMD), texts.t("cli.hint.starts_over"),
            )
        )
        return
    out.print(Text(f"{exercise.id} · {exercise.title} · " + texts.t("cli.hint.label", number=step.number, total=step.total), style="bold"))
    out.print(_bullets([step.text], marker=" "))
    if step.not_saved:
        pass  # the next call shows this hint again: no "next" line
    elif step.number < step.total:
        out.print(Text.assemble(texts.t("cli.hint.next"), (f"`attnprep hint {exercise.id}`", CMD), texts.t("cli.hint.next_after", number=step.number + 1, total=step.total)), style="dim")
    else:
        out.print(Text(texts.t("cli.hint.last", id=exercise.id), style="dim"))


def _numbered(items) -> Table:
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, justify="right")
    grid.add_column(overflow="fold")
    for i, item in enumerate(items, 1):
        grid.add_row(f"{i}.", _prose(item))
    return grid

