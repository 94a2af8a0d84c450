"""Mutation testing of the grader: does it fail every wrong reference solution it is shown?

Each exercise's reference solution (``solutions/<id>.py``) is parsed and mutated at one site at a
time (``ast`` + ``ast.unparse``): transposes dropped or moved, the softmax dim changed, the scale
dropped or taken over another size, comparisons flipped, ``tril``/``triu`` and their diagonal, mask
lines dropped or negated, constants changed, matmul operands swapped, q/k/v swapped, ``repeat``
for ``repeat_interleave``, split/concat/unpack orders, layer calls skipped (``self.o_proj(out)`` →
``out``), casts dropped (``h.to(x.dtype)`` → ``h``), a parameter dropped from a product or a sum
(``self.weight * h`` → ``h``), a minus sign dropped (``-x2`` → ``x2``). Every mutant is run here, in-process, against the reference with the same seeded weights
(copied by role name, not through the grader's mapping) on every graded case of every graded config:

- *crashing*: it fails to import, build or run, or changes a parameter shape;
- *equivalent*: its graded outputs equal the reference's (max error ≤ 1e-6);
- *within tolerance*: it moves the outputs, but by less than the grader's rtol/atol;
- *output-changing*: the rest. The grader must fail each of them.

Then ``grade()`` (the real, forked grader) sees every mutant: an output-changing or crashing
mutant must not pass, an equivalent one should pass, and the grader must never crash itself
(``Result.internal``). Kill rate = killed / output-changing. Equivalent mutants are re-run on a
second seed and on "probe" configurations with all sizes distinct: one that differs there is
wrong code the graded inputs cannot see (a *blind spot*), listed apart.

    python benchmarks/mutation.py [--exercise ID] [--limit N] [--json] [--keep DIR]

Exit code 1 when a mutant survives, a crashing mutant passes, or the grader crashes.
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import itertools
import json
import re
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

EQUIV_ATOL = 1e-6  # float32 noise; the grader allows atol 1e-5 + rtol 1e-4
PROBE_SEED = 1
DIFFERENT = "different"  # evaluate(settle=False): not equivalent, its status not settled

DELETE = object()  # replacement meaning "remove this statement"

SOFTMAX = {"softmax", "log_softmax"}
MASK_CALLS = {"masked_fill", "masked_fill_", "where"}
SQRT = {"sqrt", "rsqrt"}
CASTS = {"to", "float", "type_as", "half", "bfloat16", "double"}  # x.float(), h.to(dtype) …
COMPARE_FLIPS = {
    ast.Lt: (ast.LtE, ast.Gt), ast.LtE: (ast.Lt, ast.GtE), ast.Gt: (ast.GtE, ast.Lt),
    ast.GtE: (ast.Gt, ast.LtE), ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,),
    ast.IsNot: (ast.Is,),
}
OP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
           ast.Is: "is", ast.IsNot: "is not"}
QKV = re.compile(r"^(q|k|v|query|key|value)(_.*)?$")  # torch's SDPA names its arguments query, key, value


# --- mutants -------------------------------------------------------------------------------------


@dataclass
class Mutant:
    id: str
    exercise: str
    op: str  # the mutation family: transpose, softmax_dim, scale, …
    line: int  # line of the mutated site in solutions/<id>.py
    description: str
    source: str  # the whole mutant file, starting with "# attnprep: <id>"
    diff: str  # unified diff against the unparsed reference
    # filled by evaluate() and grade_all()
    status: str = ""  # crashing, equivalent, within tolerance, output-changing
    max_diff: float | None = None
    detail: str = ""
    blind_spot: str = ""  # equivalent on the graded inputs, not on a second seed or a probe config
    verdict: str = ""
    passed: bool | None = None
    diagnoses: list[str] = field(default_factory=list)
    internal: str = ""
    divergence: int | None = None  # the line the report points at as where it first goes wrong


def _num(node: ast.AST):
    """The value of a numeric literal (``3``, ``-1``, ``1e-6``), else None. Bools excluded."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) in (int, float)):
        return -node.operand.value
    return None


