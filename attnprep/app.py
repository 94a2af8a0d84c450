"""The Typer application object and the helpers every command shares.

Each module of ``attnprep.commands`` registers its commands on its own :func:`command_app`;
:data:`app` loads them on first use (:data:`COMMANDS`). Commands parse and render only, the work
is in library modules the tests call directly. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import gc
import importlib
import os
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
    "debug": "debug",
    "dev": "dev",
}


def command_app() -> typer.Typer:
    """The Typer a module of attnprep.commands registers its commands on."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode="rich")


def _localise(command, name: str):
    """Put the help of ``command`` (its own and its options') in the current language: the
    ``help.<name>`` and ``help.<name>.<parameter>`` texts. Cheap; redone when the language changes."""
    from attnprep import texts

    command.context_class = LocalisedContext  # its usage line ("Usage:") in the language too
    lang = texts.language()
    if getattr(command, "_attnprep_lang", None) == lang:
        return command
    key = f"help.{name}"
    if texts.has(key):
        command.help, command.short_help = paragraphs(texts.t(key, lang)), None
    for param in command.params:
        if getattr(param, "help", None) is not None and texts.has(f"{key}.{param.name}"):
            param.help = texts.t(f"{key}.{param.name}", lang)
    if "_attnprep_lang" not in command.__dict__:  # the help option itself, built by click on demand
        base = command.get_help_option
        command.get_help_option = lambda ctx: _localise_help_option(base(ctx))
        formats = command.format_help
        command.format_help = lambda ctx, formatter: (_typer_help_ready(), formats(ctx, formatter))[1]
    command._attnprep_lang = lang
    return command


def _has_wide(text: str) -> bool:
    """Whether ``text`` has a character two cells wide (Chinese), cheaply (attnprep.prose, which
    knows how such text wraps, is loaded only then)."""
    if text.isascii():
        return False
    import unicodedata

    return any(unicodedata.east_asian_width(ch) in "WF" for ch in text if not ch.isascii())


def paragraphs(text: str) -> str:
    """``text`` with each paragraph on one line, for the terminal to wrap: Typer keeps the line
    breaks of a help text, and a line wider than the terminal then leaves an orphan word behind.
    Lines are joined with a space, or with nothing beside Chinese."""
    out = []
    for paragraph in text.split("\n\n"):
        joined = ""
        for line in paragraph.split("\n"):
            line = line.strip()
            if joined and line and not (_has_wide(line[0]) or _has_wide(joined[-1])):
                joined += " "
            joined += line
        out.append(joined)
    return "\n\n".join(out)


def _localise_help_option(option):
    """The --help option and Typer's own words in the current language (called while the help is
    formatted, once Typer's rich_utils is loaded)."""
    from attnprep import texts

    if option is not None:
        option.help = texts.t("help.help_option")
    rich_utils = sys.modules.get("typer.rich_utils")
    if rich_utils is not None:
        _typer_words(rich_utils)
    return option


# Typer's words in its rich help and error panels: module-level settings of typer.rich_utils it reads
# each time it formats (its own `_()` calls fix them at import, in whatever language the process had
# then), and the texts that say them. Set before each help or error is printed.
TYPER_WORDS = {
    "ARGUMENTS_PANEL_TITLE": "help.panel_arguments",
    "OPTIONS_PANEL_TITLE": "help.panel_options",
    "COMMANDS_PANEL_TITLE": "help.panel_commands",
    "ERRORS_PANEL_TITLE": "help.panel_error",
    "RICH_HELP": "help.try_help",
    "DEFAULT_STRING": "help.default",
    "REQUIRED_LONG_STRING": "help.required",
    "ENVVAR_STRING": "help.envvar",
    "DEPRECATED_STRING": "help.deprecated",
    "ABORTED_TEXT": "help.aborted",
}


def _typer_help_ready() -> None:
    """Typer's rich help module with attnprep's words and rendering, before it formats a help."""
    import typer.rich_utils

    _typer_words(typer.rich_utils)


def _typer_words(rich_utils) -> None:
    from attnprep import texts

    for name, key in TYPER_WORDS.items():
        if hasattr(rich_utils, name):
            setattr(rich_utils, name, texts.t(key))
    made = getattr(rich_utils, "_make_rich_text", None)
    if made is not None and not getattr(made, "_attnprep", False):
        rich_utils._make_rich_text = _as_prose(made)
    console_of = getattr(rich_utils, "_get_rich_console", None)
    if console_of is not None and not getattr(console_of, "_attnprep", False):
        rich_utils._get_rich_console = _trimmed_console(console_of)


