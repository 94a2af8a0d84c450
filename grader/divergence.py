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


def _blame(i: int, attempt: list[Step], matched, reference: list[Step]) -> tuple[int, str] | None:
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
        return "incomplete" if _intermediate(reference, m[0]) else None

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


def _wrong_outputs(attempt: list[Step], reference: list[Step], matched, outputs) -> dict[int, tuple[str, int]]:
    """Attempt step -> (output name, the reference's step for it), for each named output whose
    values differ from the reference's in every layout a correct attempt may use and that no
    wrong tensor made apart from the inputs led to (a rotation by the wrong angles is the angles'
    mistake, not the output's)."""
    if not outputs:
        return {}
    mine, theirs = outputs

    def wrong_free_above(a: int) -> bool:
        seen, todo = set(), list(attempt[a].parents)
        while todo:
            q = todo.pop()
            if q in seen:
                continue
            seen.add(q)
            if attempt[q].free and matched[q] is None and _tensor(attempt[q]) is not None:
                return True
            todo.extend(attempt[q].parents)
        return False

    wrong = {}
    for name, a in mine.items():
        r = theirs.get(name)
        if (r is not None and 0 <= a < len(attempt) and 0 <= r < len(reference) and not _identical(attempt[a], reference[r])
                and (matched[a] is None or matched[a][0] != r) and not wrong_free_above(a)):
            wrong[a] = (name, r)
    return wrong


def _ancestors(r: int, reference: list[Step]) -> set[int]:
    """The reference steps that step ``r`` is computed from, however far back."""
    seen, todo = set(), list(reference[r].parents)
    while todo:
        q = todo.pop()
        if q not in seen:
            seen.add(q)
            todo.extend(reference[q].parents)
    return seen


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
         outputs: tuple[dict[str, int], dict[str, int]] | None = None) -> Found | None:
    """The first step of ``attempt`` that goes wrong for good (see the module doc), or None.
    ``outputs``: the steps that made each named output, the attempt's and the reference's."""
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

    wrong_outputs = _wrong_outputs(attempt, reference, matched, outputs)
    ref_names = {assigned(r.code) for r in reference} - {""}
    for i, step in enumerate(attempt):
        if i in wrong_outputs and matched[i] is not None and not step.free:
            # an output that holds another value of the reference's (the keys returned as the
            # values, the latent cached before its norm): wrong where that value is made
            name, r = wrong_outputs[i]
            short = matched[i][0] in _ancestors(r, reference)  # an earlier stage of that output
            return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes),
                         "short" if short else "output", name, name_shape(reference[r].shape, axes), reference[r].code)
        # an output that differs from the reference's is wrong for good, whatever is made from it
        # later (a cache in the wrong order that the next call's attention happens not to mind)
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
        blamed = _blame(i, attempt, matched, reference)
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
            # a tensor named like one of the reference's that holds another of its values (q = k_proj(x))
            name = assigned(parent.code)
            ref_name = assigned(reference[m[0]].code) if m is not None else ""
            if (m is not None and parent.line != step.line and name in ref_names and "," not in ref_name + name
                    and ref_name not in ("", name)):
                ref_step = reference[m[0]]
                return Found(parent.line, parent.code, name, tuple(parent.shape), name_shape(parent.shape, axes),
                             "role", assigned(ref_step.code), name_shape(ref_step.shape, axes))
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
