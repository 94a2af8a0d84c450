"""Grading commands: ``check`` (grade attempt files) and ``demo`` (grade a bundled buggy attempt).

They parse arguments and render; the grading is :func:`attnprep.grader.grade`. Torch is imported
only when a command runs (``attnprep --help`` loads this module).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import List, NamedTuple, Optional

import typer

from attnprep import exercises, texts
from attnprep.app import EXIT_FAIL, EXIT_OK, command_app, complete_id, complete_target, console, get_exercise, usage_error

app = command_app()  # its commands, loaded by attnprep.app.LazyGroup when one of them runs

from attnprep.grader.engine import DEFAULT_TIMEOUT  # noqa: E402  (torch-free: seconds per attempt)


class Skipped(NamedTuple):
    """A file or folder of a searched folder that ``check`` does not grade, and why."""

    path: Path
    why: str  # "no_header": not an id, no ``# attnprep:`` line; "subfolder": not searched
    exercise: str | None = None  # an id the name contains (``my_sdpa.py``: sdpa), for the hint


def exercise_files(folder: Path, skipped: list[Skipped] | None = None) -> list[Path]:
    """Every exercise file of a folder: ``<id>.py`` for a known id, or a file whose first lines
    carry ``# attnprep: <id>``, in registry order then by name. ``skipped`` (when given) receives
    the other ``.py`` files and the subfolders holding one, which are not searched."""
    known = exercises.registry()
    found: dict[Path, int] = {}
    for path in sorted(folder.glob("*.py")):
        order = list(known).index(path.stem) if path.stem in known else None
        if order is None:
            try:
                head = path.read_bytes()[:300].decode("utf-8", errors="replace")
            except OSError:
                continue
            named = exercises.detect(head)
            if named is None:
                if skipped is not None and path.is_file():
                    inside = [i for i in known if i in path.stem.lower()]
                    skipped.append(Skipped(path, "no_header", max(inside, key=len) if inside else None))
                continue
            order = list(known).index(named) if named in known else len(known)
        found[path] = order
    if skipped is not None:
        try:
            subfolders = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
        except OSError:
            subfolders = []
        skipped.extend(Skipped(p, "subfolder") for p in subfolders if next(p.glob("*.py"), None) is not None)
    return sorted(found, key=lambda p: (found[p], p.name))


def skipped_lines(skipped: list[Skipped]) -> list[str]:
    """One line per file or folder ``check`` passed over, saying why."""
    lines = []
    for s in skipped:
        if s.why == "subfolder":
            lines.append(texts.t("cli.check.skipped_subfolder", folder=_shown_path(s.path)))
        elif s.exercise is not None:
            lines.append(texts.t("cli.check.skipped_no_header_like", file=_shown_path(s.path), id=s.exercise))
        else:
            lines.append(texts.t("cli.check.skipped_no_header", file=_shown_path(s.path)))
    return lines


def _say_skipped(skipped: list[Skipped] | None) -> None:
    """The skipped files and folders, on stderr (``--json`` keeps stdout to its document)."""
    if not skipped:
        return
    from rich.text import Text

    from attnprep.app import err_console

    err = err_console()
    for line in skipped_lines(skipped):
        err.print(Text(line, style="dim"))
    skipped.clear()


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(path)


def resolve_targets(targets: list[str], folder: Path, skipped: list[Skipped] | None = None) -> list[tuple[Path, str | None]]:
    """Turn TARGET arguments into files, each with the exercise id the target named (an id
    target names its exercise explicitly: it beats the file's header); a usage error for anything
    that is not there. ``skipped`` receives what a searched folder held and was not graded."""
    if not targets:
        files = exercise_files(folder, skipped)
        if not files:
            _say_skipped(skipped)
            usage_error(texts.t("cli.check.no_files"))
        return [(f, None) for f in files]
    files: list[tuple[Path, str | None]] = []
    for target in targets:
        path = Path(target)
        if path.is_dir():
            inside = exercise_files(path, skipped)
            if not inside:
                _say_skipped(skipped)
                usage_error(texts.t("cli.check.no_files_in", target=target))
            files.extend((f, None) for f in inside)
        elif path.is_file():
            files.append((path, None))
        elif path.suffix == ".py" or "/" in target or "\\" in target:
            usage_error(texts.t("cli.check.no_such_file", target=target))
        else:
            exercise = get_exercise(target)
            candidate = folder / exercise.filename
            if not candidate.is_file():
                usage_error(texts.t("cli.check.no_attempt", file=exercise.filename, id=exercise.id))
            files.append((candidate, exercise.id))
    return files


def _exercise_for(path: Path, exercise_id: str | None) -> exercises.Exercise:
    """The exercise a file will be graded as (resolved once, here), or a usage error saying how
    to name it."""
    from attnprep.grader.engine import exercise_of

    try:
        source = path.read_bytes()[:2000].decode("utf-8", errors="replace")
        return exercise_of(path, source, exercise_id)
    except exercises.UnknownExercise as exc:
        if exercise_id or exercises.detect(source):
            usage_error(str(exc))
        usage_error(texts.t("cli.check.unknown_exercise", name=path.name))
    except OSError as exc:
        usage_error(texts.t("cli.check.unreadable", path=path, error=exc.strerror))


@app.command("check")
def check(
    targets: Optional[List[str]] = typer.Argument(None, metavar="[TARGET]...", autocompletion=complete_target, help="Exercise ids (file ID.py here) or paths; none: every exercise file here."),
    exercise_id: Optional[str] = typer.Option(None, "--exercise", "-e", autocompletion=complete_id, help="Grade the files as this exercise."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON document on stdout, nothing else."),
    device: str = typer.Option("cpu", "--device", help="cpu, or cuda to run the attempt on a GPU."),
    seed: int = typer.Option(0, "--seed", help="Seed of the weights and inputs."),
    timeout: float = typer.Option(DEFAULT_TIMEOUT, "--timeout", help="Seconds an attempt may run."),
) -> None:
    """Grade attempts against the reference: shapes, masks, softmax rows, output, and the mistake's name."""
    if device not in ("cpu", "cuda"):
        usage_error(texts.t("cli.check.bad_device", device=device))
    if timeout <= 0:
        usage_error(texts.t("cli.check.bad_timeout"))
    if exercise_id is not None:
        exercise_id = get_exercise(exercise_id).id
    skipped: list[Skipped] = []
    files = resolve_targets(list(targets or []), Path.cwd(), skipped)
    plan = [(path, _exercise_for(path, exercise_id or named)) for path, named in files]
    _say_skipped(skipped)
    if device == "cuda":
        import os

        # NVML-based check: asking the driver here would make CUDA unusable in forked children.
        os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
        import torch

        if not torch.cuda.is_available():
            usage_error(texts.t("cli.check.no_cuda"))
    results = run_checks(plan, seed=seed, device=device, timeout=timeout)
    if as_json:
        from attnprep.wording import results_json

        typer.echo(json.dumps(results_json(results), indent=2))
    else:
        from attnprep.report import render_result, render_summary

        out = console()
        for result, (_, exercise) in zip(results, plan):
            render_result(result, out, exercise=exercise)
            out.print()
        if len(results) > 1:
            render_summary(results, out)
    raise typer.Exit(EXIT_OK if all(r.passed for r in results) else EXIT_FAIL)


def run_checks(plan: list[tuple[Path, exercises.Exercise]], *, seed: int, device: str, timeout: float, record: bool = True):
    """Grade each (file, exercise) and record it in the history (a blank stub is not a run: the
    exercise is not started, and ``stats``, ``list`` and ``today`` say so)."""
    from attnprep.grader import grade
    from attnprep.paths import data_path  # the attempt may not write the user's history

    results = []
    for path, exercise in plan:
        started = time.time()
        result = grade(path, exercise, seed=seed, device=device, timeout=timeout, protect=(data_path(),))
        if record:
            record_check(result, started)
        results.append(result)
    return results


def record_check(result, started: float) -> None:
    """Record a graded attempt in the history as a `check` (not when attnprep itself failed, nor a
    blank stub: the exercise is not started, and ``stats``, ``list`` and ``today`` say so)."""
    from attnprep import history

    if not result.internal and not result.blank:
        history.record(result, kind="check", started_at=started, duration_s=result.duration_s)


DEMO = Path(__file__).resolve().parent.parent / "data" / "demo.py"  # names its exercise in its header


@app.command("demo")
def demo() -> None:
    """First-run tour: grade a bundled GQA attempt that has a classic bug, and show the report."""
    from rich.markdown import Markdown
    from rich.syntax import Syntax

    from attnprep.report import render_result

    from attnprep import texts

    out = console()
    source = DEMO.read_text(encoding="utf-8")
    exercise = exercises.get(exercises.detect(source))
    out.print(Markdown(texts.t("demo.intro", title=exercise.title, id=exercise.id)))
    focus = [line.split(":", 1)[1].strip() for line in source.splitlines()[:3] if line.startswith("# demo-focus:")]
    if focus:  # the lines of the bug, as the file's header names them
        first, last = (int(n) for n in focus[0].split("-"))
        out.print(Syntax(source, "python", line_numbers=True, line_range=(first - 4, last + 1), theme="ansi_dark"))
    result = run_checks([(DEMO, exercise)], seed=0, device="cpu", timeout=DEFAULT_TIMEOUT, record=False)[0]
    render_result(result, out, exercise=exercise)
    out.print()
    out.print(texts.t("demo.your_turn", id=exercise.id, file=exercise.filename))
    raise typer.Exit(EXIT_OK if not result.passed and not result.internal else EXIT_FAIL)
