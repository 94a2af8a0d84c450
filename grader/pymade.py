"""Where a tensor made from numbers the file computed in plain Python or numpy went wrong.

The trail (:mod:`.trace`) sees torch operations only. A tensor the file makes with
``torch.tensor(slopes)`` or ``torch.from_numpy(band)`` from a list or an array it computed itself
(ALiBi slopes as a list comprehension, a mask built with ``np.abs(i - j) < window``) is, for the
trail, made out of nothing on that line: the finder can only say "made here", or the last
assignment of the list (:func:`.divergence._list_made`), not the helper's comprehension or the
numpy line that really computed the wrong numbers.

When the first wrong step the finder names is such a tensor (or is made from one on the statement
it names), a child forked like the trace child (the same sandbox, a short time limit) runs the case
again under ``sys.settrace`` for the file's frames only, from the call of the function that makes
the tensor until it is made, and keeps the plain values its lines make on the way: lists and tuples
of numbers with a float or a bool among them, and numpy arrays of floats or bools (index grids of
integers are building blocks, never kept), each with the line that made it (a statement's
assignment, or what a function or comprehension returns). The grading process then takes them in
the order they were made: a value that is the reference's (any step's values in a layout a correct
attempt may use, a run of a step's values in order, every other one of them, the logical negation
of a mask, a case input, or one repeated number) is right; the first that is none of these is where
the numbers go wrong, and its line is said. When every value is right, the finder's line stands
(the list is assembled wrongly from right parts there), as it does when the child raises, runs out
of its time, or sends back anything malformed.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import torch

from attnprep.grader.found import Found, assigned, close, is_constant, tensor_of
from attnprep.grader.parsing import last_name, parsed

CHILD_SECONDS = 2.0  # the child's time (tracing the case again under settrace), at most the grade's timeout
MAX_RECORDS = 64  # plain values sent back, in the order they were made
MAX_NUMBERS = 4096  # numbers of one value (a bigger one is not kept)
# what turns plain numbers (a list, a numpy array) into a tensor
MAKERS = {"tensor", "as_tensor", "asarray", "from_numpy", "Tensor", "FloatTensor", "BoolTensor", "DoubleTensor",
          "HalfTensor", "BFloat16Tensor"}


def python_made(found: Found | None, t, path: Path, kind, ci: int, ni: int, timeout: float, protect,
                source: str) -> Found | None:
    """``found`` as the finder said it, or the line whose plain numbers first go wrong (see the
    module doc). A help on top of the finder's line: any exception of ours leaves that line as it is."""
    import os

    try:
        return _python_made(found, t, path, kind, ci, ni, timeout, protect, source) or found
    except Exception:  # noqa: BLE001
        if os.environ.get("ATTNPREP_DEBUG"):
            raise
        return found


def _maker_lines(source: str) -> set[int]:
    """The lines of a statement that calls a maker of tensors from plain numbers (every line of it)."""
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = last_name(node.func) or ""
            if name in MAKERS and (node.args or node.keywords):
                lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _root(found: Found, att, source: str, functions) -> int | None:
    """The attempt step of the tensor made from plain numbers that the finder's line stands for: a
    step made without the inputs (no parents, no inputs) on a statement that calls a maker, either
    an ancestor of a step of the found line (or of a call through it), or, when no step is made on
    that line (the last assignment of the list, said by the finder), one made in the same function."""
    from attnprep.grader.substitute import _function_of

    makers = _maker_lines(source)
    if not makers:
        return None

    def made_plain(j: int) -> bool:
        s = att[j]
        return not s.parents and not s.inputs and s.line in makers and s.values is not None

    here = [j for j, s in enumerate(att) if s.line == found.line or found.line in (s.stack or ())[:-1]]
    if here:
        seen, todo, roots = set(), list(here), []
        while todo:
            j = todo.pop()
            if j in seen:
                continue
            seen.add(j)
            if made_plain(j):
                roots.append(j)
            todo.extend(p for p in att[j].parents if 0 <= p < j)
        return min(roots) if roots else None
    fn = _function_of(functions, found.line)
    if fn is None:
        return None
    inside = [j for j in range(len(att)) if made_plain(j) and _function_of(functions, att[j].line) == fn]
    return inside[0] if inside else None


