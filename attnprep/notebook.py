"""Grading from a notebook (Jupyter, VS Code, any IPython kernel): ``%load_ext attnprep``.

- ``%%attnprep check ID`` grades the cell's code as the attempt at exercise ID; the cell itself
  never runs in the kernel.
- ``%attnprep new ID`` puts the blank stub, under ``%%attnprep check ID``, into the next cell.
- ``%attnprep check ID`` and :func:`check` (``attnprep.check("mha")``) grade the contract's
  classes or functions already defined in the notebook: their source is read from the cells that
  defined them (never run again here), with the imports, helpers and constants they use.

Each grades like ``attnprep check``: the same forked child (the attempt never runs in the
kernel's process), the same report (Rich's notebook output: HTML, with plain text beside it), the
run recorded in the history. The value is a :class:`Checked`. Loaded only by the magics and
:func:`attnprep.check`, so ``import attnprep`` stays cheap.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import linecache
import math
import shlex
import sys
import tempfile
import time
import types
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attnprep import exercises, texts
from attnprep.grader.engine import DEFAULT_TIMEOUT
from attnprep.grader.result import Result


@dataclass(frozen=True)
class Checked:
    """What a check in a notebook gives back: the verdict token, whether it passed, the named
    mistakes' ids, and the whole :class:`~attnprep.grader.result.Result` (left out of the repr)."""

    exercise: str
    verdict: str
    passed: bool
    mistakes: tuple[str, ...]
    result: Result = field(repr=False, compare=False)

    def __bool__(self) -> bool:
        return self.passed

    @classmethod
    def of(cls, result: Result) -> Checked:
        return cls(result.exercise, result.verdict.value, result.passed, tuple(d.id for d in result.diagnoses), result)


class NotebookError(ValueError):
    """Bad input to a check or a magic (an unknown id, a missing definition …): one sentence,
    which IPython shows as the whole traceback (``_render_traceback_``)."""

    def _render_traceback_(self) -> list[str]:
        return [texts.t("sys.error_prefix") + str(self)]


def _w(key: str, **values) -> str:
    return texts.t("notebook." + key, **values)


# --- the Python API ------------------------------------------------------------------------------


def check(target: str | Path, exercise: str | None = None, **options) -> Checked:
    """Grade ``target`` and show the report (``show``); the :class:`Checked` is returned.

    ``target`` is source code (several lines), a file (a ``Path``, or a string naming an existing
    file), or an exercise id: then the contract's classes or functions defined in ``namespace``
    (the caller's globals; the notebook's, in a notebook) are graded. Options: ``seed``,
    ``timeout`` (seconds), ``show``, ``namespace``, ``shown_as`` (the name in the report). Bad
    input raises :class:`NotebookError`; KeyboardInterrupt ends the child and propagates."""
    try:
        return _check(target, exercise, **options)
    except exercises.UnknownExercise as exc:
        raise NotebookError(str(exc)) from None


def _check(target: str | Path, exercise: str | None = None, *, seed: int = 0, timeout: float = DEFAULT_TIMEOUT,
          show: bool = True, namespace: dict | None = None, shown_as: str | None = None) -> Checked:
    if timeout <= 0:
        raise NotebookError(texts.t("cli.check.bad_timeout"))
    if isinstance(target, Path) or ("\n" not in target and Path(target).is_file()):
        path = Path(target)
        if not path.is_file():
            raise NotebookError(texts.t("cli.check.no_such_file", target=str(target)))
        from attnprep.grader.engine import exercise_of

        source = path.read_bytes()[:2000].decode("utf-8", errors="replace")
        resolved = exercise_of(path, source, exercise)
        return _graded(path, resolved, seed=seed, timeout=timeout, show=show, shown_as=shown_as)
    if "\n" in target:
        named = exercise or exercises.detect(target)
        if not named:
            raise NotebookError(_w("which_exercise"))
        # named after the cell that called, in a notebook; else as Python names code from a string
        return grade_source(target, exercises.get(named), seed=seed, timeout=timeout, show=show,
                            shown_as=shown_as or _this_cell() or "<string>")
    if target.endswith(".py") or "/" in target or "\\" in target:
        raise NotebookError(texts.t("cli.check.no_such_file", target=target))
    resolved = exercises.get(exercise or target)
    namespace = _caller_namespace() if namespace is None else namespace
    source, label = defined_source(resolved, namespace)
    return grade_source(source, resolved, seed=seed, timeout=timeout, show=show, shown_as=shown_as or label)


