"""The Typer application object and the helpers every command shares.

Command modules in ``attnprep.commands`` register on :data:`app`; they parse and render only,
the work is in library modules the tests call directly. Nothing here imports torch.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import typer
from rich.console import Console

app = typer.Typer(
    name="attnprep",
    help="Practise hand-writing attention (MHA, MQA, GQA, MLA, masks) the way interviews ask for it.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def console() -> Console:
    """stdout console; Rich honours NO_COLOR and falls back to 80 columns when not a terminal."""
    return Console(highlight=False)


def err_console() -> Console:
    return Console(stderr=True, highlight=False)


def usage_error(message: str) -> NoReturn:
    """One clear line on stderr and exit code 2."""
    from rich.text import Text

    err_console().print(Text.assemble(("error:", "bold red"), " ", message), soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def get_exercise(exercise_id: str):
    """The registry entry, or a usage error with 'did you mean …'."""
    from attnprep import exercises

    try:
        return exercises.get(exercise_id)
    except exercises.UnknownExercise as e:
        usage_error(str(e))


def is_interactive() -> bool:
    return sys.stdout.isatty()
