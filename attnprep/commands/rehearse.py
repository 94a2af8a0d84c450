"""Rehearsal commands (SPEC §10): ``interview`` (write it once, submit, then the follow-ups) and
``today`` (what to practise, by spaced repetition over the history).

They parse and render; the work is in :mod:`attnprep.interview` and :mod:`attnprep.plan`.
Torch-free at import, and `today` never imports it: only an interview's grading does.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich import box
from rich.table import Table
from rich.text import Text

from attnprep import loop
from attnprep.app import EXIT_FAIL, EXIT_OK, command_app, complete_id, console, err_console, get_exercise, is_interactive, usage_error
from attnprep.prose import Prose

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

# Every word these commands show, in one place (str.format templates).
# Every word this module shows is a texts key of the [rehearse] table (attnprep/texts/<lang>.toml).


def _w(key: str, **values) -> str:
    from attnprep import texts

    return texts.t("rehearse." + key, **values)


# --- interview -----------------------------------------------------------------------------------


@app.command("interview")
def interview(
    exercise_id: Optional[str] = typer.Argument(
        None, metavar="[ID]", autocompletion=complete_id, help="Exercise id (default: the first of `attnprep today`)."
    ),
    submit: bool = typer.Option(
        False, "--submit", help="Submit the open interview (from another shell or an editor task)."
    ),
    folder: Optional[Path] = typer.Option(
        None, "--dir", "-d", help="Workspace folder; the stub is written to DIR/interviews/ (default: the current folder)."
    ),
    minutes: Optional[float] = typer.Option(None, "--minutes", "-m", help="Time budget shown on the clock (default: the exercise's)."),
    questions: int = typer.Option(3, "--questions", "-q", min=0, help="Q&A cards asked after the code (0: none)."),
    answers: Optional[Path] = typer.Option(
        None, "--answers", help="Read your replies from this file, one per line, instead of the keyboard."
    ),
    seconds: Optional[float] = typer.Option(None, "--seconds", hidden=True, help="Time budget in seconds (tests)."),
    debug_round: bool = typer.Option(False, "--debug", help="End with a debug round: the same exercise with mistakes planted, to fix on the clock."),
) -> None:
    """Interview rehearsal: a fresh stub, a clock, no grading until you submit; then follow-ups.

    Submit with Enter here or `attnprep interview --submit` elsewhere. The first submission's
    verdict is the one recorded as your first try; fixes after it are graded and marked as such.
    Then the exercise's interview questions (reveal the model answer, mark known / not known) and
    the chained next exercise. Exit 0: every first try passed; 1: one failed; 130: given up.
    """
    from attnprep import interview as iv

    lines = _lines(answers)
    live = answers is None and is_interactive() and sys.stdin.isatty()
    out = console()
    session = iv.Session(events=iter(()), view=iv.ConsoleView(out, live=live), questions=questions)
    try:
        opening = iv.opening(exercise_id, submit=submit, resolve=lambda typed: get_exercise(typed).id)
    except iv.Refused as refused:
        usage_error(_w(refused.key, **refused.values))

    if opening.how == iv.HAND_OFF:
        _submit_to_owner(iv, opening.state)
    if opening.how in (iv.TAKE_OVER, iv.RESUME):
        state = opening.state
        said = "take_over" if opening.how == iv.TAKE_OVER else "resume"
        out.print(Prose(_w(said, id=state.exercise, file=iv.shown(Path(state.file))), style="yellow"))
        _warm_up(out, live)
        session.events = iv.session_events(opening.how, lines)
        raise typer.Exit(iv.exit_code(session.run(state, resumed=True)))
    if opening.stale is not None:
        out.print(Prose(_w("stale", id=opening.stale.exercise, file=iv.shown(Path(opening.stale.file))), style="dim"))

    exercise = _pick(exercise_id, out)
    try:
        budget_s = loop.budget_s(exercise, minutes=minutes, seconds=seconds)
    except ValueError:
        usage_error(_w("budget"))
    _warm_up(out, live)  # before the clock starts
    workspace = folder if folder is not None else Path.cwd()
    try:
        opened = session.open(exercise, workspace, budget_s=budget_s)
    except OSError as exc:
        from attnprep.workspace import cannot_write

        usage_error(cannot_write(exc, workspace / "interviews"))
    session.events = iv.session_events(iv.NEW, lines)
    code = iv.exit_code(session.run(opened))
    if debug_round and code != ABANDONED:
        code = _debug_round(exercise, folder if folder is not None else Path.cwd(), out, budget_s) or code
    raise typer.Exit(code)


ABANDONED = 130


def _debug_round(exercise, folder: Path, out, budget_s: float) -> int:
    """`interview --debug`: the round ends as some labs end theirs, with a broken implementation of
    the same exercise to fix on the clock (attnprep debug). Its exit code when it was not fixed."""
    import random

    from attnprep import debugging
    from attnprep.commands.debug import run_round

    if not debugging.load_plants(exercise)[0]:
        out.print(Prose(_w("debug_none", id=exercise.id), style="dim"))
        return 0
    out.print(Prose(_w("debug_round", id=exercise.id), style="bold"))
    code = run_round(exercise, seed=random.SystemRandom().randrange(1_000_000), bugs=None,
                     budget_s=budget_s, folder=folder)
    return code


def _lines(answers: Path | None):
    if answers is None:
        return loop.lines_of(sys.stdin)
    try:
        return loop.StreamLines(open(answers, encoding="utf-8"))  # noqa: SIM115 (read until the process ends)
    except OSError as exc:
        usage_error(_w("answers_unreadable", file=answers, detail=exc.strerror or exc))


def _warm_up(out, live: bool) -> None:
    from attnprep import grader

    if live:
        with out.status(_w("loading")):
            grader.warm_up()
    else:
        grader.warm_up()


def _pick(exercise_id: str | None, out):
    """The exercise to interview on: the one named, else the first of today's plan, else the
    weakest by the drill's rule."""
    from attnprep import exercises, history, plan

    if exercise_id is not None:
        return get_exercise(exercise_id)
    today = plan.plan_from_history(now=time.time())
    if today.items:
        item = today.items[0]
        out.print(Prose(_w("picked", id=item.exercise, reason=item.reason), style="dim"))
        return exercises.get(item.exercise)
    picked, reason = history.pick_weakest(exercises.registry().values())
    out.print(Prose(_w("picked_weakest", reason=reason), style="dim"))
    return exercises.get(picked)