def _trimmed_console(get_rich_console):
    """Typer's help console, its lines without the blanks it pads them with (TrimmedConsole)."""

    def made(*args, **kwargs):
        console = get_rich_console(*args, **kwargs)
        if type(console) is Console:
            console.__class__ = TrimmedConsole
        return console

    made._attnprep = True
    return made


def _as_prose(make_rich_text):
    """Typer's help texts as :class:`attnprep.prose.Prose`: Rich wraps at spaces only and cut a
    Chinese help text, which has none, with "…" at the edge of its table cell."""

    def made(*args, **kwargs):
        text = make_rich_text(*args, **kwargs)
        from rich.text import Text

        if type(text) is not Text or not _has_wide(text.plain):  # English: Rich's own wrapping
            return text
        from attnprep.prose import Prose

        return Prose(text.plain, style=text.style, justify=text.justify, overflow=text.overflow,
                     no_wrap=text.no_wrap, end=text.end, tab_size=text.tab_size, spans=list(text.spans))

    made._attnprep = True
    return made


class LocalisedContext(typer.Context):
    """A Context whose help formatter writes the usage line with the language's "Usage:" (Click's
    HelpFormatter.write_usage takes the prefix as a parameter; Context.formatter_class is Click's
    documented way to choose the formatter)."""

    class formatter_class(typer.Context.formatter_class):
        def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
            from attnprep import texts

            super().write_usage(prog, args, texts.t("help.usage") if prefix is None else prefix)


class SaidUsageError(typer.BadParameter):
    """A usage error whose message is already said in the language (Click's own exceptions compose
    theirs in English in format_message)."""

    def format_message(self) -> str:
        return self.message


# Click's usage errors, in the English it composes them with (the same words in click and in the
# copy of it Typer 0.28 carries; neither translates them: Click's gettext calls are not in Typer's
# copy): the pattern of its message and the text that says it. A message matching none is left as it is.
CLICK_MESSAGES = (
    (r"Option '(?P<name>[^']+)' requires an argument\.", "click.option_needs_value"),
    (r"Option '(?P<name>[^']+)' requires (?P<nargs>\d+) arguments\.", "click.option_needs_values"),
    (r"Option '(?P<name>[^']+)' does not take a value\.", "click.option_takes_no_value"),
    (r"Got unexpected extra argument(?:s|\(s\))? \((?P<args>.*)\)", "click.extra_arguments"),
)
CLICK_VALUE_MESSAGES = (
    (r"(?P<value>'.*') is not a valid (?P<type>integer|int|float|boolean|UUID)\..*", "click.not_a_valid"),
    (r"(?P<value>'.*') is not (?:one of )?(?P<choices>.*)\.", "click.not_one_of"),
    (r"(?P<value>.*) is not in the range (?P<range>.*)\.", "click.not_in_range"),
)


def _said(pattern_table, message: str) -> str | None:
    import re

    from attnprep import texts

    for pattern, key in pattern_table:
        match = re.fullmatch(pattern, message.strip(), re.S)
        if match:
            return texts.t(key, **{k: v for k, v in match.groupdict().items() if v is not None})
    return None


def say_usage_error(error) -> str | None:
    """A Click usage error (``UsageError`` and its kinds) in the current language, or None to leave
    it as Click says it (English, or a message attnprep wrote itself)."""
    from attnprep import texts

    if texts.language() == "en":
        return None
    kind = type(error).__name__
    param = getattr(error, "param", None)
    hint = getattr(error, "param_hint", None)
    if hint is None and param is not None:
        hint = param.get_error_hint(error.ctx)
    if isinstance(hint, (list, tuple)):
        hint = " / ".join(f"'{h}'" for h in hint)
    if kind == "MissingParameter":
        which = getattr(error, "param_type", None) or getattr(param, "param_type_name", "parameter")
        return texts.t(f"click.missing_{which}" if texts.has(f"click.missing_{which}") else "click.missing_parameter",
                       hint=hint or "")
    if kind == "NoSuchOption":
        said = texts.t("click.no_such_option", name=error.option_name)
        close = getattr(error, "possibilities", None)
        return said + (texts.t("click.did_you_mean", close=", ".join(close)) if close else "")
    if kind == "BadParameter" or (hint and kind not in ("UsageError", "BadOptionUsage", "BadArgumentUsage")):
        inner = _said(CLICK_VALUE_MESSAGES, error.message) or error.message
        return texts.t("click.bad_value", hint=hint, message=inner) if hint else texts.t("click.bad_value_no_hint", message=inner)
    return _said(CLICK_MESSAGES, error.message)