def _caller_namespace() -> dict:
    """The notebook's namespace in a kernel, else the globals of whoever called attnprep.check."""
    shell = _shell()
    if shell is not None:
        return shell.user_ns
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "attnprep":
        frame = frame.f_back
    return frame.f_globals if frame is not None else {}


def grade_source(source: str, exercise: exercises.Exercise, *, seed: int = 0, timeout: float = DEFAULT_TIMEOUT,
                 show: bool = True, shown_as: str | None = None) -> Checked:
    """Grade code given as text: written to a temporary ``<id>.py`` that is graded and removed;
    the report and the history name it ``shown_as``."""
    with tempfile.TemporaryDirectory(prefix="attnprep-notebook-") as folder:
        path = Path(folder) / exercise.filename
        path.write_text(source, encoding="utf-8")
        return _graded(path, exercise, seed=seed, timeout=timeout, show=show, shown_as=shown_as)


def _graded(path: Path, exercise: exercises.Exercise, *, seed: int, timeout: float, show: bool, shown_as: str | None) -> Checked:
    """`attnprep check`'s grading and recording, under another name when ``shown_as`` is given."""
    from attnprep.commands.grading import record_check, run_checks

    started = time.time()
    with _one_thread():
        (result,) = run_checks([(path, exercise)], seed=seed, device="cpu", timeout=timeout, record=False)
    if shown_as:
        result = replace(result, file=shown_as)
    record_check(result, started)
    if show:
        show_result(result, exercise)
    return Checked.of(result)


@contextlib.contextmanager
def _one_thread():
    """torch on one thread while grading (the grader forks, which is safe only then: the grader
    sets it once, on its first import of torch), and the kernel's own number of threads again
    afterwards, for the notebook's own work."""
    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if before is not None:
            torch.set_num_threads(before)


def show_result(result: Result, exercise: exercises.Exercise) -> None:
    """The report of `attnprep check`, as one output (in a notebook: Rich's HTML and plain text)."""
    from attnprep.app import console
    from attnprep.report import render_result

    out = console()
    report = _Gathered(out)
    render_result(result, report, exercise=exercise)
    out.print(report.renderable())  # one output in a notebook, not one per panel


class _Gathered:
    """A console for :func:`render_result` that keeps what is printed, to be printed as one
    renderable; without colour under NO_COLOR (Rich leaves the colours of its notebook HTML in)."""

    def __init__(self, console) -> None:
        self.console, self.parts = console, []

    def print(self, *renderables, **_) -> None:
        self.parts.extend(renderables or ("",))

    def __getattr__(self, name):
        return getattr(self.console, name)

    def renderable(self):
        from rich.console import Group
        from rich.segment import Segment

        group = Group(*self.parts)
        if not self.console.no_color:
            return group

        class Colourless:
            def __rich_console__(self, console, options):
                yield from Segment.remove_color(console.render(group, options))

        return Colourless()


# --- the source of what the notebook defined -----------------------------------------------------


def defined_source(exercise: exercises.Exercise, namespace: dict) -> tuple[str, str]:
    """A module of the contract's objects as the notebook defined them: the imports they need,
    then the constants, helpers and the objects themselves in an order that defines each before
    use; and the name to show it under (the cell that defined the first object). Nothing is run."""
    shell = _shell()
    cells = _cells(namespace, shell)
    imports = _imports(cells)
    missing = [name for name in exercise.contract.objects if name not in namespace]
    if missing:
        raise NotebookError(_w("not_defined", name=missing[0], file=exercise.filename))
    constants: list[str] = []
    parts: list[str] = []
    needed_imports: dict[str, str] = {}
    done: set[str] = set()
    first_cell: str | None = None

    def add(name: str) -> None:
        nonlocal first_cell
        if name in done or name not in namespace:
            return
        done.add(name)
        value = namespace[name]
        if name not in exercise.contract.objects:
            if name in imports:
                needed_imports.setdefault(name, imports[name])
                return
            if isinstance(value, types.ModuleType):
                needed_imports.setdefault(name, _import_of(name, value))
                return
            if _is_constant(value):
                constants.append(f"{name} = {_literal(value)}")
                return
            if not isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)):
                return  # an object made at run time (a tensor, a model): not code the attempt has
            module = getattr(value, "__module__", None)
            if module not in ("__main__", namespace.get("__name__")) and module in sys.modules:  # a library's
                needed_imports.setdefault(name, f"from {value.__module__} import {value.__qualname__.split('.')[0]} as {name}")
                return
        found = _definition(name, value, cells)
        if found is None:
            raise NotebookError(_w("no_source", name=name, file=exercise.filename))
        code, text = found
        for bound, line in _imports([text]).items():  # a script's own imports (a notebook's are in its cells)
            imports.setdefault(bound, line)
        if first_cell is None and name == exercise.contract.objects[0]:
            first_cell = _cell_label(text)
        for used in _free_names(code):
            add(used)
        parts.append(code)

    for name in exercise.contract.objects:
        add(name)
    ordered = sorted(dict.fromkeys(needed_imports.values()), key=lambda line: not line.startswith("from __future__"))
    source = "\n\n\n".join(block for block in ("\n".join(ordered), "\n".join(constants), *parts) if block) + "\n"
    label = first_cell or _w("kernel", names=", ".join(exercise.contract.objects))
    return source, label