def _lit(value) -> ast.expr:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def _fname(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _is_method(call: ast.Call) -> bool:
    """``x.transpose(…)`` rather than ``torch.transpose(x, …)`` / ``F.softmax(x, …)``."""
    f = call.func
    return isinstance(f, ast.Attribute) and not (isinstance(f.value, ast.Name) and f.value.id in ("torch", "F", "math", "nn"))


def _text(node: ast.AST, width: int = 60) -> str:
    s = ast.unparse(node).replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def _calls(node: ast.AST) -> set[str]:
    return {_fname(n) for n in ast.walk(node) if isinstance(n, ast.Call)}


def _is_self_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


@dataclass
class Scope:
    """What a function offers as alternatives: its size names, its q/k/v-family names."""

    dims: list[ast.expr]  # B, T, C, H, D …, int parameters, self.<...>_dim attributes
    names: set[str]
    attrs: set[str]  # self.<attr> names assigned in the class


def _scope(fn: ast.FunctionDef, class_attrs: set[str]) -> Scope:
    dims: list[ast.expr] = []
    for a in fn.args.args:
        if isinstance(a.annotation, ast.Name) and a.annotation.id == "int":
            dims.append(ast.Name(a.arg, ast.Load()))
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            dims += [ast.Name(e.id, ast.Load()) for e in node.targets[0].elts if isinstance(e, ast.Name)]
    names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
    return Scope(dims, names, class_attrs)


def _walk(tree: ast.Module):
    """(node, parent, field, index, scope) for every mutable node; docstrings, annotations and
    asserts are left alone."""

    def docstring(body):
        return body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) else []

    def visit(node, parent, fld, idx, scope, attrs):
        yield node, parent, fld, idx, scope
        if isinstance(node, ast.Assert):
            return
        if isinstance(node, ast.ClassDef):
            attrs = {t.attr for n in ast.walk(node) if isinstance(n, ast.Assign) for t in n.targets if _is_self_attr(t)}
            children = [("body", i, c) for i, c in enumerate(node.body) if c not in docstring(node.body)]
        elif isinstance(node, ast.FunctionDef):
            scope = _scope(node, attrs)
            children = [(("args", "defaults", i), None, c) for i, c in enumerate(node.args.defaults)]
            children += [("body", i, c) for i, c in enumerate(node.body) if c not in docstring(node.body)]
        elif isinstance(node, ast.AnnAssign):
            children = [("value", None, node.value)] if node.value else []
        else:
            children = []
            for name, value in ast.iter_fields(node):
                if isinstance(value, list):
                    children += [(name, i, c) for i, c in enumerate(value) if isinstance(c, ast.AST)]
                elif isinstance(value, ast.AST):
                    children.append((name, None, value))
        for name, i, child in children:
            if isinstance(child, (ast.expr_context, ast.operator, ast.cmpop, ast.unaryop, ast.boolop)):
                continue
            if isinstance(name, tuple):  # a default value: parent is node.args
                yield from visit(child, node.args, name[1], name[2], scope, attrs)
            else:
                yield from visit(child, node, name, i, scope, attrs)

    for i, stmt in enumerate(tree.body):
        yield from visit(stmt, tree, "body", i, None, set())


