"""The Typer application object and the helpers every command shares.

Each module of ``attnprep.commands`` registers its commands on its own :func:`command_app`;
:data:`app` loads them on first use (:data:`COMMANDS`). Commands parse and render only, the work
is in library modules the tests call directly. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import gc
import importlib
import sys
from typing import NoReturn

import typer
from rich.console import Console
from typer.core import TyperGroup

# Every command, in the order `attnprep --help` lists them, and the module of attnprep.commands that
# defines it. A module is imported only when one of its commands runs (or --help lists them all),
# so `attnprep list` does not pay for loading the grading and drill commands. A test checks that
# this table and the modules' registered commands agree.
COMMANDS: dict[str, str] = {
    "list": "catalog",
    "new": "catalog",
    "check": "grading",
    "drill": "practice",
    "hint": "catalog",
    "solution": "catalog",
    "stats": "practice",
    "demo": "grading",
    "compare": "compare",
    "interview": "rehearse",
    "today": "rehearse",
}


def command_app() -> typer.Typer:
    """The Typer a module of attnprep.commands registers its commands on."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="rich")


@functools.cache
def _module_commands(module: str) -> dict[str, typer.core.TyperCommand]:
    """The click commands of one module of attnprep.commands, by name (built once)."""
    built = typer.main.get_command(importlib.import_module(f"attnprep.commands.{module}").app)
    return dict(built.commands) if isinstance(built, TyperGroup) else {built.name: built}


class LazyGroup(TyperGroup):
    """The top-level group: knows the command names, loads a command's module on first use."""

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, cmd_name: str):
        module = COMMANDS.get(cmd_name)
        return None if module is None else _module_commands(module).get(cmd_name)

    def resolve_command(self, ctx, args):
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            close = difflib.get_close_matches(name, list(COMMANDS), n=1)
            if close:
                ctx.fail(f"No such command {name!r}; did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="attnprep",
    cls=LazyGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


@app.callback()
def _root() -> None:
    """Practise hand-writing attention (MHA, MQA, GQA, MLA, masks) the way interviews ask for it."""
    # Runs once the command is loaded, before it runs: resume the collector attnprep.cli.main paused
    # for the start-up (a no-op when it was not paused, as under the tests' CliRunner).
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


def console() -> Console:
    """stdout console; Rich honours NO_COLOR and falls back to 80 columns when not a terminal."""
    return Console(highlight=False, emoji=False)


def err_console() -> Console:
    return Console(stderr=True, highlight=False, emoji=False)


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