def _shell():
    """The running IPython shell, or None (never imports IPython)."""
    module = sys.modules.get("IPython")
    if module is None:
        return None
    try:
        return module.get_ipython()
    except Exception:  # noqa: BLE001 — an IPython that cannot say: no shell
        return None


def _cells(namespace: dict, shell) -> list[str]:
    """The notebook's executed cells as Python (magics turned into calls), oldest first."""
    raw = namespace.get("In")
    if not isinstance(raw, list):
        return []
    cells = []
    for cell in raw:
        if not isinstance(cell, str) or not cell.strip():
            continue
        if shell is not None:
            try:
                cell = shell.transform_cell(cell)
            except Exception:  # noqa: BLE001 — a cell IPython cannot transform is no Python either
                continue
        cells.append(cell)
    return cells


def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _imports(cells: list[str]) -> dict[str, str]:
    """Each name a top-level import of a cell binds, with that import alone (the latest wins)."""
    bound: dict[str, str] = {}
    for cell in cells:
        tree = _parsed(cell)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    bound[name] = ast.unparse(ast.Import([alias]))
            elif isinstance(node, ast.ImportFrom) and not any(a.name == "*" for a in node.names):
                for alias in node.names:
                    bound[alias.asname or alias.name] = ast.unparse(ast.ImportFrom(node.module, [alias], node.level))
    return bound


def _import_of(name: str, module: types.ModuleType) -> str:
    real = module.__name__
    return f"import {real}" if real == name else f"import {real} as {name}"


def _is_constant(value: Any) -> bool:
    if isinstance(value, (bool, int, float, str, type(None))):
        return True
    return isinstance(value, tuple) and all(_is_constant(v) for v in value)


