"""Grade one file: syntax-check it here, run it in a forked child, judge here.

The exercise comes resolved (an :class:`~attnprep.exercises.Exercise`); its kind
(:mod:`attnprep.grader.kinds`) says how to drive it. Nothing here knows any exercise or kind.
"""

from __future__ import annotations

import io
import time
import tokenize
from dataclasses import replace
from pathlib import Path

from attnprep import exercises
from attnprep.grader.result import Check, ErrorInfo, Result, Verdict, msg

DEFAULT_TIMEOUT = 10.0
_warm = False


def warm_up() -> None:
    """Import torch single-threaded (so forking stays safe) and the engine's modules."""
    global _warm
    if _warm:
        return
    import torch

    torch.set_num_threads(1)
    from attnprep.grader import child, judge, kinds, sandbox, variants, wire  # noqa: F401

    _warm = True


def exercise_of(path: Path, source: str, exercise_id: str | None) -> exercises.Exercise:
    """The exercise: as given, else the file's ``# attnprep: <id>`` line, else its file name."""
    if exercise_id:
        return exercises.get(exercise_id)
    named = exercises.detect(source)
    if named:
        return exercises.get(named)
    return exercises.get(path.stem)


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def is_blank(exercise: exercises.Exercise, source: str) -> bool:
    """The file is the exercise's untouched stub (cheap unless it looks like one)."""
    if "NotImplementedError" not in source:
        return False
    try:
        return _normalise(source) == _normalise(exercises.render_stub(exercise))
    except Exception:  # a stub that cannot be rendered is never what the user wrote
        return False


def _syntax(path: Path, raw: bytes) -> ErrorInfo | None:
    """The file's syntax error, decoding strictly first: compile() and importlib accept invalid
    UTF-8 inside a comment, ``python file.py`` does not."""
    encoding = "utf-8"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
        compile(text, str(path), "exec", dont_inherit=True)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return ErrorInfo("syntax", msg("error.not_utf8", encoding=encoding, byte=f"{exc.object[exc.start]:#x}", line=line))
    except (SyntaxError, ValueError) as exc:
        lineno = getattr(exc, "lineno", None)
        text = getattr(exc, "text", None)
        tb = f"  File \"{path.name}\", line {lineno}\n    {text.rstrip()}\n" if text and lineno else ""
        return ErrorInfo("syntax", msg("error.syntax", type=type(exc).__name__, text=getattr(exc, "msg", None) or str(exc),
                                       file=path.name, line=lineno or 0), tb)
    return None


def grade(path: Path, exercise: exercises.Exercise, *, seed: int, device: str, timeout: float) -> Result:
    start = time.perf_counter()
    path = path.resolve()
    raw = path.read_bytes()
    source = raw.decode("utf-8", errors="replace")
    notes = []
    named = exercises.detect(source)
    if named and named != exercise.id:
        notes.append(msg("note.header_disagrees", header=named, exercise=exercise.id))

    def done(result: Result) -> Result:
        return replace(result, notes=tuple(notes) + result.notes, duration_s=time.perf_counter() - start)

    syntax = _syntax(path, raw)
    if syntax is not None:
        return done(Result(exercise.id, str(path), Verdict.SYNTAX, checks=(Check("syntax", False, syntax.message),), error=syntax))
    if is_blank(exercise, source):
        blank = ErrorInfo("blank", msg("error.blank", exercise=exercise.id))
        return done(Result(exercise.id, str(path), Verdict.ERROR, error=blank))

    warm_up()
    from attnprep.grader import child, judge, sandbox
    from attnprep.grader.kinds import kind_for
    from attnprep.grader.wire import Reply, WireError

    kind = kind_for(exercise, seed)
    kind_solution = getattr(kind, "solution", None)
    if kind_solution is not None:
        kind_solution()  # TODO(sandbox channel): imported before the fork while the channel is local
    channel = _LocalChannel(kind)
    outcome = sandbox.run(lambda: child.run_attempt(path, kind, device, channel), timeout)
    if outcome.data is None:
        return done(_ended(exercise.id, path, outcome, timeout))
    try:
        reply = Reply.decode(outcome.data)
        reply.check_complete(kind)
    except WireError as exc:
        return done(Result(exercise.id, str(path), Verdict.ERROR, checks=(Check("runs", False, msg("error.malformed", detail=str(exc))),),
                           error=ErrorInfo("malformed", msg("error.malformed", detail=str(exc)))))
    try:
        result = judge.Judge(exercise, kind, reply, path).result()
    except Exception as exc:  # our bug, not the attempt's: say so, never blame the user
        import traceback

        result = Result(exercise.id, str(path), Verdict.ERROR, internal=True,
                        error=ErrorInfo("internal", msg("error.internal_judge", type=type(exc).__name__, text=str(exc)),
                                        traceback.format_exc()))
    return done(result)


class _LocalChannel:
    """The child's questions answered by the kind directly (same process)."""

    def __init__(self, kind):
        self.kind = kind

    def ask(self, question: dict) -> dict:
        return self.kind.answer(question)


def _ended(exercise_id: str, path: Path, outcome, timeout: float) -> Result:
    if outcome.failure == "timeout":
        message = msg("error.timeout", seconds=timeout)
        return Result(exercise_id, str(path), Verdict.TIMEOUT, checks=(Check("runs", False, message),),
                      error=ErrorInfo("timeout", message))
    if outcome.failure == "signal":
        message = msg("error.signal", signal=outcome.detail)
        kind = "memory" if outcome.detail == "SIGKILL" else "crash"
    else:
        message = msg("error.exit", code=outcome.detail)
        kind = "exit"
    return Result(exercise_id, str(path), Verdict.ERROR, checks=(Check("runs", False, message),), error=ErrorInfo(kind, message))
