"""A trail of tensor operations with the source line that made each result.

:class:`Tracer` is a ``TorchFunctionMode``: every torch function a piece of code calls passes
through it. For each call whose result is a tensor derived from the traced inputs (the case's
tensors and the module's parameters), it keeps a :class:`Step`: the line of the traced file that
made it (the innermost frame in that file: a call inside ``nn.Linear`` is charged to the user's
``self.q_proj(x)`` line), the file's lines on the way there (a step inside one of the file's helper
functions also knows the line that called the helper), the function, the shape, which earlier steps
it was computed from, its values (a complex tensor keeps its real view), and the plain numbers it
was given (``scores * scale``: the ``scale``, with the variable that holds it and the line where
that variable got its value). The child records the attempt's trail this way, the grading process
the reference's; the divergence finder (:mod:`.divergence`) compares the two.

A case with no tensor inputs (a function of sizes: ``rope_cache(seq_len, head_dim)``) has nothing
to derive from: there every tensor the file makes is a step of the computation.
"""

from __future__ import annotations

import ast
import linecache
import sys
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

from attnprep.grader.parsing import defaults, parsed, walk
from attnprep.grader.tensors import pack, tensors_in, unpack

MAX_STEPS = 400  # a trail longer than this is cut (a loop over tokens)
MAX_VALUES = 20_000  # values kept per step; bigger tensors keep their shape only
MAX_SCALARS = 8  # plain numbers kept per step
# made from an input's shape, dtype and device only, never its values: a buffer, free like a mask
_SHAPED = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "new_empty", "new_zeros",
           "new_ones", "new_full"}
# made without the inputs as one number (``m = torch.tensor(0.0)``): a start value, kept as a step
# like a tensor of more axes (other 0-d tensors made without the inputs are not steps)
_START = {"tensor", "as_tensor", "scalar_tensor", "full", "zeros", "ones"} | _SHAPED
# uninitialised memory: what such a tensor holds before it is written is whatever the allocator last
# kept there (often a tensor just freed: a variant's output, a value of the reference), which a trail
# must not take for a value; it is kept as zeros, what fresh memory mostly holds (a constant, no sign
# of being on track), the same in every process whatever it computed before
_UNINITIALISED = {"empty", "empty_like", "new_empty", "empty_strided", "empty_permuted"}
_SKIP = {"__get__", "__set__", "size", "dim", "numel", "__len__", "__bool__", "__index__", "__int__", "__float__",
         "item", "tolist", "is_floating_point", "data_ptr", "stride", "element_size", "__repr__", "__format__"}


@dataclass
class Scalar:
    """A plain number a step was given: where in the call (``"1"``: the second positional argument,
    ``"0.2"``: the third item of the first, ``"dim"``: a keyword), its value, the variable of the
    line that holds it (``scale_factor``, ``self.eps``; "" for a literal or an expression), and the
    line where that variable got its value (None when unknown or given by the grader); ``size``: that
    line reads it from a tensor's shape (``B, T, C = x.shape``), a size rather than a computed number."""

    key: str
    value: float
    name: str = ""
    origin: int | None = None
    size: bool = False

    def to_data(self) -> list:
        return [self.key, self.value, self.name, self.origin, self.size]

    @classmethod
    def from_data(cls, data) -> "Scalar":
        key, value, name, origin, size = data
        if not (isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool)
                and isinstance(name, str) and (origin is None or isinstance(origin, int)) and isinstance(size, bool)):
            raise ValueError("malformed scalar")
        return cls(key[:40], float(value), name[:80], origin, size)