class _SaysClickErrors:
    """Parsing and dispatching with Click's usage errors said in the language (see
    :func:`say_usage_error`): the error is raised again as a :class:`SaidUsageError` with the same
    context, so that Typer prints it as it prints any usage error."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is None or not (hasattr(error, "format_message") and hasattr(error, "ctx")):
            return False
        if isinstance(error, SaidUsageError) or getattr(error, "exit_code", 2) != 2:
            return False
        rich_utils = sys.modules.get("typer.rich_utils")
        if rich_utils is None:
            import typer.rich_utils as rich_utils  # Typer loads it next to print the error
        _typer_words(rich_utils)
        said = say_usage_error(error)
        if said is None:
            return False
        raise SaidUsageError(said, ctx=error.ctx) from None


@functools.cache
def _module_commands(module: str) -> dict[str, typer.core.TyperCommand]:
    """The click commands of one module of attnprep.commands, by name (built once)."""
    built = typer.main.get_command(importlib.import_module(f"attnprep.commands.{module}").app)
    return dict(built.commands) if isinstance(built, TyperGroup) else {built.name: built}


class LazyGroup(TyperGroup):
    """The top-level group: knows the command names, loads a command's module on first use, says
    Click's usage line and usage errors in the language."""

    context_class = LocalisedContext

    def make_context(self, info_name, args, parent=None, **extra):
        with _SaysClickErrors():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx):
        with _SaysClickErrors():
            return super().invoke(ctx)

    def _main_shell_completion(self, ctx_args, prog_name, complete_var=None) -> None:
        # The shell asking for completions ($_ATTNPREP_COMPLETE set by the script that
        # --install-completion wrote): register Typer's completion classes first, which Typer does
        # when it builds its completion options (here built lazily, see _completion_option).
        complete_var = complete_var or f"_{prog_name}_COMPLETE".replace("-", "_").upper()
        if os.environ.get(complete_var):
            from typer._completion_classes import completion_init

            completion_init()
        super()._main_shell_completion(ctx_args, prog_name, complete_var)

    def list_commands(self, ctx) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx, cmd_name: str):
        module = COMMANDS.get(cmd_name)
        command = None if module is None else _module_commands(module).get(cmd_name)
        return None if command is None else _localise(command, cmd_name)

    def get_help_option(self, ctx):
        _localise(self, "root")
        return _localise_help_option(super().get_help_option(ctx))

    def format_help(self, ctx, formatter):
        _localise(self, "root")
        _typer_help_ready()
        return super().format_help(ctx, formatter)

    def resolve_command(self, ctx, args):
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in COMMANDS:
            import difflib

            from attnprep import texts

            close = difflib.get_close_matches(name, list(COMMANDS), n=1)
            if close:
                ctx.fail(texts.t("help.no_such_command", name=name, close=close[0]))
            ctx.fail(texts.t("click.no_such_command", name=repr(name)))
        return super().resolve_command(ctx, args)


