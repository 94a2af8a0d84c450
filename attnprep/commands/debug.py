"""``attnprep debug``: the "here is a broken implementation, fix it" round, graded.

Parse and render only: the planted file is :mod:`attnprep.debugging` (torch-free), the clock and the
re-check on every save are the drill's loop (:func:`attnprep.drill.run_drill`), the round is kept in
the history (:func:`attnprep.history.open_debug`). Torch is imported only once the file is written
and the clock is about to start.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Optional

import typer
from rich.padding import Padding
from rich.text import Text

from attnprep.prose import Prose
from attnprep.safe_text import visible

from attnprep import exercises, history, loop, texts
from attnprep.app import EXIT_OK, command_app, console, get_exercise, is_interactive, usage_error

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

DEBUG_VERSION = 1


def _weights(exercise_id: str) -> dict[str, float]:
    """How often each mistake shows in this user's runs of the exercise (0..1): planted more often."""
    counts: dict[str, int] = {}
    for run in history.runs(exercise_id):
        for mistake in run.diagnoses:
            counts[mistake] = counts.get(mistake, 0) + 1
    top = max(counts.values(), default=0)
    return {m: n / top for m, n in counts.items()} if top else {}


def _pick() -> tuple[exercises.Exercise, str]:
    """No ID: the exercise the plan of `today` puts first among those that have plants."""
    from attnprep import debugging, plan

    registry = exercises.registry()
    items = plan.plan_from_history(now=time.time()).items
    for item in items:
        ex = registry.get(item.exercise)
        if ex is not None and debugging.load_plants(ex)[0]:
            return ex, texts.t("debug.picked_plan")
    for ex in registry.values():
        if debugging.load_plants(ex)[0]:
            return ex, texts.t("debug.picked_first")
    usage_error(texts.t("debug.no_plants_anywhere"))


def _planted_json(round_, catalogue) -> list[dict]:
    out = []
    for p in round_:
        m = catalogue.get(p["mistake"])
        out.append({"id": p["mistake"], "line": p["line"], "lines": list(p.get("lines") or [p["line"]]),
                    "code": p["code"], "fixed": p["fixed"],
                    "title": m.title if m else p["mistake"], "why": m.why if m else "", "fix": m.fix if m else ""})
    return out


def render_reveal(out, planted: list[dict]) -> None:
    from rich.table import Table

    for i, p in enumerate(planted, 1):
        out.print(Text.assemble((f"{i}. ", "bold"), (p["title"], "bold"), (f"  [{p['id']}]", "dim")))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(texts.t("debug.reveal_line", line=p["line"]), Text(p["code"], style="red"))
        grid.add_row(texts.t("debug.reveal_fixed"), Text(p["fixed"], style="green"))
        if p["why"]:
            grid.add_row(texts.t("debug.reveal_why"), p["why"])
        if p["fix"]:
            grid.add_row(texts.t("debug.reveal_fix"), p["fix"])
        out.print(Padding(grid, (0, 0, 0, 3)))


def _reveal(file: Optional[Path], as_json: bool) -> None:
    rounds = history.debug_rounds(None if file is None else Path(file).resolve())
    if not rounds:
        usage_error(texts.t("debug.no_round_for", file=str(file)) if file is not None else texts.t("debug.no_round"))
    last = rounds[-1]
    planted = _planted_json(last.planted, exercises.mistake_catalogue())
    if as_json:
        typer.echo(json.dumps({"version": DEBUG_VERSION, "exercise": last.exercise, "file": last.file,
                               "seed": last.seed, "outcome": last.outcome, "mistakes": planted},
                              indent=2, ensure_ascii=False))
        return
    out = console()
    out.print(Prose(texts.t("debug.reveal_head", file=visible(last.file), n=len(planted)), style="bold"))
    render_reveal(out, planted)