@dataclass
class Step:
    line: int
    code: str
    func: str
    shape: list[int]
    dtype: str
    parents: list[int] = field(default_factory=list)  # indices of earlier steps it was computed from
    # flattened float64 (a complex tensor: its real view), None when too big; on the wire the text of
    # tensors.pack (to_data / from_data)
    values: torch.Tensor | None = None
    free: bool = False  # made by the file without the inputs (a mask from torch.ones(T, T) …)
    stack: list[int] = field(default_factory=list)  # the file's lines from the outermost call in to ``line``
    scalars: list[Scalar] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)  # the traced inputs it was computed from directly, by position

    def to_data(self) -> list:
        values = pack(self.values) if self.values is not None else None
        return [self.line, self.code, self.func, self.shape, self.dtype, self.parents, values, self.free,
                self.stack, [s.to_data() for s in self.scalars], self.inputs]

    @classmethod
    def from_data(cls, data) -> "Step":
        line, code, func, shape, dtype, parents, values, free, stack, scalars, inputs = data
        if not (isinstance(line, int) and isinstance(code, str) and isinstance(func, str) and isinstance(shape, list)
                and all(isinstance(n, int) for n in shape) and isinstance(parents, list)
                and all(isinstance(p, int) for p in parents) and (values is None or isinstance(values, str))
                and isinstance(free, bool) and isinstance(stack, list) and all(isinstance(n, int) for n in stack)
                and isinstance(scalars, list) and isinstance(inputs, list) and all(isinstance(n, int) for n in inputs)):
            raise ValueError("malformed trail step")
        if values is not None:
            values = unpack(values)
            if values is None:
                raise ValueError("malformed trail step")
        return cls(line, code[:200], func[:80], shape, str(dtype)[:20], parents, values, free, stack[-20:],
                   [Scalar.from_data(s) for s in scalars[:MAX_SCALARS]], inputs[:20])


def line_end(steps: list[Step], i: int) -> int:
    """The last step of step ``i``'s line computed from it (``i`` itself when none is): what the
    line makes, not its first piece (the ``(T, 1)`` of a ``(T, T)`` mask built in one line)."""
    made, end = {i}, i
    for j in range(i + 1, len(steps)):
        if steps[j].line != steps[i].line:
            break
        if made & set(steps[j].parents):
            made.add(j)
            end = j
    return end


def _numbers(args, kwargs) -> list[tuple[str, float]]:
    """The plain numbers among a call's arguments, keyed by where they are (see :class:`Scalar`)."""
    found = []

    def number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    for i, a in enumerate(args):
        if number(a):
            found.append((str(i), a))
        elif isinstance(a, (list, tuple)) and not isinstance(a, torch.Size):
            found += [(f"{i}.{j}", v) for j, v in enumerate(a) if number(v)]
    found += [(k, v) for k, v in kwargs.items() if number(v)]
    return found[:MAX_SCALARS]


