"""Entry point: the Typer app with every command registered. Torch is imported lazily, by the
commands that grade (`check`, `demo`, `drill`, `compare`), never at import time."""

from __future__ import annotations

import os
import sys

from attnprep.app import app
from attnprep.commands import catalog, compare, grading, practice  # noqa: F401  (they register commands)


def main() -> None:
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        raise SystemExit(130) from None
    except Exception as exc:  # a bug in attnprep itself: one line, the traceback on request
        if os.environ.get("ATTNPREP_DEBUG"):
            raise
        sys.stderr.write(f"attnprep: internal error: {type(exc).__name__}: {exc} (ATTNPREP_DEBUG=1 shows the traceback)\n")
        raise SystemExit(3) from None