def _edits(node: ast.AST, scope: Scope | None, parent: ast.AST):
    """Yield (op, description, replacement) for one node; replacement is a new node or DELETE."""
    C = copy.deepcopy
    if isinstance(node, ast.Call):
        name = _fname(node)
        method = _is_method(node)
        args = node.args
        recv = node.func.value if method else (args[0] if args else None)
        pos = args if method else args[1:]  # the arguments after the tensor

        if name == "transpose" and recv is not None and len(pos) == 2:
            yield "transpose", f"drop `{_text(node)}`", C(recv)
            values = [_num(a) for a in pos]
            if None not in values:
                for i, v in itertools.product((0, 1), (-1, 1)):
                    new = list(values)
                    new[i] = values[i] + v
                    if new[0] == new[1] or new == values[::-1]:
                        continue  # identity, or the same transpose written the other way round
                    m = C(node)
                    off = 0 if method else 1
                    m.args[off + i] = _lit(new[i])
                    yield "transpose", f"transpose({values[0]}, {values[1]}) → transpose({new[0]}, {new[1]})", m

        if name in SOFTMAX:
            where = next(((k.value, "kw", j) for j, k in enumerate(node.keywords) if k.arg == "dim"), None)
            if where is None and pos:
                where = (pos[0], "pos", 0)
            dim = _num(where[0]) if where else None
            if dim is not None:
                for alt in (-2, -3, 0, 1, 2, 3, -1):
                    if alt == dim:
                        continue
                    m = C(node)
                    if where[1] == "kw":
                        m.keywords[where[2]].value = _lit(alt)
                    else:
                        m.args[(0 if method else 1)] = _lit(alt)
                    yield "softmax_dim", f"softmax dim {dim} → {alt}", m

        if name in ("tril", "triu"):
            m = C(node)
            other = "triu" if name == "tril" else "tril"
            if isinstance(m.func, ast.Attribute):
                m.func.attr = other
            else:
                m.func.id = other
            yield "causal_tri", f"{name} → {other}", m
            kw = next((j for j, k in enumerate(node.keywords) if k.arg == "diagonal"), None)
            if kw is not None:
                d = _num(node.keywords[kw].value)
                alts = [] if d is None else [d - 1, d + 1]
            elif len(pos) >= 1:
                d = _num(pos[0])
                alts = [] if d is None else [d - 1, d + 1]
            else:
                d, alts = 0, [-1, 1]
            for alt in alts:
                m = C(node)
                if kw is not None:
                    m.keywords[kw].value = _lit(alt)
                elif len(pos) >= 1:
                    m.args[0 if method else 1] = _lit(alt)
                else:
                    m.keywords.append(ast.keyword("diagonal", _lit(alt)))
                yield "causal_tri", f"{name} diagonal {d} → {alt}", m

        if name == "repeat_interleave" and method and len(args) == 1:
            dim = next((_num(k.value) for k in node.keywords if k.arg == "dim"), None)
            if dim is not None and dim >= 0:
                reps = [ast.Constant(1)] * 4  # the (B, H, T, D) layout of every solution
                reps[dim] = C(args[0])
                m = ast.Call(ast.Attribute(C(recv), "repeat", ast.Load()), reps, [])
                yield "repeat", f"repeat_interleave({_text(args[0])}, dim={dim}) → repeat (tiled heads)", m
        if name == "repeat" and method:
            values = [_num(a) for a in args]
            big = [i for i, a in enumerate(args) if values[i] != 1]
            if len(big) == 1:
                m = ast.Call(ast.Attribute(C(recv), "repeat_interleave", ast.Load()), [C(args[big[0]])],
                             [ast.keyword("dim", ast.Constant(big[0]))])
                yield "repeat", f"repeat → repeat_interleave(dim={big[0]})", m

        if name in ("matmul", "bmm", "outer") and not method and len(args) == 2:
            m = C(node)
            m.args = [C(args[1]), C(args[0])]
            yield "matmul_swap", f"{name}(a, b) → {name}(b, a)", m
        if name == "einsum" and len(args) == 3 and isinstance(args[0], ast.Constant):
            m = C(node)
            m.args[1], m.args[2] = C(args[2]), C(args[1])
            yield "matmul_swap", "einsum operands swapped", m
            eq = args[0].value
            if "->" in eq:
                lhs, out = eq.split("->")
                for i in range(len(out) - 1):
                    swapped = out[:i] + out[i + 1] + out[i] + out[i + 2:]
                    m = C(node)
                    m.args[0] = ast.Constant(f"{lhs}->{swapped}")
                    yield "matmul_swap", f"einsum output '{out}' → '{swapped}'", m

        if name in ("split", "cat", "concat") and node.args:
            seq_i = 0 if method or name != "split" else 1
            seq = node.args[seq_i]
            if isinstance(seq, (ast.List, ast.Tuple)) and len(seq.elts) >= 2:
                for i in range(len(seq.elts) - 1):
                    m = C(node)
                    e = m.args[seq_i].elts
                    e[i], e[i + 1] = e[i + 1], e[i]
                    yield "split_order", f"{name} order {_text(seq)} → {_text(m.args[seq_i])}", m

        if name in ("view", "reshape") and method and len(args) >= 3:
            for i in range(len(args) - 1):
                if ast.dump(args[i]) == ast.dump(args[i + 1]):
                    continue
                m = C(node)
                m.args[i], m.args[i + 1] = m.args[i + 1], m.args[i]
                yield "reshape", f"{name}({_text(ast.Tuple(args, ast.Load()))[1:-1]}) → {name}({_text(ast.Tuple(m.args, ast.Load()))[1:-1]})", m

        if isinstance(node.func, ast.Attribute) and _is_self_attr(node.func) and len(args) == 1 and not node.keywords:
            yield "layer_drop", f"skip the layer: `{_text(node)}` → `{_text(args[0])}`", C(args[0])

        if name in CASTS and method and recv is not None:
            yield "cast", f"drop the cast: `{_text(node)}` → `{_text(recv)}`", C(recv)

        if name in SQRT and len(args) == 1:
            arg = args[0]
            if name == "sqrt":
                yield "scale", f"`{_text(node)}` → `{_text(arg)}` (no square root)", C(arg)
            m = C(node)
            if isinstance(m.func, ast.Attribute):
                m.func.attr = "rsqrt" if name == "sqrt" else "sqrt"
                yield "scale", f"{name} → {m.func.attr}", m
            if scope is not None and isinstance(arg, (ast.Name, ast.Attribute)) and name == "sqrt":
                alts = list(scope.dims)
                if isinstance(arg, ast.Attribute):
                    alts += [ast.Attribute(ast.Name("self", ast.Load()), a, ast.Load())
                             for a in sorted(scope.attrs) if a.endswith("dim") or a == "d_model"]
                seen = {ast.dump(arg)}
                for alt in alts:
                    if ast.dump(alt) in seen:
                        continue
                    seen.add(ast.dump(alt))
                    m = C(node)
                    m.args[0] = C(alt)
                    yield "scale", f"scale by sqrt({_text(alt)}) instead of sqrt({_text(arg)})", m

        if name in ("masked_fill", "masked_fill_") and method and args and not (
                isinstance(args[0], ast.UnaryOp) and isinstance(args[0].op, ast.Invert)):
            m = C(node)
            m.args[0] = ast.UnaryOp(ast.Invert(), C(args[0]))
            yield "mask_negate", f"masked_fill({_text(args[0])}) → masked_fill(~{_text(args[0])})", m
        if name == "where" and not method and len(args) == 3:
            m = C(node)
            m.args[1], m.args[2] = C(args[2]), C(args[1])
            yield "mask_negate", "where(c, a, b) → where(c, b, a)", m

        if name == "float" and len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            v = float(args[0].value)
            for alt in ((0.0, -1e9, float("inf")) if v == float("-inf") else (0.0,) if v == float("inf") else ()):
                new = ast.Call(ast.Name("float", ast.Load()), [ast.Constant("inf")], []) if alt == float("inf") else _lit(alt)
                yield "constant", f"{_text(node)} → {_text(new)}", new

    elif isinstance(node, ast.BinOp):
        L, R = node.left, node.right
        scaley = lambda n: isinstance(n, ast.Call) and _fname(n) in SQRT or "scale" in _text(n)
        if isinstance(node.op, ast.Div) and scaley(R):
            yield "scale", f"drop `/ {_text(R)}`", C(L)
            yield "scale", f"`/ {_text(R)}` → `* {_text(R)}`", ast.BinOp(C(L), ast.Mult(), C(R))
        if isinstance(node.op, ast.Mult) and (scaley(R) or scaley(L)):
            keep, drop = (L, R) if scaley(R) else (R, L)
            yield "scale", f"drop `* {_text(drop)}`", C(keep)
            if scaley(R):
                yield "scale", f"`* {_text(R)}` → `/ {_text(R)}`", ast.BinOp(C(L), ast.Div(), C(R))
        if isinstance(node.op, (ast.Mult, ast.Add)) and (_is_self_attr(L) or _is_self_attr(R)):
            keep, drop = (R, L) if _is_self_attr(L) else (L, R)
            sign = "*" if isinstance(node.op, ast.Mult) else "+"
            yield "param_drop", f"drop `{sign} {_text(drop)}`", C(keep)
        if isinstance(node.op, ast.MatMult):
            yield "matmul_swap", f"`{_text(L, 30)} @ {_text(R, 30)}` → operands swapped", ast.BinOp(C(R), ast.MatMult(), C(L))
        if isinstance(node.op, (ast.BitAnd, ast.BitOr)):
            op = ast.BitOr() if isinstance(node.op, ast.BitAnd) else ast.BitAnd()
            yield "mask_combine", f"mask `{'&' if isinstance(node.op, ast.BitAnd) else '|'}` → `{'|' if isinstance(op, ast.BitOr) else '&'}`", \
                ast.BinOp(C(L), op, C(R))
        if isinstance(node.op, (ast.Add, ast.Sub)) and _num(node) is None:
            op = ast.Sub() if isinstance(node.op, ast.Add) else ast.Add()
            yield "arith", f"`{'+' if isinstance(node.op, ast.Add) else '-'}` → `{'-' if isinstance(op, ast.Sub) else '+'}` in `{_text(node, 40)}`", \
                ast.BinOp(C(L), op, C(R))

    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        for alt in COMPARE_FLIPS.get(type(node.ops[0]), ()):
            m = C(node)
            m.ops = [alt()]
            yield "compare", f"`{OP_TEXT[type(node.ops[0])]}` → `{OP_TEXT[alt]}` in `{_text(node, 40)}`", m

    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _num(node) is None:
        yield "sign", f"drop the minus: `{_text(node)}` → `{_text(node.operand)}`", C(node.operand)

    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.Not)):
        yield "mask_negate", f"`{_text(node)}` → `{_text(node.operand)}`", C(node.operand)

    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple):
        elts = node.slice.elts
        for i in range(len(elts) - 1):
            if ast.dump(elts[i]) == ast.dump(elts[i + 1]):
                continue
            m = C(node)
            e = m.slice.elts
            e[i], e[i + 1] = e[i + 1], e[i]
            op = "mask_axis" if "mask" in _text(node.value) else "index"
            yield op, f"`{_text(node)}` → `{_text(m)}`", m

    # numeric literals (a negative one is a UnaryOp, taken whole; its inner Constant is skipped;
    # the dims of transpose/softmax/tril have their own operators above)
    value = _num(node)
    if value is not None and not (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)) \
            and id(node) not in _DIM_ARGS:
        if isinstance(value, float):
            alts = [] if value == 0 else [0.0]
            if value == 0:
                alts.append(1.0)
            elif abs(value) < 1e-3:
                alts.append(value * 1e4)  # eps 1e-6 → 1e-2
            elif value != 1.0:
                alts.append(1.0)
            else:
                alts.append(2.0)
            if abs(value) >= 100:
                alts.append(value / 10)
        else:
            alts = [value + 1, value - 1]
        kw = f"{parent.arg}=" if isinstance(parent, ast.keyword) else ""
        for alt in dict.fromkeys(alts):
            yield "constant", f"{kw}{value!r} → {kw}{alt!r}", _lit(alt)
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        kw = f"{parent.arg}=" if isinstance(parent, ast.keyword) else ""
        yield "constant", f"{kw}{node.value} → {kw}{not node.value}", ast.Constant(not node.value)

    # statements
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.Return)):
        targets = [t for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]
        masky = _calls(node) & (MASK_CALLS | {"tril", "triu"}) or any(
            w in t.id for t in targets for w in ("mask", "allowed"))
        if masky and not isinstance(node, ast.Return):
            first = ast.unparse(node).splitlines()[0]
            yield "mask_drop", f"drop the `{first}` block" if isinstance(node, ast.If) else f"drop `{_text(node)}`", DELETE
        if isinstance(node, ast.If) and not isinstance(node.test, ast.Compare):
            m = C(node)
            m.test = ast.UnaryOp(ast.Not(), C(node.test))
            yield "condition", f"`if {_text(node.test)}:` → `if not {_text(node.test)}:`", m
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple):
            elts = node.targets[0].elts
            for i, j in itertools.combinations(range(len(elts)), 2):
                if ast.dump(elts[i]) == ast.dump(elts[j]):
                    continue
                m = C(node)
                e = m.targets[0].elts
                e[i], e[j] = e[j], e[i]
                yield "split_order", f"unpack `{_text(node.targets[0])}` → `{_text(m.targets[0])}`", m
        value = getattr(node, "value", None)
        if scope is not None and value is not None and not isinstance(node, ast.If):
            yield from _qkv_swaps(node, value, scope)