class Source:
    """The traced file's syntax, to say where a variable of a line got its value."""

    def __init__(self, filename: str):
        text = "".join(linecache.getlines(filename))
        self.tree = parsed(text) if text else ast.Module(body=[], type_ignores=[])
        self.functions: dict[int, ast.AST] = {}  # first line of a function's code -> its node
        self.classes: dict[int, ast.ClassDef] = {}  # a method's def line -> its class
        self.statements: list[ast.stmt] = []
        for node in walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.lineno] = node
                for d in node.decorator_list:
                    self.functions[d.lineno] = node
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self.classes[item.lineno] = node
            if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.statements.append(node)
        self._assigned: dict[int, dict[str, list[int]]] = {}  # id(function or module body) -> name -> lines
        self._statement: dict[int, ast.stmt | None] = {}  # line -> its statement
        self._reads: dict[int, list[str]] = {}  # line -> the variables its statement reads
        self._reads_size: dict[int, bool] = {}

    def assigned(self, fn) -> dict[str, list[int]]:
        """Each name a function's own body (``fn``; None: the module's top level) assigns, with the
        lines that assign it; worked out once per function (every traced step asks)."""
        key = id(fn) if fn is not None else 0
        found = self._assigned.get(key)
        if found is None:
            found = {}
            for node in (self.tree.body if fn is None else Source.own_nodes(fn)):
                for t in Source.targets(node):
                    if isinstance(t, ast.Name):
                        found.setdefault(t.id, []).append(node.lineno)
            self._assigned[key] = found
        return found

    def reads_size(self, line: int) -> bool:
        """Whether the statement on ``line`` reads a tensor's sizes (``.shape``, ``.size(…)``, ``len``)."""
        if line not in self._reads_size:
            self._reads_size[line] = self._sizes_read(self.statement(line))
        return self._reads_size[line]

    @staticmethod
    def _sizes_read(s: ast.stmt | None) -> bool:
        if s is None:
            return False
        for node in ast.walk(s):
            if isinstance(node, ast.Attribute) and node.attr in ("shape", "size", "ndim"):
                return True
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "len":
                return True
        return False

    def reads(self, line: int) -> list[str]:
        """The variables the statement on ``line`` reads (``x``, ``self.eps``), in order, once each."""
        if line not in self._reads:
            exprs, statement = [], self.statement(line)
            if statement is not None:
                for node in ast.walk(statement):
                    if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(getattr(node, "ctx", None), ast.Load):
                        text = Source.dotted(node)
                        if text and text not in exprs:
                            exprs.append(text)
            self._reads[line] = exprs
        return self._reads[line]

    def statement(self, line: int) -> ast.stmt | None:
        """The innermost simple statement that holds ``line``."""
        if line not in self._statement:
            best = None
            for s in self.statements:
                if s.lineno <= line <= (s.end_lineno or s.lineno) and not isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                    if best is None or s.lineno >= best.lineno:
                        best = s
            self._statement[line] = best
        return self._statement[line]

    @staticmethod
    def dotted(node) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            return f"{node.value.id}.{node.attr}"
        return ""

    @staticmethod
    def own_nodes(fn):
        """The nodes of a function's body, without the bodies of functions or classes inside it."""
        todo = list(fn.body)
        while todo:
            node = todo.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(node))

    @staticmethod
    def targets(node) -> list:
        if isinstance(node, ast.Assign):
            roots = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            roots = [node.target]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            roots = [node.target]
        elif isinstance(node, ast.NamedExpr):
            roots = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            roots = [node.optional_vars]
        else:
            return []
        out, todo = [], list(roots)
        while todo:
            t = todo.pop()
            if isinstance(t, (ast.Tuple, ast.List)):
                todo.extend(t.elts)
            elif isinstance(t, ast.Starred):
                todo.append(t.value)
            else:
                out.append(t)
        return out

    @staticmethod
    def literal(node):
        try:
            value = ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _parameters(fn) -> list[ast.arg]:
    a = fn.args
    return [*a.posonlyargs, *a.args, *a.kwonlyargs]


