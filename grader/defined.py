"""A wrong number read on the finder's line but defined on another: that other line is said.

When the divergence finder blames a line for a wrong number (reason ``scalar`` or ``scaled``: the
tensors going in are right, the factor is not; or ``values`` for a literal), and the only number
the line *reads* from elsewhere (``self.cfg.softmax_scale``, ``self.scaling["default"]``,
``self.eps``, a module constant) is not computed on that line, the line that gives it its value
is where the mistake was typed: a property's return, a dataclass field's default, a class
attribute, the literal of a ``self.x = ...``, a dict entry (``self.x = <arithmetic of the sizes>``
is not followed: the corpus has such a scale right and applied to a part too early, where the
finder's line is the one to say). This module follows such a read
statically, through the file's own ``ast``, across plain hand-ons (``self.eps = eps`` with the
argument from every call of the class in the file, ``cfg = self.config = Config(...)``), and says
the defining line only when every way leads to the same one. Nothing runs; nothing here names an
exercise.
"""

from __future__ import annotations

import ast

from attnprep.grader.parsing import defaults, kept_for, parsed, top_function, walk

REASONS = frozenset({"scalar", "scaled"})  # a number on the line is wrong
LITERAL_REASONS = frozenset({"values"})  # only when the definition is a literal number
MAX_HOPS = 6
_MATH = frozenset({"math", "np", "numpy"})
_NUMERIC_CALLS = frozenset({"float", "abs", "pow"})


def defining_line(source: str, line: int, reason: str) -> int | None:
    """The line that defines the one number the statement on ``line`` reads from elsewhere, when
    ``reason`` says a number is wrong and that line is unambiguous; else None."""
    if reason not in REASONS and reason not in LITERAL_REASONS:
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None
    files = _file_of(tree)
    stmt, func, cls = files.statement_at(line)
    if stmt is None or func is None:
        return None
    targets = set()
    reads = list(_reads(stmt)) or list(_keyword_reads(stmt))
    for read in reads:
        found = files.resolve(read, func, cls, MAX_HOPS)
        if found is None:
            continue
        target, literal = found
        if reason in LITERAL_REASONS and not literal:
            continue
        targets.add(target)
    if len(targets) != 1:
        return None
    (target,) = targets
    return target if abs(target - line) > 1 else None


def _reads(stmt: ast.stmt):
    """The operands of the statement's arithmetic read from elsewhere: ``self.a.b``, ``self.d[k]``,
    a bare name (a module constant), as a direct operand of ``* / + - **``."""
    value = stmt.value if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)) else None
    if value is None:
        return
    for node in ast.walk(value):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div, ast.Add, ast.Sub, ast.Pow)):
            for operand in (node.left, node.right):
                if _chain(operand) is not None or _getter(operand) or _handing_call(operand):
                    yield operand
    if isinstance(stmt, ast.AugAssign) and (_chain(stmt.value) is not None or _getter(stmt.value)):
        yield stmt.value
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and (_chain(value) is not None or _getter(value)
                                                            or _handing_call(value)):
        yield value  # a hand-on (`self.scaling = config.attention_multiplier`): the number it passes on
    elif isinstance(stmt, ast.Assign) and isinstance(value, ast.Tuple):  # D, scale = self.head_dim, self.scale
        yield from (e for e in value.elts if _chain(e) is not None or _getter(e))


def _keyword_reads(stmt: ast.stmt):
    """A number handed to a call of the statement by keyword from elsewhere (``softmax(dim=
    self.cfg["softmax_axis"])``), read when the statement has no arithmetic read (:func:`_reads`)."""
    for node in ast.walk(stmt):
        if isinstance(node, ast.Call):
            for k in node.keywords:
                if k.arg is not None and _chain(k.value) is not None and len(_chain(k.value)) > 1:
                    yield k.value


def _getter(node) -> bool:
    """A call without arguments of a member (``self.getScale()``, ``cfg.scale()``): a getter whose
    one return may compute the number."""
    return (isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute)
            and _chain(node.func) is not None)