def _qkv_swaps(stmt: ast.stmt, value: ast.expr, scope: Scope):
    """Swap two of q, k, v (also q_nope ↔ k_nope, self.q_proj ↔ self.k_proj, query ↔ key) inside one
    expression."""
    loaded = {n.id for n in ast.walk(value) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(value) if _is_self_attr(n)}
    for a, b in (("q", "k"), ("q", "v"), ("k", "v"), ("query", "key"), ("query", "value"), ("key", "value")):
        for kind, pool, known in (("name", loaded, scope.names), ("attr", attrs, scope.attrs)):
            suffixes = {m.group(2) or "" for n in pool if (m := QKV.match(n)) and m.group(1) in (a, b)}
            for suffix in sorted(suffixes):
                na, nb = a + suffix, b + suffix
                if na not in known or nb not in known or not ({na, nb} & pool):
                    continue
                m = copy.deepcopy(stmt)
                for n in ast.walk(m.value):
                    if kind == "name" and isinstance(n, ast.Name) and n.id in (na, nb):
                        n.id = nb if n.id == na else na
                    elif kind == "attr" and _is_self_attr(n) and n.attr in (na, nb):
                        n.attr = nb if n.attr == na else na
                label = f"self.{na} ↔ self.{nb}" if kind == "attr" else f"{na} ↔ {nb}"
                yield "qkv_swap", f"{label} in `{_text(value, 50)}`", m