def _stores_other_literal(node, value) -> bool:
    """Whether assignment ``node`` stores a plain number other than ``value``."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
        return False
    number = Source.literal(node.value)
    return number is not None and number != value


def _default(fn, name: str):
    """The default expression of parameter ``name`` of ``fn``, or None."""
    return next((d for a, d in defaults(fn) if a.arg == name), None)


def _kept_values(data: torch.Tensor) -> torch.Tensor | None:
    """What a step keeps of a tensor's values: a flat float64 copy (the attempt may change the tensor in
    place), a complex tensor as its real view (…, 2), so that a complex rotation is compared like any
    tensor; None for a tensor of more than :data:`MAX_VALUES` or on the meta device."""
    if data.numel() > MAX_VALUES or data.device.type == "meta":
        return None
    real = torch.view_as_real(data.resolve_conj()) if data.is_complex() else data
    return real.to("cpu", torch.float64, copy=True).reshape(-1)


class Tracer(TorchFunctionMode):
    """Record the steps derived from ``sources`` that a file's lines make (see the module doc)."""

    def __init__(self, sources, filename: str):
        super().__init__()
        self.filename = filename
        self.keep = list(sources)  # keep the tensors alive: their ids must not be reused
        # tensor id -> step; the k-th source is -(k + 1)
        self.index: dict[int, int] = {id(t): -(k + 1) for k, t in enumerate(sources)}
        self.derive_all = not self.keep  # nothing to derive from: every tensor the file makes is a step
        self.steps: list[Step] = []
        self.raised_at: int | None = None  # the line of the file where an exception left
        self._source: Source | None = None
        self._attributes: dict[tuple, int | None] = {}  # see _attribute_origin
        self.marks: list[tuple[int, str]] = []  # (first step, label) of each part of a run (see mark())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name == "__get__" and isinstance(out, torch.Tensor) and len(self.steps) < MAX_STEPS:
            # a tensor property of a traced tensor (``w.T``, ``w.data``): derived from it, no step of
            # its own, so what is computed from it is not taken for a buffer made without the inputs
            self._derive(args, out)
        elif name == "__set__" and getattr(getattr(func, "__self__", None), "__name__", "") == "data" and len(args) == 2:
            # ``layer.weight.data = w``: the layer's weight holds w from here on (a merged layer's)
            self._derive(args[1:], args[0], again=True)
        if name in _SKIP or len(self.steps) >= MAX_STEPS:
            return out
        try:
            self._record(name, args, kwargs, out)
        except Exception:  # recording must never change what the code computes
            pass
        return out

    def _derive(self, args, out: torch.Tensor, again: bool = False) -> None:
        try:
            parents = [self.index[id(t)] for t in tensors_in(args) if id(t) in self.index]
            if parents and (again or id(out) not in self.index):
                self.index[id(out)] = max(parents)
                self.keep.append(out)
        except Exception:  # recording must never change what the code computes
            pass

    def _frames(self) -> list:
        """The frames of the traced file on the stack, innermost first."""
        frame, found = sys._getframe(1), []
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                found.append(frame)
            frame = frame.f_back
        return found

    def _record(self, name, args, kwargs, out) -> None:
        inputs = tensors_in((args, kwargs))
        parents = [self.index[id(t)] for t in inputs if id(t) in self.index]
        results = tensors_in(out)
        if not results:
            return
        frames = self._frames()
        if name in _SHAPED and not self.derive_all:
            parents = []
        if not parents and not self.derive_all:  # made without the inputs: kept (as free) when the file makes it, a mask say
            if not frames or len(results) != 1 or (results[0].dim() < 1 and name not in _START):
                return
            self._step(frames, name, results[0], [], True, args, kwargs)
            return
        free = bool(parents) and all(p >= 0 and self.steps[p].free for p in parents)
        if not frames:  # made outside the file (the grader's clone of an input): derived, not a step
            for result in results:
                if id(result) not in self.index and parents:
                    self.index[id(result)] = max(parents)
                    self.keep.append(result)
            return
        for result in results[:1] if not isinstance(out, (list, tuple)) else results:
            if id(result) in self.index and self.index[id(result)] < 0:
                continue  # an in-place op on a source
            self._step(frames, name, result, parents, free, args, kwargs)

    def _step(self, frames, name, result, parents, free: bool, args, kwargs) -> None:
        data = result.detach()
        values = _kept_values(data)
        if name in _UNINITIALISED and values is not None:
            values = torch.zeros_like(values)
        line = frames[0].f_lineno
        scalars = []
        try:
            scalars = self._scalars(frames[0], args, kwargs)
        except Exception:  # a number whose origin cannot be read is only a number
            scalars = [Scalar(k, float(v)) for k, v in _numbers(args, kwargs)]
        self.steps.append(Step(line, linecache.getline(self.filename, line).strip(), name, list(data.shape),
                               str(data.dtype).replace("torch.", ""), sorted({p for p in parents if p >= 0}), values,
                               free, [f.f_lineno for f in reversed(frames)], scalars,
                               sorted({-p - 1 for p in parents if p < 0})))
        self.index[id(result)] = len(self.steps) - 1
        self.keep.append(result)

    # --- where a number of a line got its value ---------------------------------------------------

    def _scalars(self, frame, args, kwargs) -> list[Scalar]:
        numbers = _numbers(args, kwargs)
        if not numbers:
            return []
        if self._source is None:
            self._source = Source(self.filename)
        exprs = self._source.reads(frame.f_lineno)  # x, self.eps, …
        out = []
        for key, value in numbers:
            holders = [e for e in exprs if self._same(self._value(frame, e), value)]
            name, origin = "", None
            if len(holders) == 1:
                name = holders[0]
                origin = self._origin(frame, name, value, 0)
            elif holders:  # several variables hold it (H and D both 4): named only when they agree on a line
                origins = {self._origin(frame, h, value, 0) for h in holders}
                name = ", ".join(holders)
                origin = origins.pop() if len(origins) == 1 else None
            out.append(Scalar(key, float(value), name, origin, origin is not None and self._source.reads_size(origin)))
        return out

    @staticmethod
    def _same(found, value) -> bool:
        return isinstance(found, (int, float)) and not isinstance(found, bool) and found == value

    @staticmethod
    def _value(frame, expr: str):
        """The value of ``name`` or ``name.attr`` in ``frame`` (instance attributes only: no code runs)."""
        head, _, attr = expr.partition(".")
        missing = object()
        obj = frame.f_locals.get(head, missing)
        if obj is missing:
            obj = frame.f_globals.get(head, missing)
        if obj is missing:
            return None
        if not attr:
            return obj
        try:
            return object.__getattribute__(obj, "__dict__").get(attr)
        except (AttributeError, TypeError):
            return None

    def _origin(self, frame, expr: str, value, depth: int) -> int | None:
        """The line of the file where ``expr`` (read by ``frame``'s current line) got ``value``."""
        if depth > 4:
            return None
        src = self._source
        head, _, attr = expr.partition(".")
        fn = src.functions.get(frame.f_code.co_firstlineno)
        if attr:
            return self._attribute_origin(fn, head, attr, value)
        if fn is None:  # module level
            return self._last_assigned(src.assigned(None), head, frame.f_lineno)
        line = self._last_assigned(src.assigned(fn), head, frame.f_lineno)
        if line is not None:
            return line
        if head in {a.arg for a in _parameters(fn)}:
            return self._parameter_origin(frame, fn, head, value, depth)
        if head in frame.f_globals:
            return self._last_assigned(src.assigned(None), head, 10**9)
        return None

    @staticmethod
    def _last_assigned(assigned: dict[str, list[int]], name: str, before: int) -> int | None:
        return max((n for n in assigned.get(name, ()) if n <= before), default=None)

    def _parameter_origin(self, frame, fn, name: str, value, depth: int) -> int | None:
        """A parameter's value: the argument of the file's call that passed it, else its default."""
        caller = frame.f_back
        if caller is not None and caller.f_code.co_filename == self.filename:
            arg = self._argument(caller, fn, name)
            if arg is not None:
                text = Source.dotted(arg)
                if text and self._same(self._value(caller, text), value):
                    return self._origin(caller, text, value, depth + 1)
                return caller.f_lineno
        default = _default(fn, name)
        if default is not None and Source.literal(default) == value:
            return default.lineno
        return None

    def _argument(self, caller, fn, name: str):
        """The expression the caller's current statement passes as parameter ``name`` of ``fn``."""
        statement = self._source.statement(caller.f_lineno)
        if statement is None:
            return None
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called != fn.name:
                continue
            for kw in node.keywords:
                if kw.arg == name:
                    return kw.value
            positional = params[1:] if isinstance(node.func, ast.Attribute) and params[:1] == ["self"] else params
            if name in positional and positional.index(name) < len(node.args):
                arg = node.args[positional.index(name)]
                return None if isinstance(arg, ast.Starred) else arg
        return None

    def _attribute_origin(self, fn, head: str, attr: str, value) -> int | None:
        """``self.attr``: the line of the class that sets it; when that line stores a parameter of
        ``__init__``, the file's construction that passes the value, or the parameter's default
        (worked out once per function, attribute and value: the file does not change)."""
        key = (id(fn), head, attr, value)
        if key not in self._attributes:
            self._attributes[key] = self._find_attribute_origin(fn, head, attr, value)
        return self._attributes[key]

    def _find_attribute_origin(self, fn, head: str, attr: str, value) -> int | None:
        src = self._source
        cls = src.classes.get(fn.lineno) if fn is not None else None
        if cls is None:
            return None
        sets = []
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in Source.own_nodes(method):
                for t in Source.targets(node):
                    if isinstance(t, ast.Attribute) and Source.dotted(t) == f"{head}.{attr}":
                        sets.append((method, node))
        if not sets:
            return None
        # a line that stores another literal (`self.scaling = 0.0` declared, then computed in a
        # method) is not where the value came from
        sets = [s for s in sets if not _stores_other_literal(s[1], value)] or sets
        method, node = max(sets, key=lambda s: (s[0].name == "__init__", s[1].lineno))
        rhs = getattr(node, "value", None)
        if isinstance(node, ast.Assign) and isinstance(rhs, ast.Name) and rhs.id in {a.arg for a in _parameters(method)}:
            param = rhs.id
            passed = []
            for call in walk(src.tree):
                if isinstance(call, ast.Call) and getattr(call.func, "id", getattr(call.func, "attr", "")) == cls.name:
                    params = [a.arg for a in [*method.args.posonlyargs, *method.args.args]][1:]
                    arg = next((kw.value for kw in call.keywords if kw.arg == param), None)
                    if arg is None and param in params and params.index(param) < len(call.args):
                        arg = call.args[params.index(param)]
                    if arg is not None and Source.literal(arg) == value:
                        passed.append(arg.lineno)
            if len(passed) == 1:
                return passed[0]
            default = _default(method, param)
            if not passed and default is not None and Source.literal(default) == value:
                return default.lineno
        return node.lineno

    def mark_outputs(self, outputs) -> dict[str, int]:
        """The steps that made the named outputs of a run (``{"out": tensor}``), by output name."""
        found = {}
        if isinstance(outputs, dict):
            for key, value in outputs.items():
                tensors = tensors_in(value)
                if tensors and id(tensors[0]) in self.index and self.index[id(tensors[0])] >= 0:
                    found[str(key)[:80]] = self.index[id(tensors[0])]
        return found

    def finalise(self, outputs, marked: dict[str, int]) -> None:
        """The steps ``marked`` (:meth:`mark_outputs`) given the values their outputs hold now: a tensor
        made empty (or zeros) and then filled by slice writes is recorded at its making, before the writes."""
        if not isinstance(outputs, dict):
            return
        for key, value in outputs.items():
            at = marked.get(str(key)[:80])
            tensors = tensors_in(value)
            if at is None or not tensors:
                continue
            data = tensors[0].detach()
            step, values = self.steps[at], _kept_values(data)
            if list(data.shape) == list(step.shape) and values is not None:
                step.values = values

    def note_exception(self, exc: BaseException) -> None:
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        self.raised_at = line