def _python_made(found, t, path: Path, kind, ci: int, ni: int, timeout: float, protect, source: str) -> Found | None:
    from attnprep.grader import divergence, engine
    from attnprep.grader.substitute import _function_of, _functions

    if found is None or found.reason != "made" or not t.attempt or not t.reference:
        return None
    att, ref = t.attempt, t.reference
    functions = _functions(source)
    root = _root(found, att, source, functions)
    if root is None:
        return None
    matcher = divergence.Matcher(ref)
    made = tensor_of(att[root])
    if made is None or made.numel() < 2 or is_constant(made) or matcher.matches(made, att[root].dtype):
        return None  # (one number, or the tensor is right: what it is made of says nothing)
    fn = _function_of(functions, att[root].line)
    if fn is None:
        return None
    records = _run(path, kind, ci, ni, fn, root, att[root].line, min(timeout, CHILD_SECONDS), protect)
    if not records:
        return None
    case = kind.cases(ci)[ni]
    sources = [v.detach().to(torch.float64).flatten() for v in case.inputs.values() if isinstance(v, torch.Tensor)]
    refs = [r for r in (tensor_of(s) for s in ref) if r is not None and r.numel() > 0]
    statements = engine._statements(path)
    for line, name, value in records:
        if _right(value, matcher, refs, sources):
            continue
        first, code = statements.get(line, (line, ""))
        if not code:
            import linecache

            code = linecache.getline(str(path), line).strip()
        shape = tuple(value.shape)
        return Found(first, code, name or assigned(code), shape, str(shape), "made_python", fn[3].rsplit(".", 1)[-1])
    return None


def _run_of(t: torch.Tensor, refs: list[torch.Tensor]) -> bool:
    """Whether the flat ``t`` (2 numbers or more) is a run of consecutive values of a reference step."""
    n = t.numel()
    for r in refs:
        flat = r.flatten()
        if flat.numel() < n:
            continue
        windows = flat.unfold(0, n, 1)
        if bool(torch.isclose(windows, t, rtol=1e-4, atol=1e-6, equal_nan=True).all(dim=1).any()):
            return True
    return False


def _right(value: torch.Tensor, matcher, refs: list[torch.Tensor], sources: list[torch.Tensor]) -> bool:
    """Whether a plain value the file made holds the reference's numbers (see the module doc)."""
    flat = value.flatten()
    if flat.numel() < 2 or is_constant(flat):
        return True
    boolean = bool(((flat == 0) | (flat == 1)).all())
    forms = [value] + ([1 - value] if boolean else [])
    for form in forms:
        f = form.flatten()
        if matcher.matches(form.to(torch.float64), ""):
            return True
        if any(s.numel() == f.numel() and close(f, s) for s in sources):
            return True
        if _run_of(f, refs):
            return True
        if form.dim() == 1 and f.numel() >= 4 and any(_run_of(f[o::2], refs) for o in (0, 1)):
            return True  # (every other number of a longer list: the paper's 2n slopes for the rest of the heads)
    return False


def _run(path: Path, kind, ci: int, ni: int, fn, root: int, line: int, seconds: float, protect):
    """The child's plain values: [(line, name, float64 tensor)], in the order they were made, or None."""
    from attnprep.grader import child, engine, sandbox
    from attnprep.grader.tensors import unpack_shaped

    forget = child.reference_modules()  # asked before the fork (see there)
    outcome = sandbox.run_help(lambda channel: _child(path, kind, ci, ni, fn, root, line, channel, protect, forget), seconds,
                               answer=engine._answerer(kind))
    data = outcome.data
    if not isinstance(data, dict) or not isinstance(data.get("values"), list):
        return None
    records = []
    for item in data["values"][:MAX_RECORDS]:  # what the attempt's process sends is checked, never trusted
        if not (isinstance(item, list) and len(item) == 4 and isinstance(item[0], int) and not isinstance(item[0], bool)
                and isinstance(item[1], str) and isinstance(item[2], list)
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in item[2])):
            return None
        values = unpack_shaped(tuple(item[2]), item[3], MAX_NUMBERS)
        if values is None:
            return None
        records.append((item[0], item[1][:80], values))
    return records


# --- the child's side ---------------------------------------------------------------------------


