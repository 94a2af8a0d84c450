"""Why a step of the attempt goes wrong, when its values alone do not say: for the divergence
finder (:mod:`.divergence`), which calls it on the first step that matches nothing.

It reads the attempt's file (and the reference's) as well as the two trails: :class:`Source` knows
which line assigns a variable, which ``if`` or loop a line sits in, which operations a line
writes. :class:`Explainer` then looks for a cause on another line than the wrong step's own:

- *number*: the step's tensors are the reference's, a Python number is not (``scale = 1 / D``,
  ``dim=-2`` passed by the caller, a ``-inf`` start written ``0.0``): the line that chose it;
- *start*, *stale*, *twice*: an input still holding the constant it started with where the
  reference has it set (a running max started at 0) or updated (``m = m_new`` missing), or two
  names made one tensor too early (``m = m_new`` before ``exp(m - m_new)``);
- *scaled*: the reference's values times a constant (a scale missing, inverted, over the wrong
  size);
- *guarded*: a step the reference takes next is written in the file but did not run here: the
  ``if`` or the loop (or its ``break``) that left it out; *discarded*: it ran and its result was
  dropped; *noop*: it ran and changed nothing (a mask that masks nothing there).

:func:`.divergence.find` asks it where its own lined-up rules end in bare wrong values (and for a
factor or a guard behind an "incomplete"); a step the file never takes, and a wrong number, are
said by those rules ("input", "unused", "scalar").

Nothing here names an exercise; the reasons are texts of ``[divergence]``.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
import re

import torch

from attnprep.grader.found import (FILL, PICKS, Found, assigned, close, func_name, is_constant, name_shape, names_of,
                                   op_name, tensor_of)
from attnprep.grader.parsing import defaults, last_name, parsed, walk
from attnprep.grader.trace import Step, line_end

MAX_CULPRIT_DEPTH = 8  # steps followed back from a wrong step to the number or buffer behind it


def _literal(node) -> float | None:
    """The number an expression writes literally (``-1``, ``1e-6``), else None."""
    try:
        value = ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _same_number(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-6) or (a != a and b != b) or (a <= FILL and b <= FILL)


_AST_OPS = {ast.Mult: "mul", ast.Add: "add", ast.Sub: "sub", ast.Div: "div", ast.MatMult: "matmul", ast.Pow: "pow",
            ast.Gt: "gt", ast.Lt: "lt", ast.GtE: "ge", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne", ast.USub: "neg",
            ast.Invert: "invert"}


class Source:
    """What the attempt's file says about its statements: the lines that assign a variable, the
    conditions and loops a line sits in, the operations each line writes."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.blocks: list[tuple[int, int, ast.stmt]] = []  # (first, last line, if / for / while)
        self.assigns: dict[str, list[int]] = {}  # "scale", "self.scale" -> lines assigning it
        self.ops: dict[int, set[str]] = {}  # line -> operations written on it
        self.nodes: dict[tuple[int, str], list[ast.AST]] = {}  # (line, operation) -> where it is written
        self.functions: list[tuple[int, int, set[str], str]] = []  # (first, last line, parameters, name)
        self.calls: dict[str, list[tuple[int, dict]]] = {}  # a called name -> (line, keyword arguments) of each call
        self.defaults: dict[tuple[str, str], ast.expr] = {}  # (function, parameter) -> its default
        self.noops: dict[int, set[str]] = {}  # line -> what a statement that does nothing leaves as it was
        # ("" for `pass`, "q" for `q = q` or the `q` of `k, q = rot(k), q`)
        try:
            tree = parsed(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for node in walk(tree):
            last = getattr(node, "end_lineno", None) or getattr(node, "lineno", 0)
            if isinstance(node, (ast.If, ast.For, ast.While)):
                self.blocks.append((node.lineno, last, node))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = node.args
                names = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
                for a, d in defaults(node):
                    self.defaults[(node.name, a.arg)] = d
                self.functions.append((node.lineno, last, names, node.name))
            if isinstance(node, ast.Pass):
                self.noops.setdefault(node.lineno, set()).add("")
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                pairs = [(node.targets[0], node.value)]
                if isinstance(node.value, ast.Tuple) and isinstance(node.targets[0], ast.Tuple) \
                        and len(node.value.elts) == len(node.targets[0].elts):
                    pairs = list(zip(node.targets[0].elts, node.value.elts))
                for target, value in pairs:
                    if isinstance(target, (ast.Name, ast.Attribute)) and ast.dump(target, include_attributes=False) \
                            == ast.dump(value, include_attributes=False).replace("Load()", "Store()"):
                        self.noops.setdefault(node.lineno, set()).add(ast.unparse(target))
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    for t in ast.walk(target):
                        name = ast.unparse(t) if isinstance(t, (ast.Name, ast.Attribute)) else ""
                        if name and (isinstance(t, ast.Name) or name.startswith("self.")):
                            self.assigns.setdefault(name, []).append(node.lineno)
            op = ""
            if isinstance(node, (ast.BinOp, ast.AugAssign, ast.UnaryOp)):
                op = _AST_OPS.get(type(node.op), "")
            elif isinstance(node, ast.Compare) and len(node.ops) == 1:
                op = _AST_OPS.get(type(node.ops[0]), "")
            elif isinstance(node, ast.Subscript):
                op = "getitem"
            elif isinstance(node, ast.Call):
                called = last_name(node.func) or ""
                self.calls.setdefault(called, []).append((node.lineno, {k.arg: k.value for k in node.keywords if k.arg}))
                op = op_name(called)
            if op:
                self.ops.setdefault(node.lineno, set()).add(op)
                self.nodes.setdefault((node.lineno, op), []).append(node)

    def expression(self, line: int, op: str) -> str:
        """The one expression of ``line`` that does ``op``, as written ("" when none or several)."""
        found = self.nodes.get((line, op), [])
        return ast.unparse(found[0]) if len(found) == 1 else ""

    def binary(self, line: int, op: str) -> tuple[str, str] | None:
        """The two names of the one ``a <op> b`` of ``line`` whose sides are plain variables."""
        found = [n for n in self.nodes.get((line, op), []) if isinstance(n, ast.BinOp)
                 and isinstance(n.left, ast.Name) and isinstance(n.right, ast.Name) and n.left.id != n.right.id]
        return (found[0].left.id, found[0].right.id) if len(found) == 1 else None

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def caller(self, name: str, line: int, value: float) -> int | None:
        """When ``name`` is a parameter of the function holding ``line``, the line that chose its
        ``value``: the one call passing ``name=value``, else the default when it is ``value``,
        else the function's one call (0 when none of these says); None when ``name`` is no
        parameter."""
        inside = [f for f in self.functions if f[0] <= line <= f[1]]
        if not inside:
            return None
        _, _, params, function = max(inside, key=lambda f: f[0])
        if name not in params:
            return None
        calls = self.calls.get(function, [])
        passing = [n for n, keywords in calls if _literal(keywords.get(name)) == value]
        if len(passing) == 1:
            return passing[0]
        default = self.defaults.get((function, name))
        if default is not None and _literal(default) == value:
            return default.lineno
        return calls[0][0] if len(calls) == 1 else 0

    def assignment(self, name: str, used_at: int) -> int | None:
        """The line that gave ``name`` the value line ``used_at`` used: the last assignment above it
        in the same function (a local) or anywhere in the file (``self.…``)."""
        lines = self.assigns.get(name, [])
        if not name.startswith("self."):
            inside = [(a, b) for a, b, _, _ in self.functions if a <= used_at <= b]
            if inside:
                a, b = max(inside)
                lines = [n for n in lines if a <= n <= b]
        before = [n for n in lines if n < used_at]
        return max(before) if before else (min(lines) if lines else None)

    def guard(self, line: int, outside: int, exits_before: int | None = None) -> tuple[int, int, int, bool] | None:
        """The condition or loop that decides whether ``line`` runs, innermost first, among those
        that do not also hold line ``outside``: (the line to show, the block's first and last line,
        whether it is a loop).
        The line is an ``if``'s, or a loop's own ``if …: break`` / ``continue`` above
        ``exits_before`` (default ``line``), else the loop's header."""
        around = [(a, b, n) for a, b, n in self.blocks if a <= line <= b and not a <= outside <= b and a != line]
        if not around:
            return None
        a, b, node = max(around, key=lambda x: x[0])
        if isinstance(node, (ast.For, ast.While)):
            limit = line if exits_before is None else exits_before
            exits = [s.lineno for s in ast.walk(node) if isinstance(s, ast.If) and s.lineno < limit
                     and any(isinstance(x, (ast.Break, ast.Continue)) for x in s.body)]
            if exits:
                return min(exits), a, b, True
        return a, a, b, isinstance(node, (ast.For, ast.While))


MAX_PERMUTED = 5  # axes: 5! = 120 permutations at most


def _axes_laid_as(r: torch.Tensor, shape: tuple[int, ...]):
    """``r`` when it has ``shape``, then ``r`` with its leading axes permuted to ``shape`` (the scores
    of an einsum written ``bthd,bshd->bths``, heads after the queries): a layout a correct attempt may
    use. The last axis stays (the keys of scores swapped with the queries are another mistake)."""
    if tuple(r.shape) == shape:
        yield r
        return
    if r.dim() != len(shape) or r.dim() > MAX_PERMUTED:
        return
    seen = set()
    for perm in itertools.permutations(range(r.dim())):
        order = tuple(a for a in perm if r.shape[a] != 1)
        if perm[-1] == r.dim() - 1 and tuple(r.shape[a] for a in perm) == shape and order not in seen:
            seen.add(order)
            yield r.permute(perm)


class Explainer:
    """The causes :mod:`.divergence` cannot see in values alone (see the module doc), for one
    pair of trails; ``matched[i]`` is attempt step ``i``'s (reference step, own layout) or None."""

    def __init__(self, attempt: list[Step], reference: list[Step], matcher, matched, axes: dict[str, int],
                 source: str = "", ref_source: str = ""):
        self.attempt, self.reference, self.matcher, self.matched, self.axes = attempt, reference, matcher, matched, axes
        self.src, self.ref_src = Source(source), Source(ref_source)
        self.tensors = [tensor_of(step) for step in attempt]
        self.constant = [is_constant(t) for t in self.tensors]
        self.children: dict[int, list[int]] = {}
        for i, step in enumerate(attempt):
            for p in step.parents:
                self.children.setdefault(p, []).append(i)
        self.explained: dict[int, Found | None] = {}
        self.ref_shapes = {tuple(r.shape) for r in reference}
        shared = [tuple(s.shape) in self.ref_shapes for s in attempt if not s.free]
        self.comparable = 4 * sum(shared) >= len(shared)  # the attempt mostly computes in the reference's shapes

    # --- entry points ---------------------------------------------------------------------------

    def instead_of_incomplete(self, i: int, p: int) -> Found | None:
        """Step ``i`` is computed from ``p``, which holds what the reference has half-way through
        one of its lines: a number that undid that line's step (``* scale`` with scale = 1), or the
        attempt's own line making up for it later by a wrong factor (scores scaled, not q)."""
        slip = self.culprit(p)
        if slip is not None:
            return slip
        end = self.run_end(i)
        return self.scaled(end) if end != i else None

    def claims(self, i: int) -> bool:
        """Whether what the attempt computes from step ``i`` on mostly has shapes the reference
        has: when it does not (all L query rows against key tiles, where the reference cuts the
        queries too), nothing after it can be matched and no line is claimed for it. A step of a shape
        the reference has is claimed whatever follows it (a norm's output that a loop over heads goes on
        from, each head a (B, T, T) product the batched reference never makes)."""
        if not self.comparable:  # two trails driven differently (a script against one forward): no such rule
            return True
        if tuple(self.attempt[i].shape) in self.ref_shapes:
            return True
        later, todo = set(), list(self.children.get(i, []))
        while todo:
            j = todo.pop()
            if j not in later:
                later.add(j)
                todo.extend(self.children.get(j, []))
        shaped = [tuple(self.attempt[j].shape) in self.ref_shapes for j in later if not self.attempt[j].free]
        return not shaped or 2 * sum(shaped) >= len(shaped)

    def step_name(self, i: int) -> str:
        """The variable the step's line assigns, or the expression that made the step when the
        line goes on with it (``kpos >= qpos`` inside ``s = s.masked_fill(kpos >= qpos, …)``)."""
        step = self.attempt[i]
        if self.run_end(i) != i:
            return self.src.expression(step.line, op_name(step.func)) or assigned(step.code)
        return assigned(step.code)

    # --- helpers ----------------------------------------------------------------------------------

    def _found(self, line: int, code: str, name: str, shape, named: str, reason: str, ref: Step | None = None,
               ref_named: str | None = None) -> Found:
        return Found(line, code, name, tuple(shape), named, reason, assigned(ref.code) if ref else "",
                     (name_shape(ref.shape, self.axes) if ref else "") if ref_named is None else ref_named,
                     ref.code if ref else "")

    def run_end(self, i: int) -> int:
        """The last step of the run of step ``i``'s line that is computed from it."""
        return line_end(self.attempt, i)

    def holds(self, p: int, q: int) -> bool:
        """Attempt step ``p`` holds reference step ``q``'s values in the reference's layout (axes of
        size 1 aside: a row max kept as (B, H, bq) for the reference's (B, H, bq, 1))."""
        m = self.matched[p]
        if m is not None and m[0] == q:
            return m[1]
        r, t = self.matcher.ref[q][1], self.tensors[p]
        if m is None or r is None or t is None or r.numel() != t.numel():
            return False
        squeezed = [n for n in t.shape if n != 1] == [n for n in r.shape if n != 1]
        return squeezed and close(r, t.reshape(r.shape))

    def counterpart(self, i: int) -> int | None:
        """The reference step that does what step ``i`` does: the same operation on the inputs
        that match (one right-looking input may be the wrong one, a number or a constant input
        may differ), the one soon after those inputs and of the same shape preferred."""
        step, best = self.attempt[i], None
        sure = [p for p in step.parents if self.matched[p] is not None and self.matched[p][1] and not self.constant[p]]
        at = max((self.matched[p][0] for p in sure), default=0)
        for r, ref in enumerate(self.reference):
            if op_name(ref.func) != op_name(step.func) or len(ref.parents) != len(step.parents):
                continue
            held = sum(any(self.holds(p, q) for q in ref.parents) for p in sure)
            if held < len(sure) - 1 or sure and not held:
                continue
            rank = (-held, ref.shape != step.shape, r < at, abs(r - at))
            if best is None or rank < best[0]:
                best = (rank, r)
        return None if best is None else best[1]

    # --- the causes -------------------------------------------------------------------------------

    def culprit(self, i: int, depth: int = 0) -> Found | None:
        """What makes step ``i`` differ from its counterpart: an input that is not the
        counterpart's (followed back: a constant started wrong or never updated, a number wrong
        further up), or a number of its own (``* scale`` with the wrong scale)."""
        if i in self.explained:
            return self.explained[i]
        self.explained[i] = None  # (a step is never its own ancestor; this also bounds the work)
        found = self.twice(i) or self._culprit(i, depth)
        self.explained[i] = found
        return found

    def _bias_added_later(self, i: int, other) -> bool:
        """Whether what step ``i`` makes (from a start value) is later added to, or subtracted from,
        a tensor of its own of the shape of the reference's ``other``: a bias built apart."""
        made = {i}
        for j in range(i + 1, len(self.attempt)):
            step = self.attempt[j]
            if not any(p in made for p in step.parents):
                continue
            if op_name(step.func) in ("add", "add_", "sub", "sub_") and any(
                    p not in made and tuple(self.attempt[p].shape) == tuple(other.shape) for p in step.parents):
                return True
            made.add(j)
        return False

    def _culprit(self, i: int, depth: int) -> Found | None:
        r = self.counterpart(i)
        if r is None:
            return None
        ref, step = self.reference[r], self.attempt[i]
        wrong = [p for p in step.parents if not any(self.holds(p, q) for q in ref.parents)]
        spare = [q for q in ref.parents if not any(self.holds(p, q) for p in step.parents)]
        for p in wrong:
            up = self.culprit(p, depth + 1) if depth < MAX_CULPRIT_DEPTH else None
            if up is not None:
                return up
            parent = self.attempt[p]
            one_value = self.constant[p] or (self.tensors[p] is not None and self.tensors[p].numel() == 1)
            if len(wrong) != 1 or len(spare) != 1 or parent.line == step.line or not parent.free or not one_value:
                continue
            other = self.reference[spare[0]]
            if not other.free and self._bias_added_later(i, other):
                continue  # zeros filled as a bias, added to the scores later (Hugging Face's additive mask)
            if not other.free:  # a variable still at its starting value where the reference has updated it
                return self._found(step.line, step.code, assigned(parent.code), parent.shape,
                                   name_shape(parent.shape, self.axes), "stale", other)
            start = tensor_of(other)
            if is_constant(start) and not close(self.tensors[p].flatten()[:1], start.flatten()[:1]):
                parent = self.attempt[self._made(p)]  # where the start value is set, not a slice read of it
                return self._found(parent.line, parent.code, assigned(parent.code), parent.shape,
                                   f"{float(self.tensors[p].flatten()[0]):g}", "start", other,
                                   f"{float(start.flatten()[0]):g}")
        if wrong or len(step.scalars) != len(ref.scalars):
            return None
        for scalar, ref_scalar in zip(step.scalars, ref.scalars):
            value, name, ref_value = scalar.value, scalar.name, ref_scalar.value
            if ref_scalar.name in names_of(name):  # several variables held it (scale and i both 0): the reference's
                name = ref_scalar.name
            if _same_number(value, ref_value):
                continue
            numbers = dict(named=f"{value:g}", ref=ref, ref_named=f"{ref_value:g}")
            call = self.src.caller(name, step.line, value) if name else None
            if call is not None:  # a parameter: the caller chose the number (0: which caller is unclear)
                return self._found(call, self.src.code(call), name, step.shape, reason="number", **numbers) if call else None
            # the variable is to blame when the reference holds another value under its name (scale);
            # when it holds this one (D in view(B, T, H, D)), the use is (/ D for / sqrt(D))
            alike = [x.value for s in self.reference for x in s.scalars if x.name == name] if name else []
            line = self.src.assignment(name, step.line) if alike and not any(_same_number(value, v) for v in alike) else None
            return self._found(line or step.line, self.src.code(line) if line else step.code, name, step.shape,
                               reason="number" if name else "number_literal", **numbers)
        return None

    def _made(self, p: int) -> int:
        """The step that made the tensor step ``p`` only takes a part of, views or casts
        (``m[:, :, i:i + b]`` of ``m = torch.zeros(…)``): ``p`` itself when it does more."""
        while len(self.attempt[p].parents) == 1 and func_name(self.attempt[p].func) in PICKS:
            p = self.attempt[p].parents[0]
        return p

    def twice(self, i: int) -> Found | None:
        """``m - m_new`` where both names hold one tensor (``m = m_new`` ran too early): the line
        that made them one."""
        step = self.attempt[i]
        if len(step.parents) != 1 or step.scalars:
            return None
        names = self.src.binary(step.line, op_name(step.func))
        if names is None:
            return None
        lines = {n: self.src.assignment(n, step.line) for n in names}
        if None in lines.values():
            return None
        name = max(lines, key=lambda n: lines[n])  # the one bound last, to the other
        other = names[1] if name == names[0] else names[0]
        line = lines[name]
        if line == step.line or other not in re.findall(r"\w+", self.src.code(line).split("=", 1)[-1]):
            return None
        return Found(line, self.src.code(line), name, tuple(step.shape), name_shape(step.shape, self.axes), "twice",
                     other, "", step.code)

    def scaled(self, i: int) -> Found | None:
        """Step ``i`` holds a reference step's values times a constant other than 1."""
        t = self.tensors[i]
        if t is None or self.constant[i]:
            return None
        finite = torch.isfinite(t)
        refs = self.matcher.ref
        for at, (ref, found_rt) in enumerate(refs):
            if found_rt is None or found_rt.numel() != t.numel():
                continue
            # a step inside a line that goes on to the value the line assigns (`q @ kᵀ` of `scores =
            # q @ kᵀ / sqrt(D)`): the factor is said against what the line's name holds
            if at + 1 < len(refs) and refs[at + 1][0].line == ref.line and at in refs[at + 1][0].parents:
                continue
            for rt in _axes_laid_as(found_rt, tuple(t.shape)):  # its own layout, or its axes permuted as t's
                if not torch.equal(torch.isfinite(rt), finite):
                    continue
                big = rt.masked_fill(~finite, 0).abs().flatten()
                k = int(big.argmax())
                if big[k] == 0:
                    continue
                factor = float(t.flatten()[k] / rt.flatten()[k])
                if not math.isfinite(factor) or factor == 0 or math.isclose(factor, 1, rel_tol=1e-3):
                    continue
                if close(t[finite], factor * rt[finite]):
                    step = self.attempt[i]
                    return self._found(step.line, step.code, assigned(step.code), step.shape, f"{factor:.4g}", "scaled", ref)
        return None

    def noop_between(self, found: Found, i: int) -> Found | None:
        """``found`` says a step is missing after the line that made ``found.name``; between that line
        and step ``i``'s, in the same function, the file has one statement that does nothing, a
        ``pass`` or ``found.name`` assigned to itself (``q = q``, the ``k`` of ``q, k = rot(q), k``):
        where the missing step was meant to be, that statement is the line ("noop")."""
        step = self.attempt[i]
        if not any(a <= found.line and step.line <= b for a, b, _, _ in self.src.functions):
            return None
        lines = [n for n, names in sorted(self.src.noops.items()) if found.line < n < step.line and names & {"", found.name}]
        if len(lines) != 1:
            return None
        return dataclasses.replace(found, line=lines[0], code=self.src.code(lines[0]), reason="noop")

    def _left_out_in_helper(self, i: int, p: int, want: str) -> tuple[list[int], int]:
        """The lines doing ``want`` that never ran, in the function of the file called on the line
        of step ``i`` (or of its input ``p``) that made another input of that step (a mask, a bias),
        and a line of that function that ran; ([], 0) when there is none."""
        attempt, src = self.attempt, self.src
        ran = {n for s in attempt for n in (s.stack or [s.line])}
        for k, q in [(i, q) for q in attempt[i].parents] + [(p, q) for q in attempt[p].parents]:
            made, here = attempt[q], list(attempt[k].stack or [attempt[k].line])
            if q == p or len(made.stack or ()) <= len(here) or list(made.stack[:len(here)]) != here:
                continue
            inner = made.stack[len(here)]
            spans = [(a, b) for a, b, _, _ in src.functions if a <= inner <= b]
            if not spans:
                continue
            a, b = max(spans)
            lines = [n for n in range(a, b + 1) if want in src.ops.get(n, ()) and n not in ran]
            if lines:
                return lines, inner
        return [], 0

    def _line_beside(self, parent: Step, step: Step) -> int:
        """``step``'s line at the level of ``parent``'s function: the frame of its stack that runs in
        the function whose body holds ``parent``'s line (the call of a helper that made it), else
        its own line."""
        inside = [(a, b) for a, b, _, _ in self.src.functions if a <= parent.line <= b]
        if not inside or not step.stack:
            return step.line
        a, b = max(inside)
        return next((n for n in reversed(list(step.stack)) if a <= n <= b), step.line)

    def skipped(self, i: int) -> Found | None:
        """A step the reference takes on one of step ``i``'s inputs before ``i``'s operation: run
        and dropped (its result assigned to nothing), or written on a line between the two that did
        not run this time (the ``if`` or the loop bound that left it out)."""
        attempt, src, step = self.attempt, self.src, self.attempt[i]
        for p in step.parents:
            if self.matched[p] is None:
                continue
            parent, r = attempt[p], self.matched[p][0]
            nexts = [ref for ref in self.reference[r + 1:] if r in ref.parents]
            if not nexts or any(op_name(ref.func) == op_name(step.func) for ref in nexts):
                continue
            want, name, shape = op_name(nexts[0].func), assigned(parent.code), name_shape(parent.shape, self.axes)
            if op_name(parent.func) == want and any(self.matched[x] == self.matched[p] for x in parent.parents):
                # the step ran and changed nothing (a mask that masks nothing here)
                return self._found(parent.line, parent.code, name, parent.shape, shape, "noop", nexts[0])
            dropped = [j for j in self.children.get(p, []) if j < i and op_name(attempt[j].func) == want
                       and j not in self.children and attempt[j].dtype.startswith(("float", "bfloat", "complex"))]
            if dropped:
                j = dropped[0]
                return self._found(attempt[j].line, attempt[j].code, name, parent.shape, shape, "discarded", nexts[0])
            ran = {attempt[j].line for j in range(p + 1, i)}
            # the attempt's line for that step: the one in the same place among the lines that do
            # that operation, when the file has as many as the reference; else one that did it
            # elsewhere on what the parent's line makes (another tile, another pass)
            ref_lines = sorted(n for n, ops in self.ref_src.ops.items() if want in ops)
            own_lines = sorted(n for n, ops in src.ops.items() if want in ops)
            if len(ref_lines) == len(own_lines) and nexts[0].line in ref_lines:
                same_place = {own_lines[ref_lines.index(nexts[0].line)]}
            else:
                same_place = {attempt[j].line for j, s in enumerate(attempt) if op_name(s.func) == want
                              and any(attempt[x].line == parent.line for x in s.parents)}
            lines = [n for n in range(parent.line + 1, step.line)
                     if want in src.ops.get(n, ()) and n not in ran and n in same_place]
            mentions = [n for n in lines if re.search(rf"\b{re.escape(name)}\b", src.code(n))]
            guard = None
            for n in (mentions or lines)[:1]:
                guard = (src.guard(n, parent.line) or (None,))[0]
            if not lines:  # the mask or bias step combines with, built by a helper of the file: a line of
                # it that takes that step and never ran (an `elif` the causal branch skipped)
                lines, run = self._left_out_in_helper(i, p, want)
                for n in lines[:1]:
                    guard = (src.guard(n, run) or (None,))[0]
            if not lines:  # the loop that carries the parent to its next pass ended here
                # (the step's line in the parent's function: a step made inside a helper the loop's
                # body calls, `s = matmul_t(qb, kb)`, runs in the loop, at the call's line)
                here = self._line_beside(parent, step)
                loop = src.guard(parent.line, here, exits_before=here)
                if loop and loop[3] and any(want in src.ops.get(n, ()) for n in range(loop[1], loop[2] + 1)):
                    guard = loop[0]
            if guard is not None:
                return self._found(guard, src.code(guard), name, parent.shape, shape, "guarded", nexts[0])
        return None