def _arithmetic_of_sizes(node) -> bool:
    """Arithmetic (``/ * ** + -``, math / torch square roots) of numbers, names and sizes read from
    shapes (``value.shape[-1]``, ``q.size(-1)``): a factor made from them, as a scale is."""
    if not isinstance(node, ast.BinOp) or isinstance(node.op, (ast.MatMult, ast.FloorDiv)):
        return False

    def leaf(n) -> bool:
        if isinstance(n, ast.Constant):
            return isinstance(n.value, (int, float))
        if isinstance(n, ast.UnaryOp):
            return leaf(n.operand)
        if isinstance(n, ast.BinOp):
            return not isinstance(n.op, ast.MatMult) and leaf(n.left) and leaf(n.right)
        if isinstance(n, ast.Name):
            return True
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) and n.value.attr == "shape":
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "size":
                return True
            if n.func.attr in ("sqrt", "rsqrt") and isinstance(n.func.value, ast.Name) and n.func.value.id in _MATH | {"torch"}:
                return all(leaf(a) for a in n.args)
        return _chain(n) is not None and not (isinstance(n, ast.Attribute) and n.attr == "shape")

    return leaf(node)


def _handing_call(node) -> bool:
    """A call of a method or function that is given only names, as they are (``self.scaling_for(r,
    alpha)``, ``softmax_scale(head_dim=head_dim)``): its return may compute the number from them."""
    return (isinstance(node, ast.Call) and bool(node.args or node.keywords)
            and all(isinstance(a, ast.Name) for a in node.args)
            and all(k.arg is not None and isinstance(k.value, ast.Name) for k in node.keywords)
            and (isinstance(node.func, ast.Name) or (isinstance(node.func, ast.Attribute)
                                                      and isinstance(node.func.value, ast.Name))))