app = typer.Typer(
    name="attnprep",
    cls=LazyGroup,
    invoke_without_command=True,  # bare `attnprep`: the help, exit 0 (see _root)
    add_completion=False,  # Typer's own completion options import its completion code at start-up
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


def _show_version(value: bool) -> None:
    if value:
        from attnprep import __version__

        typer.echo(f"attnprep {__version__}")
        raise typer.Exit(0)


def _set_language(ctx: typer.Context, param, value: str | None):
    """--lang: the texts' language for the rest of the process (before the command is loaded)."""
    if value is None or ctx.resilient_parsing:
        return value
    from attnprep import texts

    lang = value.strip().lower()
    if lang not in texts.LANGUAGES:
        usage_error(texts.t("help.bad_lang", lang=value))
    texts.set_language(lang)
    return lang


def _completion(which: str):
    """A callback for --install-completion / --show-completion that loads Typer's completion
    code only when the option is given (so that `attnprep list` does not pay for it)."""

    def callback(ctx: typer.Context, param, value):
        if not value or ctx.resilient_parsing:
            return value
        from typer import completion

        completion.completion_init()
        return getattr(completion, f"{which}_callback")(ctx, param, value)

    return callback


@app.callback()
def _root(
    ctx: typer.Context,
    version: bool = typer.Option(False, "--version", callback=_show_version, is_eager=True, help="Show the version and exit."),
    lang: str = typer.Option(
        None, "--lang", metavar="en|zh", callback=_set_language, is_eager=True, expose_value=False,
        help="Language of the texts: en or zh (default: $ATTNPREP_LANG, else the locale).",
    ),
    install_completion: bool = typer.Option(
        False, "--install-completion", callback=_completion("install"), expose_value=False, is_eager=True,
        help="Install completion for the current shell.",
    ),
    show_completion: bool = typer.Option(
        False, "--show-completion", callback=_completion("show"), expose_value=False, is_eager=True,
        help="Show completion for the current shell, to copy it or customize the installation.",
    ),
) -> None:
    """Practise hand-writing attention (MHA, MQA, GQA, MLA, masks) the way interviews ask for it."""
    # Runs once the command is loaded, before it runs: resume the collector attnprep.cli.main paused
    # for the start-up (a no-op when it was not paused, as under the tests' CliRunner).
    if not gc.isenabled():
        gc.freeze()
        gc.enable()
    if os.environ.get("ATTNPREP_LANG"):  # $ATTNPREP_LANG=fr is an error, as `--lang fr` is
        from attnprep import texts

        problem = None if texts._override else texts.environment_problem()
        if problem is not None:
            usage_error(problem)
    if ctx.invoked_subcommand is None:  # bare `attnprep`: the help is the answer, not a usage error
        text = ctx.get_help()  # Typer's rich help prints itself and returns ""
        if text:
            typer.echo(text)
        raise typer.Exit(0)


EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class TrimmedConsole(Console):
    """A Console whose lines carry no trailing blanks: the spaces Rich pads table cells and
    justified text with up to the width are dropped at the end of each line (blanks with a
    background colour are kept: they are seen)."""

    def _render_buffer(self, buffer) -> str:
        return super()._render_buffer(trimmed(buffer))

    def print(self, *objects, **kwargs) -> None:
        prose = sys.modules.get("attnprep.prose")  # not loaded: there is no Prose to print (`list` saves its import)
        if prose is not None:  # a Prose keeps its Chinese wrapping when printed alone
            objects = prose.printable(*objects)
        super().print(*objects, **kwargs)


def trimmed(segments):
    """``segments`` without the unstyled blanks that end each line."""
    from rich.segment import Segment

    line: list = []
    for segment in segments:
        if segment.text == "\n" and not segment.control:
            yield from _without_trailing_blanks(line)
            line = []
            yield segment
        elif "\n" in segment.text and not segment.control:
            *whole, last = segment.text.split("\n")
            for part in whole:
                yield from _without_trailing_blanks([*line, Segment(part, segment.style)])
                line = []
                yield Segment("\n", segment.style)
            line = [Segment(last, segment.style)] if last else []
        else:
            line.append(segment)
    yield from line


def _without_trailing_blanks(line: list):
    from rich.segment import Segment

    end = len(line)
    while end:
        text, style, control = line[end - 1]
        if control or (style is not None and (style.bgcolor is not None or style.reverse)):
            break
        kept = text.rstrip(" ")
        if kept:
            line[end - 1] = Segment(kept, style)
            break
        end -= 1
    return line[:end]


def console() -> Console:
    """stdout console; Rich honours NO_COLOR and falls back to 80 columns when not a terminal."""
    return TrimmedConsole(highlight=False, emoji=False)


def err_console() -> Console:
    return TrimmedConsole(stderr=True, highlight=False, emoji=False)


def usage_error(message: str) -> NoReturn:
    """One clear line on stderr and exit code 2. The message may quote a file's name or header
    (an attempt's text): its control characters are shown, not sent (:mod:`attnprep.safe_text`)."""
    from rich.text import Text

    from attnprep import texts
    from attnprep.safe_text import visible

    err_console().print(Text.assemble((texts.t("sys.error_prefix"), "bold red"), visible(message, one_line=True)), soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


def complete_id(incomplete: str) -> list[str]:
    """Shell completion of an exercise id (``attnprep new m<Tab>``): the ids starting with what is typed."""
    from attnprep import exercises

    return [exercise_id for exercise_id in exercises.listing() if exercise_id.startswith(incomplete)]


def complete_target(incomplete: str) -> list[str]:
    """Shell completion of `check`'s targets: exercise ids, then the Python files and folders whose
    path starts with what is typed (Typer's completion scripts do not fall back to the shell's)."""
    import glob

    paths = [p + os.sep if os.path.isdir(p) else p for p in sorted(glob.glob(glob.escape(incomplete) + "*"))]
    return [*complete_id(incomplete), *(p for p in paths if p.endswith((os.sep, ".py")))]


def get_exercise(exercise_id: str):
    """The registry entry, or a usage error with 'did you mean …'."""
    from attnprep import exercises

    try:
        return exercises.get(exercise_id)
    except exercises.UnknownExercise as e:
        usage_error(str(e))


def is_interactive() -> bool:
    return sys.stdout.isatty()
