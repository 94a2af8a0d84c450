"""``attnprep dev check ID`` and ``attnprep dev corpus ID``: tools for contributors, on the checkout they work in.

Parse and render only; the rules are :mod:`attnprep.devcheck` (which grades, so torch is imported
inside the command: ``attnprep --help`` loads this module).
"""

from __future__ import annotations

import typer
from rich.text import Text

from attnprep import texts
from typer.core import TyperGroup

from attnprep.app import EXIT_FAIL, EXIT_OK, _localise, command_app, console, get_exercise, usage_error


class _DevGroup(TyperGroup):
    """``attnprep dev``'s commands, with their help in the language (``help.dev.<name>``)."""

    def get_command(self, ctx, cmd_name: str):
        command = super().get_command(ctx, cmd_name)
        return None if command is None else _localise(command, f"dev.{cmd_name}")


app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs
dev = typer.Typer(cls=_DevGroup, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="rich",
                  help="Tools for contributors: validate an exercise folder, write its corpus.")
app.add_typer(dev, name="dev")


@dev.command("check")
def check(
    exercise_id: str = typer.Argument(..., metavar="ID", help="Exercise id (a folder exercises/ID/)."),
    fast: bool = typer.Option(False, "--fast", help="Do not grade the corpus attempts, only count them."),
) -> None:
    """Validate one exercise folder: texts in every language, the stub, the reference, the corpus."""
    from attnprep import devcheck, exercises

    if not (exercises.HERE / exercise_id / "exercise.toml").is_file():
        get_exercise(exercise_id)  # an unknown id: "did you mean …", exit 2
        usage_error(texts.t("devcheck.no_folder", path=f"exercises/{exercise_id}/exercise.toml"))
    out = console()
    out.print(Text(texts.t("devcheck.head", id=exercise_id), style="bold"))
    failed = 0
    for finding in devcheck.findings(exercise_id, grade_corpus=not fast):
        mark = ("✓", "green") if finding.ok else ("✗", "red")
        line = Text.assemble((f"{mark[0]} ", mark[1]), (f"{finding.rule:<10}", "bold"), texts.t(finding.key, **finding.params))
        out.print(line)
        failed += not finding.ok
    out.print(texts.t("devcheck.summary_bad", n=failed) if failed else texts.t("devcheck.summary_ok"))
    raise typer.Exit(EXIT_FAIL if failed else EXIT_OK)


@dev.command("corpus")
def corpus(
    exercise_id: str = typer.Argument(..., metavar="ID", help="Exercise id (a folder exercises/ID/)."),
    every: bool = typer.Option(False, "--all", help="One attempt per edit, not only for mistakes without an attempt."),
) -> None:
    """Write a corpus attempt for each mistake declared as an edit of the reference that no attempt names yet."""
    from attnprep import devcheck

    get_exercise(exercise_id)  # an unknown id: "did you mean …", exit 2
    out = console()
    out.print(Text(texts.t("devcheck.generate_head", id=exercise_id), style="bold"))
    failed = 0
    for finding in devcheck.generate_corpus(exercise_id, every=every):
        mark = ("✓", "green") if finding.ok else ("✗", "red")
        out.print(Text.assemble((f"{mark[0]} ", mark[1]), texts.t(finding.key, **finding.params)))
        failed += not finding.ok
    raise typer.Exit(EXIT_FAIL if failed else EXIT_OK)