def _submit_to_owner(iv, state) -> None:
    """Hand the submission to the attnprep running the interview and show its answer."""
    out = console()
    request = iv.request_submit()
    out.print(Prose(_w("sent", pid=state.owner, file=iv.shown(Path(state.file))), style="dim"))
    answer = iv.wait_for_answer(request)
    if answer is None:
        err_console().print(Prose(_w("no_answer")))
        raise typer.Exit(EXIT_FAIL)
    if "error" in answer:
        out.print(Prose(_w("not_graded", detail=answer["error"]), style="yellow"))
        raise typer.Exit(EXIT_FAIL)
    which = _w("answer_first") if answer.get("first_try") else _w("answer_fix")
    mark = ("✓ ", "bold green") if answer.get("passed") else ("✗ ", "bold red")
    out.print(Prose.assemble(mark, (which, "bold"), ": ", answer.get("line", "")))
    raise typer.Exit(EXIT_OK if answer.get("passed") else EXIT_FAIL)


# --- today ---------------------------------------------------------------------------------------


@app.command("today")
def today(
    as_json: bool = typer.Option(False, "--json", help="One JSON document on stdout with the same plan."),
) -> None:
    """What to practise today: spaced repetition over your history, with the reason for each line.

    An exercise comes back sooner after a failed first try (interview, or drill past its budget)
    and later after each pass; Q&A cards you did not know come back the next day; new exercises
    arrive a few a day in the order of `attnprep list`.
    """
    from attnprep import history, plan

    now = time.time()
    document = plan.plan_from_history(now=now)
    rounds = [r for r in history.debug_rounds() if r.outcome != "open"]
    if as_json:
        typer.echo(json.dumps({**document.to_json(), "debug_rounds": len(rounds),
                               "debug_passed": sum(r.outcome == "passed" for r in rounds)}, indent=2, ensure_ascii=False))
        return
    out = console()
    date = document.today.isoformat()
    n = len(document.items)
    head = _w("today_none", date=date) if not n else _w("today_head_1", date=date) if n == 1 else _w("today_head", date=date, n=n)
    out.print(Text(head, style="bold"))
    if n:
        table = Table(box=box.SIMPLE, show_header=False, show_edge=False, pad_edge=False)
        table.add_column(no_wrap=True, style="bold")
        table.add_column(overflow="fold")
        for item in document.items:
            style = "red" if item.why == "failed" else "cyan" if item.why == "new" else ""
            table.add_row(item.exercise, Prose(item.reason, style=style))
        out.print(table)
    if document.more:
        out.print(Text(_w("more", n=document.more), style="dim"))
    if document.upcoming:
        from attnprep import texts

        items = texts.t("shell.comma").join(_w("next_item", id=e, when=_when(d, document.today)) for e, d in document.upcoming)
        out.print(Prose(_w("next", items=items), style="dim"))
    if n:
        first = document.items[0].exercise
        out.print(Prose(_w("start", interview=_w("command", id=first), drill=_w("drill", id=first)), style="dim"))
    if rounds:
        out.print(Prose(_w("debug_done", n=len(rounds), passed=sum(r.outcome == "passed" for r in rounds)), style="dim"))
    else:
        out.print(Prose(_w("debug_try"), style="dim"))


def _when(day, today) -> str:
    n = (day - today).days
    return _w("tomorrow") if n == 1 else _w("in_days", n=n)
