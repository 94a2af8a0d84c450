"""Entry point: the Typer app, whose commands load on first use (attnprep.app.COMMANDS). Torch is
imported lazily, by the commands that grade (`check`, `demo`, `drill`, `compare`), never at import
time."""

from __future__ import annotations

import gc
import os
import sys

from attnprep.paths import DataFolderError


class ReaderGone:
    """sys.stdout / sys.stderr for the CLI: once the reading end of a pipe has closed
    (``attnprep check gqa | head -1``), what is written is dropped instead of raising
    BrokenPipeError, and the command runs to its end with its own exit code (0 still means the
    attempt passed). The stream's descriptor is pointed at /dev/null so that nothing buffered
    fails again, at exit or in a child. Everything else is the wrapped stream's."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_gone()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_gone()

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _reader_gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)


def take_language(argv: list[str]) -> tuple[str | None, list[str]]:
    """``--lang X`` / ``--lang=X`` anywhere on the command line (``attnprep check --lang zh`` as
    well as ``attnprep --lang zh check``): the value and the arguments without it. Read before Typer
    parses, so that the help of the command is already in that language. Stops at ``--``."""
    out: list[str] = []
    lang = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg == "--lang" and i + 1 < len(argv):
            lang, i = argv[i + 1], i + 2
            continue
        if arg.startswith("--lang="):
            lang, i = arg.split("=", 1)[1], i + 1
            continue
        out.append(arg)
        i += 1
    return lang, out


def main() -> None:
    # Start-up (importing Typer, Rich and the command's module, building the command) creates only
    # objects that live as long as the process: the cyclic collector would scan them again and
    # again and find nothing (~14 ms of a 95 ms `attnprep list` on the machine of benchmarks/). It
    # is paused here and resumed, with those objects frozen out of later collections, by the app's
    # callback just before the command runs.
    gc.disable()
    sys.stdout, sys.stderr = ReaderGone(sys.stdout), ReaderGone(sys.stderr)
    lang, args = take_language(sys.argv[1:])
    if lang is not None:
        from attnprep import texts

        if lang.strip().lower() not in texts.LANGUAGES:
            sys.stderr.write(texts.t("sys.error_prefix") + texts.t("help.bad_lang", lang=lang) + "\n")
            raise SystemExit(2)
        texts.set_language(lang.strip().lower())
        sys.argv[1:] = args
    elif os.environ.get("ATTNPREP_LANG"):  # as wrong as `--lang fr`, and said the same way
        from attnprep import texts

        problem = texts.environment_problem()
        if problem is not None:
            sys.stderr.write(texts.t("sys.error_prefix") + problem + "\n")
            raise SystemExit(2)
    from attnprep.app import app

    try:
        _run(app)
    except SystemExit as exc:
        if "torch" in sys.modules:
            _exit_now(exc.code)
        raise


def _exit_now(code) -> None:
    """End a process that loaded torch without the interpreter's teardown, which frees torch's
    thousands of objects and runs its C++ destructors (about 0.3 s on the machine of benchmarks/,
    a quarter of a whole `python -c "import torch"`) to hand back memory the OS takes back anyway.
    What an ordinary exit does that matters still happens first: the atexit handlers (temporary
    folders, logging, torch's own) and the flush of stdout and stderr. The history's connections
    are closed by the commands themselves."""
    import atexit

    if code is None:
        code = 0
    elif not isinstance(code, int):  # SystemExit("message"): printed, exit status 1
        sys.stderr.write(f"{code}\n")
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or gone: nothing more can be said
            pass
    os._exit(code)


def _run(app) -> None:
    try:
        app()
    except KeyboardInterrupt:
        from attnprep import texts

        sys.stderr.write(texts.t("sys.interrupted") + "\n")
        raise SystemExit(130) from None
    except DataFolderError as exc:  # $ATTNPREP_HOME (or the platform's folder) is unusable
        from attnprep import texts

        sys.stderr.write(f"{texts.t('sys.error_prefix')}{exc}\n")
        raise SystemExit(2) from None
    except Exception as exc:  # a bug in attnprep itself: one line, the traceback on request
        if os.environ.get("ATTNPREP_DEBUG"):
            raise
        from attnprep import texts

        sys.stderr.write(texts.t("sys.internal", type=type(exc).__name__, error=exc) + "\n")
        raise SystemExit(3) from None
    finally:
        gc.enable()  # when no command ran (--help, a usage error), for a caller that goes on