_DIM_ARGS: set[int] = set()  # ids of the literal arguments of transpose/softmax/tril/triu calls
DIM_CALLS = {"transpose", "tril", "triu"} | SOFTMAX


def generate(exercise_id: str, source: str) -> list[Mutant]:
    """Every one-site mutant of a reference solution, in source order, duplicates removed."""
    tree = ast.parse(source)
    _DIM_ARGS.clear()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _fname(call) in DIM_CALLS:
            _DIM_ARGS.update(id(a) for a in call.args + [k.value for k in call.keywords])
    base = ast.unparse(tree)
    seen = {base}
    mutants: list[Mutant] = []
    for node, parent, fld, idx, scope in list(_walk(tree)):
        for op, description, new in _edits(node, scope, parent):
            if isinstance(parent, ast.arguments):  # a default value: say whose
                description = f"default of {parent.args[len(parent.args) - len(parent.defaults) + idx].arg}: {description}"
            original = getattr(parent, fld)
            if idx is None:
                setattr(parent, fld, new)
            elif new is DELETE:  # an emptied block keeps a `pass`
                setattr(parent, fld, original[:idx] + original[idx + 1:] or [ast.Pass()])
            else:
                setattr(parent, fld, original[:idx] + [new] + original[idx + 1:])
            try:
                text = ast.unparse(ast.fix_missing_locations(tree))
            finally:
                setattr(parent, fld, original)
            if text in seen:
                continue
            seen.add(text)
            diff = "\n".join(difflib.unified_diff(base.splitlines(), text.splitlines(), "reference", "mutant",
                                                  n=0, lineterm=""))
            mid = f"{exercise_id}-{len(mutants) + 1:03d}"
            mutants.append(Mutant(mid, exercise_id, op, node.lineno, description,
                                  f"# attnprep: {exercise_id}\n{text}\n", diff))
    assert ast.unparse(tree) == base, "a mutation leaked into the reference tree"
    return mutants


# --- in-process evaluation -----------------------------------------------------------------------