def _abstract(method: ast.FunctionDef) -> bool:
    """A method whose body (past a docstring) only raises ``NotImplementedError``: a hook (the template-
    method pattern) that a subclass fills in."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def _derives(cls: ast.ClassDef, base: ast.ClassDef, classes: dict, hops: int = 4) -> bool:
    """``cls`` is a class of the file derived from ``base`` (through the file's own classes), not ``base`` itself."""
    for b in cls.bases:
        if isinstance(b, ast.Name) and b.id in classes and hops > 0:
            if classes[b.id] is base or _derives(classes[b.id], base, classes, hops - 1):
                return True
    return False


def _method_of(cls: ast.ClassDef, name: str, classes: dict):
    """The method ``name`` of ``cls`` or of its one base in the file."""
    for item in cls.body:
        if isinstance(item, ast.FunctionDef) and item.name == name:
            return item
    bases = [classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes]
    return _method_of(bases[0], name, classes) if len(bases) == 1 else None


def _is_staticmethod(decorator) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


def _chain(node) -> list | None:
    """``self.a.b["k"]`` as ["self", "a", "b", ("k",)]; None for anything else."""
    parts = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            parts.append((node.slice.value,))
            node = node.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return parts[::-1]
        else:
            return None


def _numeric(node, literal_only: bool = False) -> bool:
    """A number: a literal, or (unless ``literal_only``) arithmetic of numbers, names and math calls."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, complex)
    if isinstance(node, ast.UnaryOp):
        return _numeric(node.operand, literal_only)
    if literal_only:
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv):
        return False  # a size (a head's width): right where it shapes tensors, not a factor typed wrong
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return False  # a matrix product (B @ A): a tensor, not a number
    if isinstance(node, ast.BinOp):
        return _numeric(node.left) and _numeric(node.right)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _chain(node) is not None and not (isinstance(node, ast.Attribute) and node.attr in ("shape", "size"))
    if isinstance(node, ast.Call):
        f = node.func
        named = (isinstance(f, ast.Name) and f.id in _NUMERIC_CALLS) or (
            isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in _MATH)
        return named and all(_numeric(a) or _size(a) for a in node.args) and not node.keywords
    return False


def _size(node) -> bool:
    """A size worked out by floor division (``self.dim // self.heads``): a number once inside a
    math call (``math.sqrt(self.dim // self.heads)``), where it makes a factor."""
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.FloorDiv) and _numeric(node.left) and _numeric(node.right)


def _takes_only_self(func: ast.FunctionDef) -> bool:
    a = func.args
    return (len(a.args) == 1 and not a.posonlyargs and not a.kwonlyargs and a.vararg is None and a.kwarg is None
            and not func.decorator_list)


_FILES: dict[int, tuple[ast.Module, "_File"]] = {}  # id of a shared tree (parsing.parsed) -> (it, its _File)
FILES_KEPT = 8


def _file_of(tree: ast.Module) -> "_File":
    """The :class:`_File` of a tree :func:`parsing.parsed` shares (nothing here changes a tree),
    made once: its parents are a walk of the whole tree."""
    return kept_for(_FILES, tree, _File, FILES_KEPT)


class _File:
    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        self.parent = {}
        for node in walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    def statement_at(self, line: int):
        best = None
        for node in walk(self.tree):
            if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) \
                    and node.lineno <= line <= (node.end_lineno or node.lineno):
                if best is None or node.lineno >= best.lineno:
                    best = node
        if best is None:
            return None, None, None
        func = cls = None
        node = best
        while node in self.parent:
            node = self.parent[node]
            if func is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                func = node
            elif isinstance(node, ast.ClassDef):
                cls = node
                break
        return best, func, cls

    def _enclosing(self, node):
        func = cls = None
        while node in self.parent:
            node = self.parent[node]
            if func is None and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                func = node
            elif isinstance(node, ast.ClassDef):
                cls = node
                break
        return func, cls

    # -- following a read --------------------------------------------------------------------

    def resolve(self, node, func, cls, hops: int, called: bool = False):
        """(defining line, is a literal) of the number ``node`` reads, or None."""
        if _getter(node):  # self.getScale(): the method's one return, as a property's
            return self.resolve(node.func, func, cls, hops, called=True)
        if _handing_call(node):  # self.scaling_for(r, alpha): its one return, given them as they are
            return self._computed_by(node, cls)
        chain = _chain(node)
        if chain is None or hops <= 0:
            return None
        head, rest = chain[0], chain[1:]
        if head == "self" and cls is not None and func is not None and _first_arg(func) == "self":
            return self._member(("class", cls, None), rest, hops, called)
        params = {a.arg for a in func.args.args + func.args.kwonlyargs + func.args.posonlyargs} if func else set()
        if head in params:
            if not rest:
                return self._parameter(func, cls, head, hops)
            default = self._unpassed_default(func, cls, head)
            if default is not None:  # cfg=CONFIG, never given: CONFIG["attention"]…
                return self._follow_chain(default, rest, None, None, hops - 1)
            return None
        if func is not None and _assigns(func, head):
            if not rest:  # a local computed on another line of the same function: that line's own choice
                return None
            value = _single_local(func, head)
            if value is None:
                return None
            return self._member(self._kind(value, func, cls, hops), rest, hops, called)
        value = _single_module(self.tree, head)
        if value is None:
            return None
        return self._member(self._kind(value, None, None, hops), rest, hops, called)

    def _kind(self, value, func, cls, hops):
        """What an assigned expression is: an instance of a class of the file, or a value."""
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in self.classes:
            return ("class", self.classes[value.func.id], value)
        return ("value", value, (func, cls))

    def _member(self, kind, rest, hops, called: bool = False):
        if kind is None:
            return None
        if kind[0] == "value":
            value, (func, cls) = kind[1], kind[2]
            if not rest:
                return None if called else self._value(value, func, cls, hops)
            if isinstance(value, ast.Call) and len(rest) == 1 and isinstance(rest[0], str) and not called:
                # a namespace made by a call (SimpleNamespace(eps=1e-5, …)).eps: the keyword's value
                given = [k.value for k in value.keywords if k.arg == rest[0]]
                if len(given) == 1 and not any(k.arg is None for k in value.keywords):
                    return self._value(given[0], func, cls, hops - 1)
            if isinstance(value, ast.Dict) and isinstance(rest[0], tuple) and len(rest) == 1:
                entries = [v for k, v in zip(value.keys, value.values)
                           if isinstance(k, ast.Constant) and k.value == rest[0][0]]
                if len(entries) == 1 and _numeric(entries[0], True):
                    return entries[0].lineno, True
            if isinstance(value, ast.Dict) and isinstance(rest[0], tuple) and len(rest) > 1 and not called:
                # a nested table ({"attention": {"softmax_axis": -2}}): the one entry, then the rest
                entries = [v for k, v in zip(value.keys, value.values)
                           if isinstance(k, ast.Constant) and k.value == rest[0][0]]
                if len(entries) == 1 and None not in value.keys:
                    return self._member(("value", entries[0], (func, cls)), rest[1:], hops - 1)
            if _chain(value) is not None:  # a hand-on: follow it, then the rest
                return self._follow_chain(value, rest, func, cls, hops - 1)
            return None
        cls, call = kind[1], kind[2]
        if not rest:
            return None
        name = rest[0]
        if not isinstance(name, str):
            return None
        if len(rest) > 1 and not called:
            handed = self._handed_chain(cls, name)
            if handed is not None:  # self.cfg = cfg["attention"]: read on through what it hands on
                return self._follow_chain(handed[0], rest[1:], handed[1], cls, hops - 1)
        found = self._attribute(cls, call, name, hops, called and len(rest) == 1)
        if found is None:
            return None
        if len(rest) == 1:
            return found if isinstance(found, tuple) and isinstance(found[0], int) else None
        if isinstance(found, tuple) and found and found[0] in ("class", "value"):
            return self._member(found, rest[1:], hops - 1)
        return None

    def _follow_chain(self, value, rest, func, cls, hops):
        fake = value
        for part in rest:
            fake = ast.Subscript(value=fake, slice=ast.Constant(part[0])) if isinstance(part, tuple) \
                else ast.Attribute(value=fake, attr=part)
        return self.resolve(fake, func, cls, hops)

    def _value(self, value, func, cls, hops):
        """The defining line of an assigned value: its own line when it is a number computed
        there, else where a hand-on leads."""
        if _numeric(value, True):
            return value.lineno, True
        if _chain(value) is not None:
            return self.resolve(value, func, cls, hops - 1)
        if _numeric(value):
            return value.lineno, False
        return None

    def _handed_chain(self, cls, name):
        """(value, method) when the one definition of attribute ``name`` in ``cls`` is ``self.name =
        <a chain>`` (``self.cfg = cfg["attention"]``) and it is not a dataclass field or class member."""
        defs = []
        for item in cls.body:
            if isinstance(item, (ast.Assign, ast.AnnAssign)) and any(
                    isinstance(t, ast.Name) and t.id == name for t in getattr(item, "targets", [getattr(item, "target", None)])):
                return None
            if isinstance(item, ast.FunctionDef) and item.name == name:
                return None
        for method in (i for i in cls.body if isinstance(i, ast.FunctionDef)):
            for node in ast.walk(method):
                for target, value in _self_assignments(node, method):
                    if target == name:
                        defs.append((value, method))
        if len(defs) != 1 or defs[0][0] is None or _chain(defs[0][0]) is None:
            return None
        return defs[0]

    def _attribute(self, cls, call, name, hops, called: bool = False):
        """Where attribute ``name`` of an instance of ``cls`` (built by ``call`` when known) is defined:
        (line, literal) of a number, or a kind to go on from; None when unknown or ambiguous.
        ``called``: the member is called without arguments, a method taking only ``self`` is read
        as a property is."""
        defs = []
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == name and (
                    _is_property(item) if not called else _takes_only_self(item)):
                returns = [n for n in ast.walk(item) if isinstance(n, ast.Return) and n.value is not None]
                if len(returns) == 1:
                    defs.append(("property", returns[0], item))
                else:
                    return None
            elif isinstance(item, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in item.targets):
                defs.append(("class", item.value, None))
            elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == name:
                defs.append(("field", item, None))
        for method in (i for i in cls.body if isinstance(i, ast.FunctionDef)):
            for node in ast.walk(method):
                for target, value in _self_assignments(node, method):
                    if target == name:
                        defs.append(("self", value, method))
                derived = _set_through_object(node, method)
                if derived is not None and derived[0] == name:  # a frozen dataclass's derived field
                    defs.append(("derived", derived[1], method))
        if len(defs) > 1:  # a field declared without a value (field(init=False)) and set elsewhere: the setting
            defs = [d for d in defs if not (d[0] == "field" and _declared_only(d[1]))]
        if not defs:
            bases = [self.classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in self.classes]
            if len(bases) == 1:
                return self._attribute(bases[0], None, name, hops, called)
            return None
        if len(defs) != 1:
            return None
        how, node, method = defs[0]
        if called and how != "property":
            return None
        if how in ("property", "derived"):
            value = node.value if how == "property" else node
            if _numeric(value):
                return value.lineno, _numeric(value, True)
            return None
        if how == "class":
            if _numeric(node) or _chain(node) is not None:
                return self._value(node, None, cls, hops)
            return self._kind(node, None, cls, hops)
        if how == "field":
            if node.value is None or not _is_dataclass(cls) or call is None or _field_given(cls, call, name):
                return None
            return self._value(node.value, None, cls, hops)
        if node is None:
            return None
        kind = self._kind(node, method, cls, hops)
        if kind[0] == "class" or isinstance(node, (ast.Dict, ast.Call)):
            return kind  # an instance, a table, a namespace made by a call (self.cfg = SimpleNamespace(…)): read on
        if _numeric(node) and not _numeric(node, True) and _chain(node) is None:
            return None  # self.x = arithmetic of the sizes: a scale applied to a part too early is blamed there too
        return self._value(node, method, cls, hops)

    def _computed_by(self, call: ast.Call, cls):
        """The line of the one return of the class's method (or the file's function) ``call`` calls,
        when that return is arithmetic of the method's own parameters and the call hands each of them
        on under its own name (``self.scaling_for(r, alpha)`` of ``def scaling_for(cls, r, alpha):
        return r / alpha``): the arithmetic there is where the number is made. A call that gives
        anything else (another name, a literal, in another order) leaves the number to the call."""
        f = call.func
        method = None
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and cls is not None:
            if f.value.id in ("self", "cls", cls.name):
                method = _method_of(cls, f.attr, self.classes)
                if method is not None and _abstract(method):  # a hook the one subclass of the file fills in
                    overrides = [m for c in self.classes.values() if _derives(c, cls, self.classes)
                                 for m in c.body if isinstance(m, ast.FunctionDef) and m.name == f.attr]
                    method = overrides[0] if len(overrides) == 1 else None
        elif isinstance(f, ast.Name):
            method = top_function(self.tree, f.id)
        if method is None:
            return None
        params = [a.arg for a in method.args.args]
        if isinstance(f, ast.Attribute) and not any(_is_staticmethod(d) for d in method.decorator_list):
            params = params[1:]  # self / cls
        given = [a.id for a in call.args] + [k.arg for k in call.keywords]
        positional = [a.id for a in call.args]
        if len(given) != len(params) or positional != params[:len(positional)] \
                or any(k.arg != k.value.id for k in call.keywords) or set(given) != set(params):
            return None
        returns = [n for n in ast.walk(method) if isinstance(n, ast.Return) and n.value is not None]
        # a number made of the parameters, or of sizes read from a tensor parameter (1 / sqrt(q.size(-1)))
        if len(returns) != 1 or not (_numeric(returns[0].value) or _arithmetic_of_sizes(returns[0].value)) \
                or _numeric(returns[0].value, True):
            return None
        value = returns[0].value
        used = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
        if not used & set(params):
            return None
        return value.lineno, False

    def _given_by_callers(self, func, name):
        """A module-level function's parameter that every call of it in the file gives as a local
        variable of the caller, set once there by arithmetic (``scale = 1.0 / math.sqrt(value.shape[-1])``
        before ``_calculate_scores(query, key, scale)``): that arithmetic's line, when every call
        leads to the same one. A literal, an expression written in the call, or a hand-on of another
        variable leaves the number to the lines already said."""
        params = [a.arg for a in func.args.args]
        if name not in params:
            return None
        at = params.index(name)
        calls = [n for n in walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == func.name]
        targets = set()
        for call in calls:
            arg = next((k.value for k in call.keywords if k.arg == name), None)
            if arg is None and at < len(call.args):
                arg = call.args[at]
            caller, _ = self._enclosing(call)
            if not isinstance(arg, ast.Name) or caller is None or caller is func:
                return None
            value = _single_local(caller, arg.id)
            if value is None or not _arithmetic_of_sizes(value):
                return None
            targets.add(value.lineno)
        return (targets.pop(), False) if len(targets) == 1 else None

    def _unpassed_default(self, func, cls, name):
        """The default of ``__init__``'s parameter ``name`` when it is a module-level table or object
        made by a call, or a chain into one (``cfg=CONFIG``), and the file never builds the class: the
        grader builds it with the contract's arguments, numbers (``dropout=0.0``, ``eps=EPS``), never
        a config object, so the parameter keeps its default."""
        if func is None or func.name != "__init__" or cls is None:
            return None
        if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == cls.name for n in walk(self.tree)):
            return None
        default = {a.arg: d for a, d in defaults(func)}.get(name)
        chain = _chain(default) if default is not None else None
        if chain is None or chain[0] in ("self", "cls"):
            return None
        table = _single_module(self.tree, chain[0])
        if not isinstance(table, (ast.Dict, ast.Call)):  # a config object, never one of the contract's numbers
            return None
        return default

    def _parameter(self, func, cls, name, hops):
        """A method's argument: followed into every call of its class in the file (``__init__``)."""
        if cls is None and func in self.tree.body:
            return self._given_by_callers(func, name)
        if func.name != "__init__" or cls is None:
            return None
        default = self._unpassed_default(func, cls, name)
        if default is not None:
            return self.resolve(default, None, None, hops - 1)
        positional = [a.arg for a in func.args.args][1:]
        targets = set()
        calls = [n for n in walk(self.tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == cls.name]
        if not calls:
            return None
        for call in calls:
            arg = next((k.value for k in call.keywords if k.arg == name), None)
            if arg is None and name in positional and positional.index(name) < len(call.args):
                arg = call.args[positional.index(name)]
            if arg is None or isinstance(arg, ast.Starred):
                return None
            at, where = self._enclosing(call)
            found = self._value(arg, at, where, hops - 1)
            if found is None:
                return None
            targets.add(found)
        return targets.pop() if len(targets) == 1 else None


def _first_arg(func) -> str | None:
    return func.args.args[0].arg if func.args.args else None


def _is_property(func: ast.FunctionDef) -> bool:
    return any((isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
               or (isinstance(d, ast.Attribute) and d.attr == "cached_property") for d in func.decorator_list)


def _is_dataclass(cls: ast.ClassDef) -> bool:
    for d in cls.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        if (isinstance(d, ast.Name) and d.id == "dataclass") or (isinstance(d, ast.Attribute) and d.attr == "dataclass"):
            return True
    return False


def _field_given(cls: ast.ClassDef, call: ast.Call, name: str) -> bool:
    fields = [i.target.id for i in cls.body if isinstance(i, ast.AnnAssign) and isinstance(i.target, ast.Name)]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    return any(k.arg == name for k in call.keywords) or fields.index(name) < len(call.args)


def _self_assignments(node, method):
    """(attribute, value) pairs of ``self.x = v`` / ``self.x, self.y = a, b`` / ``a = self.x = v``."""
    if not isinstance(node, (ast.Assign, ast.AnnAssign)) or _first_arg(method) is None:
        return
    me = _first_arg(method)
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    for target in targets:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
            yield target.attr, node.value
        elif isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(target.elts) == len(node.value.elts):
            for t, v in zip(target.elts, node.value.elts):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                    yield t.attr, v
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
                    yield t.attr, None  # unpacked from a value not read here: unknown


def _set_through_object(node, method):
    """(attribute, value) of ``object.__setattr__(self, "x", v)``, how a frozen dataclass sets a field
    it derives in ``__post_init__``; else None."""
    me = _first_arg(method)
    if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and me is not None):
        return None
    call = node.value
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "__setattr__" and isinstance(f.value, ast.Name)
            and f.value.id == "object" and len(call.args) == 3 and not call.keywords):
        return None
    who, what, value = call.args
    if isinstance(who, ast.Name) and who.id == me and isinstance(what, ast.Constant) and isinstance(what.value, str):
        return what.value, value
    return None


def _declared_only(field: ast.AnnAssign) -> bool:
    """A dataclass field without a default of its own: ``x: float`` or ``x: float = field(init=False)``."""
    v = field.value
    if v is None:
        return True
    f = v.func if isinstance(v, ast.Call) else None
    named = (isinstance(f, ast.Name) and f.id == "field") or (isinstance(f, ast.Attribute) and f.attr == "field")
    return named and not any(k.arg in ("default", "default_factory") for k in v.keywords)


def _assigns(func, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(func))


def _single_local(func, name: str):
    values = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            values.append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.With)) or isinstance(node, ast.Assign):
            stores = [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)]
            if stores and not (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)):
                return None
    return values[0] if len(values) == 1 else None


