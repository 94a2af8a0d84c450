"""Where the attempt first goes wrong: its trail against the reference's, up to layout.

Both trails are lists of :class:`~attnprep.grader.trace.Step` recorded on the same case with the
same weights. An attempt's step *matches* a reference step when it holds the same values in a
layout a correct attempt may use: the reference's axes permuted (``(B, T, H, D)`` for
``(B, H, T, D)``), adjacent axes merged (``(B*H, T, D)``, heads merged into ``C``) or split
(``(B, G, n_rep, T, D)`` for GQA's grouping). A view that scrambles axes (``view(B, H, T, D)``
straight from ``(B, T, C)``) holds the same numbers but matches no layout.

The divergence is the first step that matches nothing and from which the attempt never gets back
on track (no later step computed from it matches). When that step was computed from a tensor that
holds the right values in a layout the reference never feeds to that operation, the line that made
the tensor is the one to fix ("q is (B, T, H, D) where the reference has (B, H, T, D)").
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass

import torch

from attnprep.grader.tensors import ATOL, RTOL
from attnprep.grader.trace import Step

MAX_PERMUTED_DIMS = 5  # 5! = 120 permutations at most per candidate pair


@dataclass(frozen=True)
class Found:
    line: int
    code: str
    name: str  # the variable the line assigns ("q"), or "" when it assigns none
    shape: tuple[int, ...]
    named: str  # the shape in axis names, "(B, T, H, D)"
    reason: str  # "layout", "values", "raised"
    ref_name: str = ""  # the reference's counterpart, when one is known
    ref_named: str = ""
    ref_code: str = ""


def _tensor(step: Step) -> torch.Tensor | None:
    if step.values is None or len(step.values) != math.prod(step.shape):
        return None
    return torch.tensor(step.values, dtype=torch.float64).reshape(step.shape)


def _refines(fine: tuple[int, ...], coarse: tuple[int, ...]) -> bool:
    """Whether ``coarse`` is ``fine`` with runs of adjacent axes merged."""
    if math.prod(fine) != math.prod(coarse):
        return False
    i = 0
    for size in coarse:
        product = 1
        while product < size and i < len(fine):
            product *= fine[i]
            i += 1
        while product == size and i < len(fine) and fine[i] == 1:
            i += 1
        if product != size:
            return False
    return i == len(fine)


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(torch.isclose(a, b, rtol=RTOL * 10, atol=ATOL * 10, equal_nan=True).all())


def _identical(a: Step, b: Step) -> bool:
    """The same shape and values (a step too big to keep its values: the same shape)."""
    ta, tb = _tensor(a), _tensor(b)
    if ta is None or tb is None:
        return a.shape == b.shape
    return ta.shape == tb.shape and _close(ta, tb)


class Matcher:
    def __init__(self, reference: list[Step]):
        self.ref = [(s, _tensor(s)) for s in reference]
        self.sorted = {}
        for i, (s, t) in enumerate(self.ref):
            if t is not None:
                self.sorted[i] = t.flatten().nan_to_num(nan=1e30).sort().values

    def same_values(self, t: torch.Tensor) -> list[int]:
        """Reference steps holding the same multiset of values (any layout)."""
        key = t.flatten().nan_to_num(nan=1e30).sort().values
        return [i for i, v in self.sorted.items() if v.numel() == key.numel() and _close(v, key)]

    def equal(self, t: torch.Tensor) -> list[int]:
        """Reference steps holding ``t`` in its own shape (a no-op such as ``.to`` repeats one)."""
        return [i for i in self.same_values(t) if tuple(self.ref[i][1].shape) == tuple(t.shape) and _close(self.ref[i][1], t)]

    def match(self, t: torch.Tensor) -> tuple[int, bool] | None:
        """(reference step, whether in the reference's own layout) that ``t`` matches, or None.
        A step the reference makes in the same layout wins over a permuted one."""
        same = self.same_values(t)
        for i in same:
            _, r = self.ref[i]
            if tuple(r.shape) == tuple(t.shape) and _close(r, t):
                return i, True
        for i in same:
            _, r = self.ref[i]
            if r.dim() > MAX_PERMUTED_DIMS:
                continue
            for perm in itertools.permutations(range(r.dim())):
                p = r.permute(perm)
                shape = tuple(p.shape)
                if _refines(shape, tuple(t.shape)):
                    if _close(p.reshape(t.shape), t):
                        return i, perm == tuple(range(r.dim()))
                elif _refines(tuple(t.shape), shape):
                    if _close(t.reshape(shape), p):
                        return i, perm == tuple(range(r.dim()))
        return None


def _intermediate(reference: list[Step], i: int) -> bool:
    """Whether reference step ``i`` is consumed by a later step of the same line of the reference."""
    line = reference[i].line
    return any(s.line == line and i in s.parents for s in reference[i + 1:])


_SCALING = {"mul", "div", "truediv", "rmul", "rtruediv", "rdiv", "imul", "itruediv", "idiv", "multiply", "divide"}


def _family(func: str) -> str:
    """An operation's name up to its spelling: ``x * s``, ``x / s`` and ``torch.mul`` all scale."""
    name = func.strip("_")
    return "scale" if name in _SCALING else name


def _blame(i: int, attempt: list[Step], matched, reference: list[Step], equal=None) -> tuple[int, str] | None:
    """The input of step ``i`` that holds reference values in a layout of its own ("layout") or a
    value the reference only has half-way through one of its lines ("incomplete"): the earliest
    such input made on another line than step ``i``; when those are all on step ``i``'s own line
    (``k.transpose(-2, -1)`` inside ``q @ k.transpose(-2, -1)``), the same one level up."""

    def suspect(p: int) -> str | None:
        m = matched[p]
        if m is None or attempt[p].free:  # a mask made apart from the inputs is no half-done computation
            return None
        if not m[1]:
            return "layout"
        # half-way through a line of the reference wherever the reference has that value (a cast
        # that keeps the values makes it twice, once half-way and once as the line's result)
        same = (equal(p) if equal is not None else []) or [m[0]]
        half = [r for r in same if _intermediate(reference, r)]
        if len(half) < len(same):
            return None
        # ... unless step i takes that missing step itself, another way (the scale on a line of its
        # own, with the wrong number): then step i is where it goes wrong
        done = {_family(s.func) for r in half for s in reference[r + 1:] if s.line == reference[r].line and r in s.parents}
        return "incomplete" if half and _family(attempt[i].func) not in done else None

    level = list(attempt[i].parents)
    for _ in range(3):
        found = [(p, r) for p in level if (r := suspect(p)) is not None]
        elsewhere = [f for f in found if attempt[f[0]].line != attempt[i].line]
        if elsewhere:
            return min(elsewhere)
        if not found:
            return None
        level = [q for p, _ in found for q in attempt[p].parents]
    return None


def _inputs(i: int, attempt: list[Step]) -> list[int]:
    """The steps of other lines that step ``i``'s line feeds it (through up to three steps of its own
    line: ``k`` in ``q @ k.transpose(-2, -1)``), earliest first."""
    found, level = set(), list(attempt[i].parents)
    for _ in range(3):
        found.update(p for p in level if attempt[p].line != attempt[i].line)
        level = [q for p in level if attempt[p].line == attempt[i].line for q in attempt[p].parents]
    return sorted(found)


def _ancestors(r: int, reference: list[Step]) -> set[int]:
    """The reference steps that step ``r`` is computed from, however far back."""
    seen, todo = set(), list(reference[r].parents)
    while todo:
        q = todo.pop()
        if q not in seen:
            seen.add(q)
            todo.extend(reference[q].parents)
    return seen


def _own_name(i: int, attempt: list[Step]) -> str:
    """The variable step ``i`` is assigned to: ``k_pe`` for the second result of
    ``kv, k_pe = torch.split(…)``."""
    names = [n.strip() for n in assigned(attempt[i].code).split(",")]
    if len(names) < 2:
        return names[0]
    step = attempt[i]
    siblings = [j for j, s in enumerate(attempt) if s.line == step.line and s.func == step.func
                and s.parents == step.parents and abs(j - i) < len(names)]
    return names[siblings.index(i)] if len(siblings) == len(names) else ", ".join(names)


def _first_of_role(p: int, attempt: list[Step], matched, reference: list[Step]) -> int:
    """The earliest step up ``p``'s chain that has its name and holds the same reference tensor as
    it (``k = v_proj(x)…`` before ``k = k.repeat_interleave(…)``)."""
    name, ref_name = assigned(attempt[p].code), assigned(reference[matched[p][0]].code)
    while True:
        up = [q for q in attempt[p].parents if matched[q] is not None and assigned(attempt[q].code) == name
              and assigned(reference[matched[q][0]].code) == ref_name]
        if not up:
            return p
        p = min(up)


def _idle_mask(i: int, attempt: list[Step], matched, reference: list[Step]) -> tuple[int, str] | None:
    """A step up to three back from ``i`` that gave out the reference's value of its own input, unchanged,
    while it took a mask the reference never makes (made without the inputs, matching nothing): the
    mask's first such step ("made"), or the line before it whose mask stops half-way through the
    reference's line (``tril`` with the wrong diagonal leaving ``ones(T, S)``: "incomplete")."""
    level, seen = [i], set()
    for _ in range(3):
        nxt = []
        for a in level:
            for p in attempt[a].parents:
                if p in seen:
                    continue
                seen.add(p)
                m, step = matched[p], attempt[p]
                if m is None or step.free:
                    continue
                masks = [q for q in step.parents if attempt[q].free and matched[q] is None]
                same = [q for q in step.parents if not attempt[q].free and matched[q] is not None and matched[q][0] == m[0]]
                if masks and same:
                    f = min(masks)
                    while True:
                        up = [q for q in attempt[f].parents if attempt[q].free and matched[q] is None]
                        if not up:
                            break
                        f = min(up)
                    short = [q for q in attempt[f].parents if attempt[q].free and matched[q] is not None
                             and _intermediate(reference, matched[q][0])]
                    return (short[0], "incomplete") if short else (f, "made")
                nxt.append(p)
        level = nxt
    return None


def _stale(i: int, attempt: list[Step], matched, reference: list[Step]) -> tuple[int, int, bool] | None:
    """(input of step ``i``, the reference's next step on it, whether that step belongs next to
    step ``i`` rather than next to the input) when the reference, before it applies ``i``'s
    operation to that input's value, takes further steps on it that the attempt leaves out: the
    input is used as it was some lines too early. The missing step sits next to whichever of the
    two it is nearer in the reference's order (a mask just before the softmax, a norm just after
    the projection). Steps that keep the values (``.to`` of the same dtype) are no steps here."""
    func = attempt[i].func.strip("_")
    tensors: dict[int, torch.Tensor | None] = {}

    def tensor(r: int):
        if r not in tensors:
            tensors[r] = _tensor(reference[r])
        return tensors[r]

    kids: dict[int, list[int]] = {}
    for r, s in enumerate(reference):
        for q in s.parents:
            kids.setdefault(q, []).append(r)

    def next_steps(r: int) -> list[int]:
        """What the reference does with ``r``'s value, looking through steps that keep it."""
        out, todo, seen = [], list(kids.get(r, [])), set()
        while todo:
            k = todo.pop(0)
            if k in seen:
                continue
            seen.add(k)
            a, b = tensor(r), tensor(k)
            if a is not None and b is not None and a.shape == b.shape and _close(a, b):
                todo.extend(kids.get(k, []))
            else:
                out.append(k)
        return out

    def feeds(c: int) -> set[int]:
        """What reference step ``c`` is computed from, through the steps of its own line."""
        out, level = set(), list(reference[c].parents)
        for _ in range(3):
            out.update(level)
            level = [q for r in level if reference[r].line == reference[c].line for q in reference[r].parents]
        return out

    for p in attempt[i].parents:
        m = matched[p]
        if m is None or not m[1] or attempt[p].free:
            continue
        # the reference's counterparts of step i's other inputs: the later step must take them too
        others = {matched[q][0] for q in attempt[i].parents if q != p and matched[q] is not None and not attempt[q].free}
        first = next_steps(m[0])
        if not first or any(reference[k].func.strip("_") == func for k in first):
            continue  # the reference does this very operation to that value (or nothing at all)
        frontier, seen = list(kids.get(m[0], [])), set(kids.get(m[0], []))
        for _ in range(16):  # a helper's few lines (a rotation through complex numbers) count as steps
            for k in frontier:
                fed = feeds(k)
                # the same operation, on the same other inputs, and on a later value of this one
                if reference[k].func.strip("_") == func and others <= fed and (fed - others) & seen:
                    missing = min(first)
                    return p, missing, k - missing < missing - m[0]
            frontier = [c for k in frontier for c in kids.get(k, []) if c not in seen]
            seen.update(frontier)
    return None


def _output_layout(attempt: list[Step], matched, reference: list[Step]) -> tuple[int, int] | None:
    """(attempt step, reference step) where a result of the reference (a step nothing of the
    reference uses) comes out in another layout and never in its own: the earliest step of that
    other layout on the way to it."""
    used = {q for s in reference for q in s.parents}
    sinks = {r for r, s in enumerate(reference) if r not in used and not s.free}
    own = {m[0] for j, m in enumerate(matched) if m is not None and tuple(attempt[j].shape) == tuple(reference[m[0]].shape)}
    for j, m in enumerate(matched):
        if m is None or m[0] not in sinks or m[0] in own or tuple(attempt[j].shape) == tuple(reference[m[0]].shape):
            continue
        p = j
        while True:
            up = [q for q in attempt[p].parents if matched[q] is not None and not attempt[q].free
                  and tuple(attempt[q].shape) != tuple(reference[matched[q][0]].shape)]
            if not up:
                return p, matched[p][0]
            p = max(up)
    return None


def assigned(code: str) -> str:
    """The variable a line assigns: ``q = self.q_proj(x)`` -> ``q``; ``q, k, v = …`` -> ``q, k, v``."""
    m = re.match(r"^\s*([A-Za-z_][\w, ]*?)\s*(?:[+\-*/@]?=)(?!=)", code)
    return m.group(1).strip() if m else ""


def name_shape(shape, axes: dict[str, int]) -> str:
    """``(3, 7, 4, 4)`` as ``(B, T, H, D)`` where each size names one axis; numbers where it cannot."""
    by_size: dict[int, list[str]] = {}
    for name, size in axes.items():
        by_size.setdefault(size, []).append(name)
    used: dict[int, int] = {}
    names = []
    for n in shape:  # sizes shared by several axes are named in the order the axes are listed (H before D)
        candidates = by_size.get(n, [])
        k = used.get(n, 0)
        used[n] = k + 1
        if len(candidates) == 1:
            names.append(candidates[0])
        elif candidates and shape.count(n) == len(candidates):
            names.append(candidates[k])
        else:
            names.append(str(n))
    return "(" + ", ".join(names) + ")"


def find(attempt: list[Step], reference: list[Step], axes: dict[str, int], raised_at: int | None = None,
         outputs: list[tuple[int, int, str]] = ()) -> Found | None:
    """The first step of ``attempt`` that goes wrong for good (see the module doc), or None.
    ``outputs``: (attempt step, reference step, name) of each graded output both made. An output
    that differs from the reference's is wrong for good, whatever is made from it later (a cache in
    the wrong order that the next call's attention happens not to mind); one that holds another
    value of the reference's is wrong where it is made (the keys returned as the values)."""
    if not attempt or not reference:
        return None
    matcher = Matcher(reference)
    matched: list[tuple[int, bool] | None] = []
    for step in attempt:
        t = _tensor(step)
        matched.append(None if t is None else matcher.match(t))
    children: dict[int, list[int]] = {}
    for i, step in enumerate(attempt):
        for p in step.parents:
            children.setdefault(p, []).append(i)

    def recovers(i: int) -> bool:
        seen, todo = set(), list(children.get(i, []))
        while todo:
            j = todo.pop()
            if j in seen:
                continue
            seen.add(j)
            if matched[j] is not None:
                return True
            todo.extend(children.get(j, []))
        return False

    wrong_outputs = {a: (r, name) for a, r, name in outputs if 0 <= a < len(attempt) and 0 <= r < len(reference)
                     and not _identical(attempt[a], reference[r]) and (matched[a] is None or matched[a][0] != r)}
    ref_names = {assigned(r.code) for r in reference} - {""}
    for i, step in enumerate(attempt):
        if i in wrong_outputs and matched[i] is not None and not step.free:
            r, output = wrong_outputs[i]
            ref_out = reference[r]
            if matched[i][0] in _ancestors(r, reference):  # an earlier value of that output: it stops short
                return Found(step.line, step.code, _own_name(i, attempt), tuple(step.shape),
                             name_shape(step.shape, axes), "short", output, name_shape(ref_out.shape, axes), ref_out.code)
            return Found(step.line, step.code, _own_name(i, attempt), tuple(step.shape), name_shape(step.shape, axes),
                         "output", output, name_shape(ref_out.shape, axes), ref_out.code)
        if step.free or matched[i] is not None or _tensor(step) is None or (i not in wrong_outputs and recovers(i)):
            continue
        t = _tensor(step)
        same = matcher.same_values(t)
        if same:  # the right numbers in a layout no correct attempt uses: a view where a transpose belongs
            name = assigned(step.code)
            same.sort(key=lambda j: (assigned(reference[j].code) != name, len(reference[j].shape) != len(step.shape)))
            ref_step = reference[same[0]]
            return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes),
                         "layout", assigned(ref_step.code), name_shape(ref_step.shape, axes))
        # The right values computed from inputs that are not what the reference feeds that operation:
        # an input in a layout the reference never uses there ("layout"), or one the reference only
        # has half-way through one of its lines, q @ kᵀ before the scale ("incomplete"). The
        # earliest such ancestor (up to three steps back) made the mistake.
        blamed = _blame(i, attempt, matched, reference, lambda p: matcher.equal(_tensor(attempt[p])))
        if blamed is not None:
            p, reason = blamed
            parent, ref_step = attempt[p], reference[matched[p][0]]
            return Found(parent.line, parent.code, assigned(parent.code), tuple(parent.shape),
                         name_shape(parent.shape, axes), reason, assigned(ref_step.code),
                         name_shape(ref_step.shape, axes), ref_step.code)
        for p in step.parents:
            parent, m = attempt[p], matched[p]
            # a tensor made by the file alone (a mask) that the reference never makes: the earliest
            # such step it was made from
            if parent.free and m is None:
                while True:
                    up = [q for q in parent.parents if attempt[q].free and matched[q] is None]
                    if not up:
                        break
                    p = min(up)
                    parent = attempt[p]
                return Found(parent.line, parent.code, assigned(parent.code), tuple(parent.shape),
                             name_shape(parent.shape, axes), "made")
        for p in _inputs(i, attempt):
            parent, m = attempt[p], matched[p]
            # a tensor named like one of the reference's that holds another of its values (q = k_proj(x)),
            # from the first line of that confusion on (k = v_proj(x) … k = k.repeat_interleave(…))
            name = assigned(parent.code)
            ref_name = assigned(reference[m[0]].code) if m is not None else ""
            if (m is not None and parent.line != step.line and name in ref_names and "," not in ref_name + name
                    and ref_name not in ("", name)):
                p = _first_of_role(p, attempt, matched, reference)
                parent, ref_step = attempt[p], reference[matched[p][0]]
                return Found(parent.line, parent.code, name, tuple(parent.shape), name_shape(parent.shape, axes),
                             "role", assigned(ref_step.code), name_shape(ref_step.shape, axes))
        # a mask the reference never makes that a step used to no effect (masked_fill with nothing
        # to mask: the scores come out as the reference's before masking): the line that made it
        unused = _idle_mask(i, attempt, matched, reference)
        if unused is not None:
            p, reason = unused
            parent = attempt[p]
            ref_step = reference[matched[p][0]] if matched[p] is not None else None
            return Found(parent.line, parent.code, assigned(parent.code), tuple(parent.shape),
                         name_shape(parent.shape, axes), reason, assigned(ref_step.code) if ref_step else "",
                         name_shape(ref_step.shape, axes) if ref_step else "", ref_step.code if ref_step else "")
        # an input the reference transforms further (on lines the attempt does not have) before it
        # does what this step does with it: kv used where the reference uses kv_norm(kv)
        stale = _stale(i, attempt, matched, reference)
        if stale is not None:
            p, r, at_use = stale
            parent, ref_step = attempt[p], reference[r]
            if at_use:  # the step is missing just before this line
                return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes),
                             "stale_use", _own_name(p, attempt), name_shape(parent.shape, axes), ref_step.code)
            return Found(parent.line, parent.code, _own_name(p, attempt), tuple(parent.shape),
                         name_shape(parent.shape, axes), "stale", assigned(ref_step.code),
                         name_shape(ref_step.shape, axes), ref_step.code)
        return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes), "values")
    turned = _output_layout(attempt, matched, reference)
    if turned is not None:  # every value has a counterpart, but a result comes out in another layout
        p, r = turned
        step, ref_step = attempt[p], reference[r]
        return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes),
                     "layout", assigned(ref_step.code), name_shape(ref_step.shape, axes))
    if raised_at is None and attempt and matched[-1] is not None and matched[-1][0] != len(reference) - 1:
        # every step has a counterpart, yet the result is wrong: the attempt stops short of the end
        last, ref_last = attempt[-1], reference[-1]
        return Found(last.line, last.code, assigned(last.code), tuple(last.shape), name_shape(last.shape, axes),
                     "short", assigned(reference[matched[-1][0]].code), name_shape(ref_last.shape, axes), ref_last.code)
    if raised_at is not None:
        last = next((s for s in reversed(attempt) if s.line == raised_at), None)
        code = last.code if last is not None else ""
        shape = tuple(last.shape) if last is not None else ()
        return Found(raised_at, code, assigned(code), shape, name_shape(shape, axes) if shape else "", "raised")
    return None


def locate(found: Found, attempt: list[Step], reference: list[Step]) -> int | None:
    """The attempt step ``found`` is about: the first step of its line and shape (for wrong values,
    the first of those that match nothing the reference makes; where it raised, the last step)."""
    if found.reason == "raised":
        return len(attempt) - 1 if attempt else None
    candidates = [j for j, s in enumerate(attempt) if s.line == found.line and tuple(s.shape) == tuple(found.shape)]
    if found.reason in ("values", "made") and len(candidates) > 1:
        matcher = Matcher(reference)
        for j in candidates:
            t = _tensor(attempt[j])
            if t is not None and matcher.match(t) is None:
                return j
    return candidates[0] if candidates else None