class Oracle:
    """The reference's outputs on every graded case (cached), and a way to run a mutant on them,
    both through the exercise's kind (grader/kinds/), as the grader drives an attempt."""

    def __init__(self, exercise, seed: int = 0, probes: bool = False):
        import torch
        from attnprep.grader import tensors
        from attnprep.grader.kinds import kind_for

        self.torch = torch
        self.rtol, self.atol = tensors.RTOL, tensors.ATOL  # the grader's tolerance
        self.exercise = exercise
        self.kind = kind_for(exercise, seed)
        self.graded = len(self.kind.configs)
        if probes:  # never graded: sizes all distinct (exercise.toml's probe_configs)
            self.kind.configs += [dict(c) for c in exercise.grading.get("probe_configs", [])]
        self.cases = {ci: self.kind.cases(ci) for ci in range(len(self.kind.configs))}
        self._want: dict[int, list] = {}
        self._same: dict[int, list] = {}

    def want(self, ci: int):
        if ci not in self._want:
            call = self.kind.reference(ci)
            with self.torch.no_grad():
                self._want[ci] = [{k: v.double() for k, v in call(case).items()} for case in self.cases[ci]]
        return self._want[ci]

    def same(self, ci: int):
        """The reference solution's own outputs when it is run as an attempt. Where a kind grades a
        low precision against the exact result (``Case.tolerance``), these differ from ``want`` by
        the rounding; a mutant equal to them is equivalent, not merely within tolerance."""
        if ci not in self._same:
            import importlib

            namespace = vars(importlib.import_module(self.exercise.solution_module))
            obj = self.build(namespace, ci)
            with self.torch.no_grad():
                self._same[ci] = [{k: v.double() for k, v in self.kind.run(obj, case).items()}
                                  for case in self.cases[ci]]
        return self._same[ci]

    def build(self, namespace: dict, ci: int):
        """The mutant's object for config ci, its parameters mapped and loaded as the grader does
        (a mutant keeps the contract's names, so by name)."""
        kind = self.kind

        class Local:
            def ask(self, question):
                return kind.answer(question)

        return kind.build(namespace, ci, Local()).attempt

    def compare(self, namespace: dict, configs, first: bool = False) -> tuple[float, bool, str]:
        """Largest graded difference from the reference (inf: shape, type or NaN), whether it is
        beyond the grader's tolerance somewhere, and where (the first such case). ``first``: the
        first difference found instead, without running the cases after it."""
        torch = self.torch
        worst, beyond, where_worst = 0.0, False, ""
        from attnprep.grader.kinds.base import ContractError

        for ci in configs:
            try:
                obj = self.build(namespace, ci)
            except ContractError as exc:  # a bias the contract does not have: it runs, and differs
                if exc.key != "contract.extra_bias":
                    raise
                return float("inf"), True, f"config {ci}: {exc.params['layer']} has a bias the contract does not"
            low = any(case.tolerance is not None for case in self.cases[ci])
            sames = self.same(ci) if low else [None] * len(self.cases[ci])
            for case, wanted, same in zip(self.cases[ci], self.want(ci), sames):
                with torch.no_grad():
                    outputs = self.kind.run(obj, case)
                label = f"config {ci}, case {case.name!r}"
                for name, want in wanted.items():
                    got = outputs.get(name)
                    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                        return float("inf"), True, f"{label}: {type(got).__name__} {tuple(getattr(got, 'shape', ()))}, expected {tuple(want.shape)}"
                    if str(got.dtype).replace("torch.", "") != case.dtype:  # the grader's dtype check
                        return float("inf"), True, f"{label}: {name} is {got.dtype}, expected {case.dtype}"
                    rtol, atol = case.tolerance or (self.rtol, self.atol)  # a low precision: its own
                    mask = case.mask(name, tuple(want.shape))
                    g, w = got.double()[mask], want[mask]
                    if g.numel() == 0:
                        continue
                    if torch.isclose(g, w, rtol=0.0, atol=EQUIV_ATOL, equal_nan=True).all():
                        continue
                    if case.tolerance is not None and torch.isclose(g, same[name][mask], rtol=0.0, atol=EQUIV_ATOL,
                                                                     equal_nan=True).all():
                        continue  # what the reference solution itself returns in that precision
                    err = (g - w).abs().nan_to_num(nan=float("inf")).max().item()
                    outside = not bool(torch.isclose(g, w, rtol=rtol, atol=atol).all())
                    if (outside and not beyond) or (outside == beyond and err > worst):
                        where_worst = label
                    worst, beyond = max(worst, err), beyond or outside
                    if first:
                        return worst, beyond, where_worst
            extra = self.kind.child_extra(obj)
            if extra is not None:  # the kind's own checks (a mask function's values, dtype …)
                failed = [c.id for c in self.kind.extra_checks(extra) if c.passed is False]
                if failed:
                    return float("inf"), True, f"config {ci}: {', '.join(failed)} differs"
        return worst, beyond, where_worst


def _first(out):
    return out[0] if isinstance(out, tuple) and out else out


def _load(source: str, name: str, filename: str) -> dict:
    namespace = {"__name__": name, "__file__": filename}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 — our own mutated reference, not user code
    return namespace