@app.command("debug")
def debug(
    exercise_id: Optional[str] = typer.Argument(None, metavar="ID", help="Exercise id (default: the first of `attnprep today` that has planted mistakes)."),
    bugs: Optional[int] = typer.Option(None, "--bugs", "-n", min=1, max=2, help="Mistakes to plant: 1 or 2 (default: by difficulty)."),
    folder: Optional[Path] = typer.Option(None, "--dir", "-d", help="Workspace folder; the file is written to DIR/debug/ (default: the current folder)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the choice of mistakes and names (default: random)."),
    minutes: Optional[float] = typer.Option(None, "--minutes", "-m", help="Time budget in minutes (default: the exercise's)."),
    reveal: bool = typer.Option(False, "--reveal", help="List what was planted in FILE (default: the last debug file) and exit."),
    file: Optional[Path] = typer.Option(None, "--file", help="With --reveal: the debug file."),
    as_json: bool = typer.Option(False, "--json", help="With --reveal: one JSON document on stdout."),
    no_clock: bool = typer.Option(False, "--no-clock", help="Write the file and exit (for scripts: check it with `attnprep check`)."),
    seconds: Optional[float] = typer.Option(None, "--seconds", hidden=True, help="Time budget in seconds (tests)."),
) -> None:
    """Debug round: a complete implementation with named mistakes planted; find and fix them against the clock."""
    from attnprep import debugging

    if reveal:
        if file is None and exercise_id is not None:
            file = Path(exercise_id)  # `debug --reveal FILE`
        _reveal(file, as_json)
        raise typer.Exit(EXIT_OK)
    if as_json:
        usage_error(texts.t("debug.json_needs_reveal"))
    if exercise_id is not None:
        exercise, reason = get_exercise(exercise_id), None
    else:
        exercise, reason = _pick()
    if not debugging.load_plants(exercise)[0]:
        usage_error(texts.t("debug.no_plants", id=exercise.id))
    seed = random.SystemRandom().randrange(1_000_000) if seed is None else seed
    try:
        budget_s = loop.budget_s(exercise, minutes=minutes, seconds=seconds)
    except ValueError:
        usage_error(texts.t("drill.bad_budget"))
    raise typer.Exit(run_round(exercise, seed=seed, bugs=bugs, budget_s=budget_s,
                               folder=folder if folder is not None else Path.cwd(), reason=reason, clock=not no_clock))


def run_round(exercise, *, seed: int, bugs: int | None, budget_s: float, folder: Path, reason: str | None = None,
              clock: bool = True) -> int:
    """Write a debug round's file, run it on the clock (unless ``clock`` is off), record it; the
    exit code (0 fixed, 1 time up, 130 given up; 0 when only written). `interview --debug` ends with one."""
    from attnprep import debugging

    try:
        round_ = debugging.plant(exercise, seed, bugs, _weights(exercise.id))
    except debugging.NoPlants as exc:
        usage_error(texts.t("debug.stale", detail=str(exc)) if str(exc) != exercise.id else texts.t("debug.no_plants", id=exercise.id))

    from attnprep import drill as drills

    try:
        path = drills.new_drill_file(exercise, folder, subfolder="debug", text=round_.source)
    except OSError as exc:
        from attnprep.workspace import cannot_write

        usage_error(cannot_write(exc, folder / "debug"))
    planted = [p._asdict() for p in round_.planted]
    round_id = history.open_debug(exercise.id, path.resolve(), seed=seed, planted=planted,
                                  started_at=time.time(), budget_s=budget_s)
    out = console()
    if reason is not None:
        out.print(Prose.assemble(texts.t("drill.picked"), (exercise.id, "bold"), f" ({reason})"))
    n = len(round_.planted)
    out.print(Prose.assemble(texts.t("debug.wrote"), (visible(str(path)), "bold"),
                             texts.t("debug.wrote_about", n=n, title=exercise.title, budget=history.format_duration(budget_s))))
    if bugs is not None and bugs > n:
        out.print(Prose(texts.t("debug.fewer", n=n, asked=bugs), style="dim"))
    if not clock:
        out.print(Prose(texts.t("debug.next_check", file=visible(str(path)))))
        return EXIT_OK

    from attnprep import grader

    grader.warm_up()
    title = f"{exercise.id} debug · {path.name}"
    if is_interactive():
        with drills.LiveView(out, budget_s, title) as view:
            run = drills.run_drill(exercise, path, budget_s, view, record=False)
    else:
        run = drills.run_drill(exercise, path, budget_s, drills.PlainView(out, budget_s), record=False)
    ending = run.ending
    still = {d.id for d in ending.result.diagnoses} if ending.result is not None and not ending.result.passed else set()
    if ending.result is not None and ending.result.passed:
        found = n
    else:
        found = sum(p.mistake not in still for p in round_.planted) if ending.result is not None else 0
    if round_id is not None:
        history.close_debug(round_id, outcome=ending.outcome, duration_s=ending.elapsed_s, found=found)
    if ending.result is not None:
        from attnprep.report import render_result

        out.print()
        render_result(ending.result, out, full=not ending.result.passed)
    took = history.format_duration(ending.elapsed_s)
    key = {"passed": "debug.end_passed", "timeout": "debug.end_timeout"}.get(ending.outcome, "debug.end_abandoned")
    out.print(Prose(texts.t(key, took=took, budget=history.format_duration(budget_s), found=found, n=n),
                    style="bold green" if ending.outcome == "passed" else "bold"))
    out.print(Prose(texts.t("debug.reveal_head", file=visible(str(path)), n=n), style="bold"))
    render_reveal(out, _planted_json(planted, exercises.mistake_catalogue()))
    return ending.exit_code
