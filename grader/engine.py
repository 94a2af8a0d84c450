"""Grade one file: find its exercise, syntax-check it here, run it in a forked child, judge."""

from __future__ import annotations

import io
import time
import tokenize
from dataclasses import replace
from pathlib import Path

from attnprep import exercises
from attnprep.grader.result import Check, ErrorInfo, Result, Verdict

_warm = False


def warm_up() -> None:
    """Import torch single-threaded (so forking stays safe) and the engine's modules."""
    global _warm
    if _warm:
        return
    import torch

    torch.set_num_threads(1)
    from attnprep.grader import child, drivers, judge, sandbox, variants  # noqa: F401

    _warm = True


def exercise_of(path: Path, source: str, exercise_id: str | None):
    """The exercise: as given, else the file's ``# attnprep: <id>`` line, else its file name."""
    if exercise_id:
        return exercises.get(exercise_id)
    named = exercises.detect(source)
    if named:
        return exercises.get(named)
    return exercises.get(path.stem)


def grade(path: Path, exercise_id: str | None, *, seed: int, device: str, timeout: float) -> Result:
    start = time.perf_counter()
    path = path.resolve()
    raw = path.read_bytes()
    source = raw.decode("utf-8", errors="replace")
    exercise = exercise_of(path, source, exercise_id)
    try:
        # Decode strictly first: compile() and importlib accept invalid UTF-8 inside a comment,
        # `python file.py` does not.
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
        compile(text, str(path), "exec", dont_inherit=True)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"SyntaxError: the file is not valid {encoding} (byte {exc.object[exc.start]:#x} at line {line})"
        return Result(exercise.id, str(path), Verdict.SYNTAX, checks=(Check("syntax", False, message),),
                      error=ErrorInfo("syntax", message), duration_s=time.perf_counter() - start)
    except (SyntaxError, ValueError) as exc:
        where = f" ({path.name}, line {exc.lineno})" if getattr(exc, "lineno", None) else ""
        message = f"{type(exc).__name__}: {getattr(exc, 'msg', None) or exc}{where}"
        text = getattr(exc, "text", None)
        tb = f"  File \"{path.name}\", line {exc.lineno}\n    {text.rstrip()}\n" if text and getattr(exc, "lineno", None) else ""
        return Result(exercise.id, str(path), Verdict.SYNTAX, checks=(Check("syntax", False, message),),
                      error=ErrorInfo("syntax", message, tb), duration_s=time.perf_counter() - start)

    warm_up()
    from attnprep.grader import child, judge, sandbox
    from attnprep.grader.drivers import driver_for

    driver = driver_for(exercise, seed)
    driver.solution()  # imported here so the child inherits it, never reads it
    outcome = sandbox.run(lambda channel: child.run_attempt(path, driver, device), timeout)
    if outcome.data is None:
        return replace(_ended(exercise.id, path, outcome, timeout, time.perf_counter() - start), stdout=outcome.stdout)
    try:
        result = judge.Judge(exercise, driver, outcome.data, path, 0.0).result()
    except Exception as exc:  # our bug, not the attempt's: say so, never blame the user
        import traceback

        result = Result(exercise.id, str(path), Verdict.ERROR, internal=True,
                        error=ErrorInfo("internal", f"attnprep failed while judging: {type(exc).__name__}: {exc}", traceback.format_exc()))
    return replace(result, duration_s=time.perf_counter() - start, stdout=outcome.stdout)


def _ended(exercise_id: str, path: Path, outcome, timeout: float, duration: float) -> Result:
    if outcome.failure == "timeout":
        message = f"the attempt was still running after {timeout:g} s (an infinite loop or a very slow forward?)"
        return Result(exercise_id, str(path), Verdict.TIMEOUT, checks=(Check("runs", False, message),),
                      error=ErrorInfo("timeout", message), duration_s=duration)
    if outcome.failure in ("malformed", "reply_too_large"):
        what = "a malformed reply" if outcome.failure == "malformed" else "too much data"
        message = f"the attempt's process sent the grader {what} ({outcome.detail}): something in the attempt wrote over the grader's channel"
        return Result(exercise_id, str(path), Verdict.ERROR, checks=(Check("runs", False, message),),
                      error=ErrorInfo("reply", message), duration_s=duration)
    if outcome.failure == "answer_error":
        message = f"attnprep failed while answering the attempt's process: {outcome.detail}"
        return Result(exercise_id, str(path), Verdict.ERROR, internal=True, error=ErrorInfo("internal", message), duration_s=duration)
    if outcome.failure == "signal":
        message = f"the attempt crashed the Python process ({outcome.detail})"
        kind = "memory" if outcome.detail == "SIGKILL" else "crash"
    else:
        message = f"the attempt ended the process (exit code {outcome.detail}) before grading finished — os._exit or a fatal error"
        kind = "exit"
    return Result(exercise_id, str(path), Verdict.ERROR, checks=(Check("runs", False, message),),
                  error=ErrorInfo(kind, message), duration_s=duration)