def tracing() -> bool:
    """Whether a :class:`Tracer` is recording (a kind gives its trail what only a trail needs)."""
    return any(isinstance(mode, Tracer) for mode in torch.overrides._get_current_function_mode_stack())


def add_sources(tensors) -> None:
    """Count ``tensors`` as traced inputs from here on, after the case's, in every active
    :class:`Tracer`: a method that computes from the module's weights alone (LoRA's ``merged()``)
    then leaves a trail of steps derived from them, not of buffers made without the inputs."""
    for mode in torch.overrides._get_current_function_mode_stack():
        if isinstance(mode, Tracer):
            mode.derive_all = False
            for t in tensors:
                if id(t) not in mode.index:
                    mode.index[id(t)] = -(sum(1 for v in mode.index.values() if v < 0) + 1)
                    mode.keep.append(t)


OBJECT = "object: "  # the label of a part that runs one object of the exercise (RMSNorm, then LayerNorm)


def mark_object(name: str) -> None:
    """:func:`mark` for the run of one object of the exercise: a step of it stands for the same
    object's steps of the reference only (an RMSNorm's centred x is not the LayerNorm's)."""
    mark(OBJECT + name)


def mark(label: str) -> None:
    """Note in every active :class:`Tracer` that the steps from here on belong to ``label`` (one call
    of a script of calls: "step 3 (pos 6..8)"); nothing when none is active."""
    for mode in torch.overrides._get_current_function_mode_stack():
        if isinstance(mode, Tracer):
            mode.marks.append((len(mode.steps), str(label)[:80]))
