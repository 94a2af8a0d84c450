"""Practice commands: ``drill`` (timed, re-checked on every save) and ``stats`` (the history).

They parse and render; the work is in :mod:`attnprep.drill` and :mod:`attnprep.history`.
Torch-free at import (``attnprep --help`` loads this module): the drill imports the grader, and
with it torch, only when it runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from attnprep import exercises, history, loop, texts
from attnprep.prose import Prose
from attnprep.app import command_app, complete_id, console, err_console, get_exercise, is_interactive, usage_error

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

SPARKS = "▁▂▃▄▅▆▇█"
ABANDONED = "—"  # a drill given up (Ctrl-C): it has no time
STATS_VERSION = 1


# --- drill -----------------------------------------------------------------------------------


@app.command("drill")
def drill(
    exercise_id: Optional[str] = typer.Argument(
        None, metavar="ID", autocompletion=complete_id, help="Exercise id (default: the weakest one according to your history)."
    ),
    minutes: Optional[float] = typer.Option(
        None, "--minutes", "-m", help="Time budget in minutes (default: the exercise's budget; fractions allowed)."
    ),
    folder: Optional[Path] = typer.Option(
        None, "--dir", "-d", help="Workspace folder; the stub is written to DIR/drills/ (default: the current folder)."
    ),
    edit: bool = typer.Option(False, "--edit", help="Open the stub in $VISUAL / $EDITOR (a graphical editor)."),
    seconds: Optional[float] = typer.Option(None, "--seconds", hidden=True, help="Time budget in seconds (tests)."),
) -> None:
    """Timed drill on a fresh stub: countdown, re-check on every save, recorded in the history.

    Ends on the first passing save (exit 0) or when the time is up (a final check, exit 1);
    Ctrl-C gives up (recorded as abandoned, exit 130).
    """
    from attnprep import drill as drills

    if exercise_id is not None:
        exercise = get_exercise(exercise_id)
        reason = None
    else:
        from attnprep.paths import DataFolderError

        try:
            picked, reason = history.pick_weakest(exercises.registry().values())
        except DataFolderError:  # no history to read: the first exercise (recording it will say why not)
            picked, reason = next(iter(exercises.registry())), texts.t("drill.first_exercise")
        exercise = exercises.get(picked)
    try:
        budget_s = loop.budget_s(exercise, minutes=minutes, seconds=seconds)
    except ValueError:
        usage_error(texts.t("drill.bad_budget"))

    workspace = folder if folder is not None else Path.cwd()
    try:
        path = drills.new_drill_file(exercise, workspace)
    except OSError as exc:
        from attnprep.workspace import cannot_write

        usage_error(cannot_write(exc, workspace / "drills"))

    out = console()
    if reason is not None:
        out.print(Prose.assemble(texts.t("drill.picked"), (exercise.id, "bold"), texts.t("drill.picked_reason", reason=reason)))
    out.print(
        Prose.assemble(
            texts.t("drill.wrote"), (_shown(path), "bold"),
            texts.t("drill.wrote_about", title=exercise.title, budget=history.format_duration(budget_s)),
        )
    )
    if edit:
        _start_editor(drills, path)

    from attnprep import grader

    if is_interactive():
        with out.status(texts.t("drill.loading")):
            grader.warm_up()
    else:
        grader.warm_up()

    title = texts.t("shell.drill_title", id=exercise.id, file=_shown(path))
    if is_interactive():
        with drills.LiveView(out, budget_s, title) as view:
            run = drills.run_drill(exercise, path, budget_s, view)
    else:
        run = drills.run_drill(exercise, path, budget_s, drills.PlainView(out, budget_s))
    _render_ending(run, exercise)
    raise typer.Exit(run.ending.exit_code)


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _start_editor(drills, path: Path) -> None:
    command = drills.editor_command()
    note = err_console()
    if command is None:
        note.print(Text(texts.t("drill.no_editor")))
    elif drills.is_terminal_editor(command):
        shown = " ".join([*command, _shown(path)])
        note.print(Prose(texts.t("drill.terminal_editor", editor=command[0], file=shown)))
    else:
        try:
            drills.open_editor(command, path)
        except OSError as exc:
            note.print(Prose(texts.t("drill.editor_failed", editor=command[0], error=exc)))


def _render_ending(run, exercise) -> None:
    from attnprep.report import render_result

    out = console()
    ending = run.ending
    budget = history.format_duration(run.budget_s)
    took = history.format_duration(ending.elapsed_s)
    if ending.result is not None:
        # the drill's log has just printed this check's verdict (saved → / final check →): the
        # report goes on from there, without saying it a second time
        out.print()
        render_result(ending.result, out, full=ending.outcome != "abandoned", headline=False)
        out.print()
    if ending.outcome == "passed":
        line = Text.assemble((texts.t("drill.end_passed"), "bold green"), texts.t("drill.end_passed_after", took=took, budget=budget))
        summary = history.exercise_summaries().get(exercise.id)
        if run.recorded is not None and summary is not None and summary.drill_passes > 1:
            if summary.best_drill_s is not None and ending.elapsed_s <= summary.best_drill_s:
                line.append(texts.t("drill.new_best"), style="bold")
            else:
                line.append(texts.t("drill.best", best=history.format_duration(summary.best_drill_s)), style="dim")
    elif ending.outcome == "timeout":
        line = Text.assemble((texts.t("drill.end_timeout"), "bold red"), texts.t("drill.end_timeout_after", budget=budget))
    else:
        line = Text.assemble((texts.t("drill.end_abandoned"), "bold yellow"), texts.t("drill.end_abandoned_after", took=took))
    if run.recorded is not None:
        line.append(texts.t("drill.recorded"), style="dim")
    out.print(line)


# --- stats -----------------------------------------------------------------------------------


def sparkline(recent, budget_s: float) -> Text:
    """One glyph per recent drill, oldest first: ▁ (fast) … █ (the whole budget); ✗ a time-out;
    — abandoned. ``recent``: (duration_s, outcome[, its own budget_s]); ``budget_s`` is the budget of
    a drill that has none of its own."""
    line = Text()
    for duration, outcome, *own in recent:
        if outcome == "abandoned":
            line.append(ABANDONED, style="yellow")
            continue
        if outcome != "passed":
            line.append("✗", style="red")
            continue
        budget = own[0] if own and own[0] else budget_s
        ratio = duration / budget if budget > 0 else 1.0
        level = min(len(SPARKS) - 1, max(0, int(ratio * len(SPARKS))))
        line.append(SPARKS[level], style="green" if ratio <= 1 else "yellow")
    return line


def stats_document(summaries: dict[str, history.ExerciseSummary] | None = None) -> dict:
    """The data of `attnprep stats`: every exercise of the registry (then any other id found in the
    history), its summary, its budget and the times relative to it, the mistakes with titles."""
    registry = exercises.registry()
    if summaries is None:  # each drill is measured against its own budget; an older one, the exercise's
        summaries = history.exercise_summaries({ex.id: loop.budget_s(ex) for ex in registry.values()})
    catalogue = exercises.mistake_catalogue()
    rows = []
    for exercise_id in [*registry, *sorted(set(summaries) - set(registry))]:
        s = summaries.get(exercise_id) or history.empty_summary(exercise_id)
        ex = registry.get(exercise_id)
        row = s.to_json()
        row["title"] = ex.title if ex is not None else None
        row["budget_s"] = loop.budget_s(ex) if ex is not None else None  # the exercise's default
        for mistake in row["top_mistakes"]:
            known = catalogue.get(mistake["id"])
            mistake["title"] = known.title if known is not None else mistake["id"]
        rows.append(row)
    totals = {
        "attempts": sum(r["attempts"] for r in rows),
        "passes": sum(r["passes"] for r in rows),
        "drills": sum(r["drills"] for r in rows),
        "drill_passes": sum(r["drill_passes"] for r in rows),
    }
    return {"version": STATS_VERSION, "exercises": rows, "totals": totals, "debug": debug_summary()}


def debug_summary() -> dict:
    """The debug rounds of the history (`attnprep debug`): how many, how they ended, bugs fixed."""
    rounds = [r for r in history.debug_rounds() if r.outcome != "open"]
    return {
        "rounds": len(rounds),
        "passed": sum(r.outcome == "passed" for r in rounds),
        "bugs_planted": sum(len(r.planted) for r in rounds),
        "bugs_fixed": sum(r.found or 0 for r in rounds),
        "recent": [{"exercise": r.exercise, "outcome": r.outcome, "duration_s": _round_s(r.duration_s),
                    "bugs": len(r.planted), "fixed": r.found, "mistakes": [p.get("mistake") for p in r.planted]}
                   for r in rounds[-5:]],
    }


def _round_s(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


# The columns of `stats`; the mistakes wrap between words, down to MISTAKES_MIN wide: narrower, they
# move below the table (where they have the whole width), then the median and the recent drills are
# left out, then columns go from the right (see attnprep.layout).
MISTAKES = "most frequent mistakes"
MISTAKES_MIN = 36
STATS_COLUMNS: dict[str, dict] = {
    "exercise": {"no_wrap": True, "style": "bold"},
    "runs": {"justify": "right", "no_wrap": True},
    "passed": {"justify": "right", "no_wrap": True},
    "best drill": {"justify": "right", "no_wrap": True},
    "median": {"justify": "right", "no_wrap": True},
    "recent": {"no_wrap": True},
    MISTAKES: {"min_width": MISTAKES_MIN},
}
STATS_LAYOUTS: list[tuple[str, ...]] = [
    ("exercise", "runs", "passed", "best drill", "median", "recent", MISTAKES),
    ("exercise", "runs", "passed", "best drill", "median", "recent"),
    ("exercise", "runs", "passed", "best drill", "recent"),
    ("exercise", "runs", "passed", "best drill"),
    ("exercise", "passed", "best drill"),
    ("exercise",),
]
STATS_FALLBACK = 1  # the first layout without the mistakes column
STATS_GAP = 3  # SIMPLE_HEAD: padding on both sides and a (blank) rule between two columns


def _stats_cells(r: dict) -> dict[str, Text]:
    """One row of the `stats` table, every column."""
    mistakes = texts.t("shell.comma").join(f"{m['title']} ×{m['count']}" for m in r["top_mistakes"])
    recent = tuple((d["duration_s"], d["outcome"], d["budget_s"]) for d in r["recent_drills"])
    return {
        "exercise": Text(r["exercise"]),
        "runs": Text(str(r["attempts"])),
        "passed": Text(f"{r['pass_rate']:.0%}"),
        "best drill": _vs_budget(r["best_drill_s"], r["best_vs_budget"], r["best_drill_budget_s"]),
        "median": _vs_budget(r["median_drill_s"], r["median_vs_budget"], r["median_drill_budget_s"]),
        "recent": sparkline(recent, r["budget_s"] or 0.0),
        MISTAKES: Prose(mistakes),  # Chinese titles break between characters, not mid-word
    }


def _stats_columns(headers: tuple[str, ...], rows: list[dict[str, Text]]):
    from attnprep import layout

    return [layout.Col([_stats_label(h), *(cells[h].plain for cells in rows)], wrap=h == MISTAKES,
                       min_width=STATS_COLUMNS[h].get("min_width", 0)) for h in headers]


def _stats_label(header: str) -> str:
    """A column's header as shown (the header itself is the column's id)."""
    return texts.t("cli.stats.column." + header.replace(" ", "_"))


def _vs_budget(seconds: float | None, ratio: float | None, budget_s: float | None) -> Text:
    """``2:00 / 5:00``: a time, green within its budget, and that budget when there is one to show."""
    if seconds is None:
        return Text("")
    text = Text(history.format_duration(seconds), style="green" if ratio is not None and ratio <= 1 else "yellow")
    if budget_s:
        text.append(f" / {history.format_duration(budget_s)}", style="dim")
    return text


@app.command("stats")
def stats(
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout with the same data."),
) -> None:
    """Your history: attempts, pass rate, best and median drill times, the mistakes you make most."""
    document = stats_document()
    if as_json:
        typer.echo(json.dumps(document, indent=2, ensure_ascii=False))
        return
    from attnprep import layout

    out = console()
    practised = [r for r in document["exercises"] if r["attempts"]]
    debug = document["debug"]
    if debug["rounds"]:
        out.print(texts.t("cli.stats.debug_rounds", n=debug["rounds"], passed=debug["passed"],
                          fixed=debug["bugs_fixed"], planted=debug["bugs_planted"]), soft_wrap=True)
    if not practised:
        out.print(Text.assemble(texts.t("cli.stats.none"), ("`attnprep drill`", "bold"), texts.t("cli.stats.none_after")))
        return
    rows = [_stats_cells(r) for r in practised]
    shown = layout.choose(out.width, STATS_LAYOUTS, lambda headers: _stats_columns(headers, rows), gap=STATS_GAP,
                          slack=None, fallback_from=STATS_FALLBACK)
    table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
    for header in shown:
        table.add_column(_stats_label(header), **STATS_COLUMNS[header])
    for cells in rows:
        table.add_row(*(cells[h] for h in shown))
    out.print(table)
    if MISTAKES not in shown and any(cells[MISTAKES].plain for cells in rows):  # below the table instead
        out.print(Text(_stats_label(MISTAKES), style="bold"))
        below = Table.grid(padding=(0, 2))
        below.add_column(no_wrap=True, style="bold")
        below.add_column()
        for cells in rows:
            if cells[MISTAKES].plain:
                below.add_row(cells["exercise"], cells[MISTAKES])
        out.print(below)
    left_out = [h for h in STATS_LAYOUTS[0] if h not in shown and h != MISTAKES]
    if left_out:
        out.print(Text(texts.t("cli.stats.left_out", columns=texts.t("shell.comma").join(_stats_label(h) for h in left_out)), style="dim"))
    totals = document["totals"]
    runs = texts.t("shell.runs_1" if totals["attempts"] == 1 else "shell.runs", n=totals["attempts"])
    drills = texts.t("shell.drills_1" if totals["drills"] == 1 else "shell.drills", n=totals["drills"])
    out.print(
        Prose(
            texts.t("shell.totals", runs=runs, passes=totals["passes"], drill_passes=totals["drill_passes"], drills=drills),
            style="dim",
        )
    )
    out.print(
        Text(
            texts.t("cli.stats.legend", abandoned=ABANDONED),
            style="dim",
        )
    )
    untouched = [r["exercise"] for r in document["exercises"] if not r["attempts"]]
    if untouched:
        out.print(Prose(texts.t("cli.stats.untouched", ids=texts.t("shell.comma").join(untouched)), style="dim"))
