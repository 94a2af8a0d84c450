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
        """(reference step, whether in the reference's own layout) that ``t`` matches, or None."""
        for i in self.same_values(t):
            _, r = self.ref[i]
            if tuple(r.shape) == tuple(t.shape) and _close(r, t):
                return i, True
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


def assigned(code: str) -> str:
    """The variable a line assigns: ``q = self.q_proj(x)`` -> ``q``; ``q, k, v = …`` -> ``q, k, v``."""
    m = re.match(r"^\s*([A-Za-z_][\w, ]*?)\s*(?:[+\-*/@]?=)(?!=)", code)
    return m.group(1).strip() if m else ""


def name_shape(shape, axes: dict[str, int]) -> str:
    """``(3, 7, 4, 4)`` as ``(B, T, H, D)`` where each size names one axis; numbers where it cannot."""
    by_size: dict[int, list[str]] = {}
    for name, size in axes.items():
        by_size.setdefault(size, []).append(name)
    names = []
    for n in shape:
        candidates = by_size.get(n, [])
        names.append(candidates[0] if len(candidates) == 1 else str(n))
    return "(" + ", ".join(names) + ")"


def find(attempt: list[Step], reference: list[Step], axes: dict[str, int], raised_at: int | None = None) -> Found | None:
    """The first step of ``attempt`` that goes wrong for good (see the module doc), or None."""
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

    for i, step in enumerate(attempt):
        if matched[i] is not None or _tensor(step) is None or recovers(i):
            continue
        # A parent in a layout the reference never feeds on: that parent's line is the one to fix.
        for p in step.parents:
            m = matched[p]
            if m is not None and not m[1]:
                parent = attempt[p]
                ref_step = reference[m[0]]
                return Found(parent.line, parent.code, assigned(parent.code), tuple(parent.shape),
                             name_shape(parent.shape, axes), "layout", assigned(ref_step.code),
                             name_shape(ref_step.shape, axes))
        t = _tensor(step)
        same = matcher.same_values(t)
        if same:  # the right numbers in a layout no correct attempt uses: a view where a transpose belongs
            ref_step = reference[same[0]]
            return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes),
                         "layout", assigned(ref_step.code), name_shape(ref_step.shape, axes))
        return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, axes), "values")
    if raised_at is not None:
        last = next((s for s in reversed(attempt) if s.line == raised_at), None)
        code = last.code if last is not None else ""
        shape = tuple(last.shape) if last is not None else ()
        return Found(raised_at, code, assigned(code), shape, name_shape(shape, axes) if shape else "", "raised")
    return None