def _literal(value: Any) -> str:
    """Python that makes the constant again (``float("-inf")``, not ``-inf``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return f'float("{value}")'
    if isinstance(value, tuple):
        return "(" + "".join(_literal(v) + ", " for v in value) + ")"
    return repr(value)


def _code_of(value: Any) -> types.CodeType | None:
    """The code of a function, or of the first method of a class (where its source is)."""
    value = getattr(value, "__wrapped__", value)
    if isinstance(value, types.FunctionType):
        return value.__code__
    if isinstance(value, type):
        for member in vars(value).values():
            member = getattr(member, "__func__", None) or getattr(member, "fget", None) or member
            member = getattr(member, "__wrapped__", member)
            if isinstance(member, types.FunctionType):
                return member.__code__
    return None


def _definition(name: str, value: Any, cells: list[str]) -> tuple[str, str] | None:
    """The source of the top-level ``class``/``def`` ``name`` (with its decorators) and the text
    it was read from: the cell that compiled the object (through linecache, which IPython fills
    with every cell), else the latest cell that defines the name."""
    code = _code_of(value)
    texts_to_try: list[tuple[str, int | None]] = []
    if code is not None:
        lines = linecache.getlines(code.co_filename)
        if lines:
            texts_to_try.append(("".join(lines), code.co_firstlineno))
    texts_to_try.extend((cell, None) for cell in reversed(cells))
    for text, line in texts_to_try:
        tree = _parsed(text)
        if tree is None:
            continue
        defs = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
        if not defs:
            continue
        node = next((n for n in defs if line is not None and n.lineno <= line <= n.end_lineno), defs[-1])
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        return "\n".join(text.splitlines()[start - 1: node.end_lineno]), text
    return None


def _free_names(code: str) -> list[str]:
    """Names a definition reads but never binds itself (the globals it may need), in order of
    first use, builtins left out. (A name bound anywhere inside counts as local everywhere.)"""
    tree = _parsed(code)
    if tree is None:
        return []
    bound = {tree.body[0].name} if tree.body and hasattr(tree.body[0], "name") else set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not tree.body[0]:
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    loaded = dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return [name for name in loaded if name not in bound and not hasattr(builtins, name)]


def _cell_label(text: str) -> str | None:
    """``In [n]`` for the cell whose Python is ``text``, if the notebook still has it."""
    shell = _shell()
    raw = shell.user_ns.get("In") if shell is not None else None
    if not isinstance(raw, list):
        return None
    for number in range(len(raw) - 1, 0, -1):
        try:
            if shell.transform_cell(raw[number]) == text:
                return _w("cell", count=number)
        except Exception:  # noqa: BLE001
            continue
    return None


# --- the magics ----------------------------------------------------------------------------------


def load(shell) -> None:
    """``%load_ext attnprep``: register ``%attnprep`` / ``%%attnprep``."""
    shell.register_magic_function(magic, magic_kind="line_cell", magic_name="attnprep")


def magic(line: str, cell: str | None = None):
    """``%%attnprep check ID [--timeout S] [--seed N]`` grades the cell; ``%attnprep check ID`` the
    notebook's definitions; ``%attnprep new ID [--print]`` gives the stub. Bad input: one line."""
    try:
        command, exercise_id, options = _parse(line, cell is not None)
        exercise = exercises.get(exercise_id)
        if command == "new":
            return _new(exercise, options.get("print", False))
        if cell is not None:
            if not cell.strip():
                raise NotebookError(_w("empty_cell", id=exercise.id))
            # a first empty line for the magic's: the report's line numbers are the cell's
            return grade_source("\n" + cell, exercise, shown_as=_this_cell(), **options)
        shell = _shell()
        return check(exercise.id, namespace=shell.user_ns if shell is not None else {}, **options)
    except (NotebookError, exercises.UnknownExercise) as exc:
        sys.stderr.write(texts.t("sys.error_prefix") + str(exc) + "\n")
    except KeyboardInterrupt:  # the child is gone already (the sandbox ends it on the way out)
        sys.stderr.write(texts.t("sys.interrupted") + "\n")
    return None


def _this_cell() -> str | None:
    """``In [n]`` of the cell running now (IPython stores a cell in ``In`` before running it)."""
    shell = _shell()
    raw = shell.user_ns.get("In") if shell is not None else None
    return _w("cell", count=len(raw) - 1) if isinstance(raw, list) and len(raw) > 1 else None


def _parse(line: str, is_cell: bool) -> tuple[str, str, dict]:
    try:
        words = shlex.split(line)
    except ValueError:
        words = []
    if len(words) < 2 or words[0] not in ("check", "new") or (is_cell and words[0] != "check"):
        raise NotebookError(_w("usage"))
    command, exercise_id, rest = words[0], words[1], words[2:]
    options: dict[str, Any] = {}
    while rest:
        option = rest.pop(0)
        if command == "new" and option == "--print":
            options["print"] = True
        elif command == "check" and option in ("--timeout", "--seed") and rest:
            value = rest.pop(0)
            try:
                options[option[2:]] = float(value) if option == "--timeout" else int(value)
            except ValueError:
                raise NotebookError(_w("usage")) from None
        else:
            raise NotebookError(_w("usage"))
    if options.get("timeout", 1) <= 0:
        raise NotebookError(texts.t("cli.check.bad_timeout"))
    return command, exercise_id, options


def _new(exercise: exercises.Exercise, printed: bool) -> None:
    """The stub under ``%%attnprep check ID`` in the next cell; printed where no frontend takes it."""
    text = f"%%attnprep check {exercise.id}\n" + exercises.render_stub(exercise)
    shell = _shell()
    if printed or shell is None or not hasattr(shell, "set_next_input"):
        sys.stdout.write(text)
        return None
    shell.set_next_input(text, replace=False)
    sys.stdout.write(_w("new_next", id=exercise.id) + "\n")
    return None