def _plain(value):
    """A copy of a list / tuple of numbers with a float or a bool among them (as a list of floats), or
    of a numpy array of floats or bools (as float64); else None. No torch call here: the tracer is
    on while the values are kept."""
    if isinstance(value, (list, tuple)):
        if not 2 <= len(value) <= MAX_NUMBERS or not all(isinstance(v, (int, float)) for v in value):
            return None
        if not any(isinstance(v, (float, bool)) for v in value):
            return None  # (integers: sizes, indices)
        try:
            return [float(v) for v in value]
        except (TypeError, ValueError, OverflowError):
            return None
    module = type(value).__module__ or ""
    if module.split(".")[0] == "numpy" and hasattr(value, "dtype") and hasattr(value, "shape"):
        kind = getattr(value.dtype, "kind", "")
        size = getattr(value, "size", 0)
        if kind not in ("f", "b") or not isinstance(size, int) or not 2 <= size <= MAX_NUMBERS:
            return None
        try:
            return value.astype("float64", copy=True)
        except (TypeError, ValueError, AttributeError):
            return None
    return None


def _tensor(plain) -> torch.Tensor | None:
    """A value :func:`_plain` kept, as a float64 tensor (after the run)."""
    try:
        return torch.tensor(plain, dtype=torch.float64) if isinstance(plain, list) else torch.from_numpy(plain)
    except (TypeError, ValueError, RuntimeError):
        return None


def _child(path: Path, kind, ci: int, ni: int, fn, root: int, line: int, channel, protect, forget: list[str]) -> dict:
    """In the forked child: trace the case again, under ``sys.settrace`` for the file's frames from
    the call of ``fn`` that makes step ``root`` on, and keep the plain values made on the way."""
    from attnprep.grader import child
    from attnprep.grader.tensors import pack
    from attnprep.grader.trace import Tracer

    prepared = child.prepare(path, kind, ci, channel, protect, forget)
    if prepared is None:
        return {"values": []}
    guard, _, built = prepared
    case = kind.cases(ci)[ni]
    sources = [v for v in case.inputs.values() if isinstance(v, torch.Tensor)]
    filename = str(path)
    tracer = Tracer(sources, filename)
    first, name = fn[0], fn[3].rsplit(".", 1)[-1]
    state: dict = {"active": None, "done": False}
    records: list[tuple[int, str, object]] = []
    held: dict[tuple[int, str], object] = {}  # (frame, local) -> the object it held at the last line event
    last: dict[int, int] = {}  # frame -> the line it ran last

    def keep(at: int, local: str, value) -> None:
        if len(records) < MAX_RECORDS:
            plain = _plain(value)
            if plain is not None:
                records.append((at, local, plain))

    def local_trace(frame, event, arg):
        if state["done"]:
            return None
        fid = id(frame)
        if event in ("line", "return"):
            before = last.get(fid)
            if before is not None:  # what the statement that just ran assigned
                for local, value in list(frame.f_locals.items()):
                    if held.get((fid, local)) is not value:
                        held[(fid, local)] = value
                        keep(before, local, value)
            else:
                for local, value in list(frame.f_locals.items()):
                    held[(fid, local)] = value
            last[fid] = frame.f_lineno
        if event == "return":
            keep(frame.f_lineno, "", arg)
            last.pop(fid, None)
            if state["active"] == fid:
                state["active"] = None
                if len(tracer.steps) > root and tracer.steps[root].line == line:
                    state["done"] = True
                else:  # a call that did not make the tensor: what it made is not the story
                    records.clear()
        return local_trace

    def call_trace(frame, event, arg):
        if state["done"] or frame.f_code.co_filename != filename:
            return None
        if state["active"] is None:
            if frame.f_code.co_firstlineno != first or frame.f_code.co_name != name:
                return None
            state["active"] = id(frame)
            records.clear()
        return local_trace

    try:
        sys.settrace(call_trace)
        with guard.armed(), tracer, torch.no_grad():
            kind.run(built.attempt, case)
    except BaseException:  # noqa: BLE001 — what was kept before it raised still counts if the tensor was made
        pass
    finally:
        sys.settrace(None)
    if guard.opened or not state["done"]:
        return {"values": []}
    values = [(at, local, _tensor(v)) for at, local, v in records]
    return {"values": [[at, local, list(v.shape), pack(v)] for at, local, v in values if v is not None]}