def _single_module(tree: ast.Module, name: str):
    values = [n.value for n in tree.body if isinstance(n, ast.Assign)
              and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    values += [n.value for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
               and n.target.id == name and n.value is not None]
    return values[0] if len(values) == 1 else None


# -- a flag that leaves out a step -----------------------------------------------------------------

FLAG_REASONS = frozenset({"values", "incomplete", "short", "late", "made", "output", "twice", "scalar", "scaled", "input",
                          "skipped", "guarded"})
NEXT_STATEMENTS = 2  # statements after the finder's line looked at for a skipped ``if <flag>:``


def flag_line(source: str, line: int, reason: str, ran: set[int], given: frozenset[str] = frozenset()) -> tuple[int, str] | None:
    """(line, flag) when the value the statement on ``line`` makes or uses goes on wrong because a
    step written next to it did not run: one of the statements just after it (it makes the value)
    or just before it (it uses the value) in its block is an ``if <flag>:`` (a plain ``self.x`` /
    name, no ``else``) whose body did not run (none of ``ran``, the lines the trail ran, is in it)
    and changes that value, and the flag is a literal defined on another line (a class attribute,
    a dataclass field, ``self.x = False``, an ``__init__`` default no call of the class in the file
    nor the grader (``given``: the parameters it passes) overrides): that line. Else None."""
    if reason not in FLAG_REASONS:
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None
    files = _file_of(tree)
    stmt, func, cls = files.statement_at(line)
    if isinstance(stmt, ast.If) and stmt.lineno == line and reason == "guarded":  # the finder says the if itself
        stmt = next((s for s in stmt.body), None)
        if stmt is None or not isinstance(files.parent.get(stmt), ast.If):
            return None
        block = files.parent[stmt]
        return _flag_of(files, tree, block, func, cls, line, given, ran, {"*"}) if block.lineno == line else None
    if stmt is None or func is None or isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
        return None
    made = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    block = next((getattr(files.parent.get(stmt), f) for f in ("body", "orelse", "finalbody")
                  if stmt in getattr(files.parent.get(stmt), f, [])), None)
    if block is None:
        return None
    at = block.index(stmt)
    near = [(nxt, made) for nxt in block[at + 1:at + 1 + NEXT_STATEMENTS]] + \
        [(nxt, used) for nxt in block[max(0, at - NEXT_STATEMENTS):at][::-1]]
    for nxt, names in near:
        if names and isinstance(nxt, ast.If):
            found = _flag_of(files, tree, nxt, func, cls, line, given, ran, names)
            if found is not None:
                return found
    return None


def _flag_of(files: _File, tree, nxt: ast.If, func, cls, line: int, given, ran, names: set[str]) -> tuple[int, str] | None:
    """(line, flag) of the literal that leaves ``if <flag>:`` ``nxt`` out, when its body did not run and
    changes one of ``names`` (``{"*"}``: any); else None."""
    if nxt.orelse or _chain(nxt.test) is None:
        return None
    first, last = nxt.body[0].lineno, nxt.body[-1].end_lineno or nxt.body[-1].lineno
    if any(first <= n <= last for n in ran):
        return None  # it ran
    changed = {n.id for s in nxt.body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if not changed or ("*" not in names and not names & changed):
        return None
    target = files.resolve(nxt.test, func, cls, MAX_HOPS) or _init_default(files, nxt.test, func, cls, given)
    if target is None or not target[1] or abs(target[0] - line) <= 1 or not _false(tree, target[0]):
        return None
    return target[0], ast.unparse(nxt.test)


def _false(tree: ast.Module, line: int) -> bool:
    """A literal False, 0 or None is written on ``line`` (the flag's value that skips the branch)."""
    return any(isinstance(n, ast.Constant) and n.value in (False, None) and not isinstance(n.value, float)
               and n.lineno == line for n in walk(tree))


def _init_default(files: _File, test, func, cls, given: frozenset[str]):
    """(line, True) of the literal default of the ``__init__`` parameter ``self.<attr>`` is set from
    (``self.flag = flag``), when no call of the class in the file passes it and the grader does not
    (``given``); else None."""
    chain = _chain(test)
    if cls is None or func is None or chain is None or len(chain) != 2 or chain[0] != _first_arg(func):
        return None
    init = next((i for i in cls.body if isinstance(i, ast.FunctionDef) and i.name == "__init__"), None)
    if init is None:
        return None
    sources = [v for node in ast.walk(init) for t, v in _self_assignments(node, init) if t == chain[1]]
    if len(sources) != 1 or not isinstance(sources[0], ast.Name) or sources[0].id in given:
        return None
    name = sources[0].id
    default = {a.arg: d for a, d in defaults(init)}.get(name)
    if default is None or not _numeric(default, True) and not (isinstance(default, ast.Constant) and default.value is None):
        return None
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == cls.name for n in walk(files.tree)):
        return None  # built in the file: its calls say (not followed here)
    return default.lineno, True