def evaluate(mutant: Mutant, oracle: Oracle, probe: dict[str, Oracle] | None = None, settle: bool = True) -> None:
    """Set ``mutant.status``: crashing, equivalent, within tolerance or output-changing. ``probe``
    ({"seed": …, "config": …}) re-checks an equivalent mutant for blind spots. ``settle`` False:
    stop at the first difference from the reference, status ``DIFFERENT`` (not equivalent; which
    of the other three it is, ``evaluate`` with ``settle`` says); an equivalent mutant, or one
    that crashes before any output differs, gets the status ``settle`` would give."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ns = _load(mutant.source, f"attnprep_mutant_{mutant.id.replace('-', '_')}", f"<{mutant.id}>")
            err, beyond, where = oracle.compare(ns, range(oracle.graded), first=not settle)
        except Exception as exc:  # noqa: BLE001 — a crashing mutant is a result
            mutant.status, mutant.detail = "crashing", f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:160]
            return
        mutant.max_diff = err
        if err == 0.0:
            mutant.status = "equivalent"
        elif not settle:
            mutant.status = DIFFERENT
        elif not beyond:
            mutant.status, mutant.detail = "within tolerance", f"max abs diff {err:.2g} at {where}"
        else:
            mutant.status, mutant.detail = "output-changing", f"max abs diff {err:.3g}, first at {where}"
        if mutant.status == "equivalent" and probe is not None:
            for label, o, cfgs in (("seed 1", probe["seed"], range(probe["seed"].graded)),
                                   ("probe config", probe["config"], range(probe["config"].graded, len(probe["config"].kind.configs)))):
                try:
                    e, _, w = o.compare(ns, cfgs)
                except Exception as exc:  # noqa: BLE001
                    mutant.blind_spot = f"{label}: raises {type(exc).__name__}: {exc}"[:160]
                    break
                if e > 0:
                    mutant.blind_spot = f"{label}: differs by {e:.3g} ({w}, {_describe_config(o, w)})"
                    break


def _describe_config(oracle: Oracle, where: str) -> str:
    m = re.match(r"config (\d+)", where)
    return ", ".join(f"{k}={v}" for k, v in oracle.kind.config_params(int(m.group(1))).items()) if m else ""


# --- grading ------------------------------------------------------------------------------------


def grade_all(mutants: list[Mutant], folder: Path) -> None:
    from attnprep.grader import grade

    for m in mutants:
        path = folder / f"{m.id.replace('-', '_')}.py"
        path.write_text(m.source, encoding="utf-8")
        try:
            r = grade(path, m.exercise, seed=0)
        except Exception as exc:  # noqa: BLE001 — grade() promises never to raise
            m.verdict, m.passed, m.internal = "raised", False, f"grade() raised {type(exc).__name__}: {exc}"
            continue
        m.verdict, m.passed = r.verdict.value, r.passed
        m.diagnoses = [d.id for d in r.diagnoses]
        m.divergence = r.divergence.line if getattr(r, "divergence", None) is not None else None
        if r.internal:
            m.internal = r.error.message.key if r.error else "internal"


def mutated_lines(m: Mutant) -> list[int]:
    """The lines of the mutant's file that the mutation changed (from its diff; +1 for the
    ``# attnprep: <id>`` header the graded file starts with)."""
    found = []
    for hunk in re.finditer(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", m.diff, flags=re.M):
        start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
        found.extend(range(start, start + max(count, 1)))
    return [n + 1 for n in found]


def near(m: Mutant, slack: int = 2) -> bool:
    """The report's divergence line is the mutated line or within ``slack`` lines of it."""
    return m.divergence is not None and any(abs(m.divergence - n) <= slack for n in mutated_lines(m))


def summarise(exercise_id: str, mutants: list[Mutant]) -> dict:
    by = Counter(m.status for m in mutants)
    changing = [m for m in mutants if m.status == "output-changing"]
    killed = [m for m in changing if m.passed is False and not m.internal]
    diag = Counter(d for m in killed for d in m.diagnoses[:1])
    named = sum(1 for m in killed if m.diagnoses)
    pointed = sum(1 for m in killed if m.divergence is not None)
    return {
        "exercise": exercise_id,
        "mutants": len(mutants),
        "equivalent": by["equivalent"],
        "crashing": by["crashing"],
        "within_tolerance": by["within tolerance"],
        "output_changing": len(changing),
        "killed": len(killed),
        "kill_rate": round(len(killed) / len(changing), 4) if changing else None,
        "named": named,
        "pointed": pointed,  # killed with a line where it first goes wrong
        "near": sum(1 for m in killed if near(m)),  # … at the mutated line or within two lines of it
        "named_or_pointed": sum(1 for m in killed if m.diagnoses or m.divergence is not None),
        "verdicts": dict(Counter(m.verdict for m in killed).most_common()),
        "diagnoses": dict(diag.most_common()),
        "crashing_not_failed": [m.id for m in mutants if m.status == "crashing" and m.passed is not False],
        "equivalent_failed": [m.id for m in mutants if m.status == "equivalent" and m.passed is False],
        "survivors": [m.id for m in changing if m.passed is not False],
        "grader_crashes": [m.id for m in mutants if m.internal],
        "blind_spots": [m.id for m in mutants if m.blind_spot],
        "ops": dict(Counter(m.op for m in mutants)),
    }


def sample(items: list, limit: int | None) -> list:
    """An evenly spread, deterministic subset (so a quick run still touches every family)."""
    if limit is None or limit >= len(items):
        return items
    return [items[(i * len(items)) // limit] for i in range(limit)]


def run(exercise_ids: list[str], limit: int | None = None, keep: Path | None = None, grade: bool = True) -> dict:
    from attnprep.grader import warm_up

    from attnprep import exercises

    warm_up()
    start = time.perf_counter()
    report = {"version": 1, "exercises": [], "mutants": []}
    with tempfile.TemporaryDirectory(prefix="attnprep-mutants-") as tmp:
        folder = keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        for ex_id in exercise_ids:
            ex = exercises.get(ex_id)
            mutants = sample(generate(ex_id, ex.solution_path.read_text(encoding="utf-8")), limit)
            oracle = Oracle(ex, seed=0)
            probe = {"seed": Oracle(ex, seed=PROBE_SEED), "config": Oracle(ex, seed=0, probes=True)}
            for m in mutants:
                evaluate(m, oracle, probe)
            if grade:
                grade_all(mutants, folder)
            report["exercises"].append(summarise(ex_id, mutants))
            report["mutants"] += [{k: v for k, v in asdict(m).items() if k != "source"} for m in mutants]
    report["duration_s"] = round(time.perf_counter() - start, 1)
    return report


# --- output -------------------------------------------------------------------------------------

COLUMNS = ("exercise", "mutants", "equivalent", "crashing", "within tol.", "output-changing", "killed",
           "kill rate", "named diagnosis", "named or a line", "line within 2 of the mutation")


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f}%)" if whole else "—"


def table(report: dict) -> str:
    rows = []
    total = Counter()
    for s in report["exercises"]:
        rate = "—" if s["kill_rate"] is None else f"{100 * s['kill_rate']:.1f}%"
        rows.append((s["exercise"], s["mutants"], s["equivalent"], s["crashing"], s["within_tolerance"],
                     s["output_changing"], s["killed"], rate, f"{s['named']}/{s['killed']}",
                     f"{s['named_or_pointed']}/{s['killed']}", _share(s["near"], s["pointed"])))
        for k in ("mutants", "equivalent", "crashing", "within_tolerance", "output_changing", "killed", "named",
                  "named_or_pointed", "near", "pointed"):
            total[k] += s[k]
    if len(report["exercises"]) > 1:
        rate = f"{100 * total['killed'] / total['output_changing']:.1f}%" if total["output_changing"] else "—"
        rows.append(("total", total["mutants"], total["equivalent"], total["crashing"], total["within_tolerance"],
                     total["output_changing"], total["killed"], rate, f"{total['named']}/{total['killed']}",
                     f"{total['named_or_pointed']}/{total['killed']}", _share(total["near"], total["pointed"])))
    widths = [max(len(str(r[i])) for r in rows + [COLUMNS]) for i in range(len(COLUMNS))]
    line = lambda r: "| " + " | ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths))) + " |"
    out = [line(COLUMNS), "|" + "|".join(("-" * (w + 1)).ljust(w + 2, "-") if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def families(report: dict) -> str:
    """Mutants by mutation family over all exercises: how each kind of change ended."""
    rows = {}
    for m in report["mutants"]:
        r = rows.setdefault(m["op"], Counter())
        r["mutants"] += 1
        r[m["status"]] += 1
        if m["status"] == "output-changing" and m["passed"] is False and not m["internal"]:
            r["killed"] += 1
            r["named"] += bool(m["diagnoses"])
    head = ("family", "mutants", "equivalent", "crashing", "within tol.", "output-changing", "killed", "named")
    keys = ("mutants", "equivalent", "crashing", "within tolerance", "output-changing", "killed", "named")
    body = [(op, *(r[k] for k in keys)) for op, r in sorted(rows.items(), key=lambda kv: -kv[1]["mutants"])]
    widths = [max(len(str(x[i])) for x in body + [head]) for i in range(len(head))]
    fmt = lambda r: "| " + " | ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths))) + " |"
    sep = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":" for i, w in enumerate(widths)) + "|"
    return "\n".join([fmt(head), sep] + [fmt(r) for r in body])


def details(report: dict) -> str:
    by_id = {m["id"]: m for m in report["mutants"]}
    out = []
    for s in report["exercises"]:
        d = ", ".join(f"{k} {v}" for k, v in s["diagnoses"].items()) or "none"
        unnamed = s["killed"] - s["named"]
        v = ", ".join(f"{k} {n}" for k, n in s["verdicts"].items())
        out.append(f"{s['exercise']}: verdicts {v or '—'}; first diagnosis {d}" + (f"; no diagnosis {unnamed}" if unnamed else ""))
    sections = (
        ("Surviving output-changing mutants (passed the grader)", "survivors"),
        ("Grader crashes (Result.internal)", "grader_crashes"),
        ("Crashing mutants that were not failed", "crashing_not_failed"),
        ("Equivalent mutants the grader fails", "equivalent_failed"),
        ("Blind spots: equivalent on the graded inputs only", "blind_spots"),
    )
    for title, key in sections:
        ids = [i for s in report["exercises"] for i in s[key]]
        out.append(f"\n{title}: {len(ids) or 'none'}")
        for i in ids:
            m = by_id[i]
            extra = m["blind_spot"] or m["internal"] or m["detail"]
            diags = f" [{', '.join(m['diagnoses'])}]" if m["diagnoses"] else ""
            out.append(f"  {i} (line {m['line']}, {m['op']}): {m['description']} → {m['verdict']}{diags}; {extra}")
            out += ["    " + l for l in m["diff"].splitlines()[2:] if not l.startswith("@@")]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", "-e", action="append", help="only this exercise (repeatable)")
    parser.add_argument("--limit", type=int, help="at most N mutants per exercise (an even spread)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--keep", type=Path, help="write the mutant files to this folder and keep them")
    args = parser.parse_args(argv)

    from attnprep import exercises

    ids = args.exercise or list(exercises.registry())
    for i in ids:
        try:
            exercises.get(i)
        except exercises.UnknownExercise as exc:  # a usage error, before any work
            parser.error(str(exc))
    report = run(ids, args.limit, args.keep)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(table(report))
        print()
        print(families(report))
        print()
        print(details(report))
        print(f"\n{sum(s['mutants'] for s in report['exercises'])} mutants in {report['duration_s']} s")
    bad = any(s["survivors"] or s["grader_crashes"] or s["crashing_not_failed"] for s in report["exercises"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
