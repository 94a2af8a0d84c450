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

Before those rules, the step is lined up with its *counterpart*, the reference step that applies the
same function to the same inputs (or to earlier stages of them), and the difference is looked for
in what it was given: an input that holds an earlier stage of what the reference feeds there (a step
the attempt skipped: the line that made the input stops short), or a plain number that differs
from the reference's (``scores * scale_factor`` with the wrong ``scale_factor``: the line where
that variable got its value, which the trail records). Inputs that are themselves one step short
are followed up the same way, so the line is where the attempt first departs, even inside one of
its own helper functions or in a number set in ``__init__``.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import hashlib
import itertools
import math
import re

import torch

from attnprep.grader import outputs as kept_outputs
from attnprep.grader.explain import Explainer
from attnprep.grader.found import (CASTS, COPIES, LAYOUTS, PICKS, Found, assigned, close, first_close_window, func_name,
                                   is_constant, name_shape, names_of, tensor_of, tolerance)
from attnprep.grader.parsing import defaults, last_name, parsed, walk
from attnprep.grader.tensors import ATOL, RTOL
from attnprep.grader.trace import OBJECT, Scalar, Step, line_end

# what applies a bias or a mask made without the inputs to the scores (or, too late, to the probabilities)
LATE = {"add", "sub", "add_", "sub_", "mul", "mul_", "where", "masked_fill", "masked_fill_"}
DATA = {"tensor", "as_tensor", "asarray", "from_numpy"}  # a tensor of numbers the file computed in Python
MAX_PERMUTED_DIMS = 5  # 5! = 120 permutations at most per candidate pair
MAX_DEPTH = 6  # how far up the inputs a difference is followed
LOG2E = 1 / math.log(2)  # exp(x) = exp2(x · log2(e))
GRIDS = {"meshgrid", "broadcast_tensors", "cartesian_prod"}  # building blocks laid out together
LOW_PRECISION_EPS = {"bfloat16": 2.0**-7, "float16": 2.0**-10}




def _rearranged_input(step: Step) -> bool:
    """Whether ``step`` only rearranges (or casts) an input of the call, or picks a part of its last
    axis as it is: ``v.reshape(B * H, T, D)``, ``x[..., ::2]``. Its result holds the input's own numbers, which
    the reference's trail (the steps it computes) never holds on their own, so "matches nothing"
    says nothing about such a step: what is computed from it tells whether that part was the one
    to take (GPT-J's ``rotate_every_two`` is wrong where it pairs the lanes, not where it slices)."""
    if step.parents or not step.inputs or step.free:
        return False
    f = func_name(step.func)
    return f in LAYOUTS | CASTS or (f in PICKS and _FEATURE_PICK.search(step.code) is not None)


def _log2e(ratio) -> bool:
    """Whether ``ratio`` (a number, or its text) is log2(e) or its inverse."""
    try:
        r = float(ratio)
    except (TypeError, ValueError):
        return False
    return any(math.isclose(r, x, rel_tol=5e-4) for x in (LOG2E, 1 / LOG2E))  # (said to 4 digits)


def _rearranged_chain(steps: list[Step], i: int, depth: int = 0) -> bool:
    """Whether step ``i`` only rearranges (or casts) what rearrangements of the call's inputs made:
    Megatron's ``q.permute(2, 0, 1, 3).reshape(sq, b * np, hn).transpose(0, 1)``, heads folded into
    the batch in two or three lines. Its numbers are still an input's own (see
    :func:`_rearranged_input`)."""
    step = steps[i]
    if step.free or func_name(step.func) not in LAYOUTS | CASTS or depth > 8:
        return False
    if not step.parents:
        return bool(step.inputs)
    return all(_rearranged_input(steps[p]) or _rearranged_chain(steps, p, depth + 1) for p in step.parents)


# a part of the last axis: ``x[..., ::2]``, ``x.chunk(2, dim=-1)`` (how a helper splits a head's
# features is told by how it pairs them later); rows or tokens picked (``cos[:T]``) are a choice
_FEATURE_PICK = re.compile(r"\[\s*\.\.\.\s*,|\b(?:chunk|split|tensor_split|unbind)\([^)]*dim\s*=\s*-1\b")






def _fill(step: Step) -> bool:
    """A tensor made only of the masking fill (``full_like(scores, -inf)``, ``tensor(-1e9)``) for a
    ``torch.where``: it holds no mask and cannot itself be wrong; the step that uses it may be."""
    t = tensor_of(step)
    return t is not None and t.numel() > 0 and bool(torch.isneginf(t).all())


def _broadcast(parent, shape) -> bool:
    """``shape`` differs from ``parent`` (aligned from the right) only where ``parent`` has 1 or
    no axis: copies along a broadcast axis, never a tile of several heads."""
    parent, shape = tuple(parent), tuple(shape)
    if len(parent) > len(shape) or parent == shape:
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(parent), reversed(shape)))


def _copies(t: torch.Tensor | None, source: torch.Tensor | None) -> bool:
    """Whether ``t`` is ``source`` repeated along one of ``t``'s axes (every slice of that axis the
    same ``source``): a single head copied over the heads."""
    if t is None or source is None or source.numel() == 0 or t.numel() % source.numel():
        return False
    for axis, n in enumerate(t.shape):
        if n > 1 and t.numel() // n == source.numel():
            one = list(t.shape)
            one[axis] = 1
            if torch.equal(t, source.reshape(one).expand(t.shape)):
                return True
    return False






def _scaling(step: Step) -> float | None:
    """The factor a step scales one tensor by (``x * s``, ``x / s``: ``1 / s``), or None."""
    f = func_name(step.func)
    if f not in ("mul", "div") or len(step.scalars) != 1 or step.scalars[0].key != "1":
        return None
    if len(step.parents) + len(step.inputs) != 1 or (f == "div" and step.scalars[0].value == 0):
        return None
    value = step.scalars[0].value
    return value if f == "mul" else 1.0 / value


def _kind(step: Step) -> str:
    """What a step does, for lining steps up: its function, and ``scale`` for any scaling of
    one tensor by a number (``scores * scale`` stands for ``scores / math.sqrt(D)``)."""
    return "scale" if _scaling(step) is not None else func_name(step.func)


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


def _close_to_a_run(t: torch.Tensor, r: torch.Tensor, eps: float = 0.0) -> bool:
    """Whether ``t`` is :func:`~attnprep.grader.found.close` to one of the aligned runs
    ``r[..., o:o + w]`` of ``r``'s last dim (``w`` = ``t``'s last size, ``o`` = 0, w, 2w …), all
    runs compared at once."""
    w = t.shape[-1]
    k = r.shape[-1] // w
    if k == 0:
        return False
    runs = r[..., : k * w].unflatten(-1, (k, w)).movedim(-2, 0).reshape(k, -1)  # (k, run's values)
    a = t.reshape(1, -1)
    finite = torch.isfinite(runs)
    largest = torch.where(finite, runs.abs(), torch.zeros((), dtype=runs.dtype)).amax(dim=1)
    scale = torch.where(finite.any(dim=1), largest.clamp(max=1.0), torch.ones((), dtype=runs.dtype))
    rtol = max(RTOL * 10, 4 * eps)
    atol = torch.maximum(ATOL * 10 * scale, 4 * eps * scale)[:, None]
    # torch.isclose(a, run, rtol, atol, equal_nan=True) for each run, with each run's own atol
    near = (a == runs) | (torch.isnan(a) & torch.isnan(runs)) | (
        torch.isfinite(a) & finite & ((a - runs).abs() <= atol + rtol * runs.abs()))
    return bool(near.all(dim=1).any())


def _sorted_values(t: torch.Tensor) -> torch.Tensor:
    """``t``'s values sorted, NaN and -inf as ±1e30 (numbers searchsorted can place)."""
    return t.flatten().nan_to_num(nan=1e30, neginf=-1e30).sort().values


def _probe_places(n: int) -> list[int]:
    """Where :func:`_probes` reads a list of ``n`` sorted values: both ends and the quartiles."""
    return [0, n // 4, n // 2, 3 * n // 4, n - 1]


def _probes(t: torch.Tensor) -> tuple[float, ...]:
    """Sorted values at five places (both ends, the quartiles), as numbers: two lists of sorted
    values :func:`close` to each other have their probes :func:`_near` each other."""
    n = t.numel()
    return tuple(t[_probe_places(n)].tolist()) if n else ()


def _near_all(a: tuple[float, ...], b: tuple[float, ...], eps: float = 0.0) -> bool:
    return len(a) == len(b) and all(_near(x, y, eps) for x, y in zip(a, b))


def _near(a: float, b: float, eps: float = 0.0) -> bool:
    """Two numbers equal loosely (more loosely than :func:`close`, whose rtol is at most
    ``4 * eps``): a cheap necessary test before whole tensors are compared."""
    if math.isinf(a) or math.isinf(b):
        return a == b
    tol = max(1e-2, 8 * eps)
    return abs(a - b) <= tol * abs(b) + tol


def _near_rows(probes: tuple[float, ...], table: torch.Tensor, eps: float = 0.0) -> list[int]:
    """The rows of ``table`` (one row of probes each) that ``probes`` is :func:`_near_all` to, all
    rows compared at once (an attempt that loops over rows asks this of thousands of slices)."""
    if table.shape[0] == 0 or table.shape[1] != len(probes):
        return []
    a = torch.tensor(probes, dtype=torch.float64)
    tol = max(1e-2, 8 * eps)
    infinite = torch.isinf(a) | torch.isinf(table)
    near = torch.where(infinite, a == table, (a - table).abs() <= tol * table.abs() + tol)
    return near.all(dim=1).nonzero().flatten().tolist()


def _row_shifted(t: torch.Tensor, r: torch.Tensor, eps: float = 0.0) -> bool:
    """``t`` is ``r`` plus one number per row (along the last axis), not ``r`` itself: infinite
    where ``r`` is (the same sign), and the differences of each row's finite places within the
    tolerance of :func:`close` of each other."""
    a, b = t.double(), r.double()
    finite = torch.isfinite(b)
    if not torch.equal(torch.isfinite(a), finite) or not bool((a[~finite] == b[~finite]).all()):
        return False
    d = torch.where(finite, a - b, 0.0)
    if not bool(finite.any()) or bool((d == 0).all()):
        return False
    rtol, atol = tolerance(b, eps)
    scale = torch.where(finite, b.abs(), 0.0).amax(-1)
    top = torch.where(finite, d, -math.inf).amax(-1)
    bottom = torch.where(finite, d, math.inf).amin(-1)
    spread = torch.where(finite.any(-1), top - bottom, 0.0)
    return bool((spread <= 2 * (atol + rtol * scale)).all())


def _identical(a: Step, b: Step) -> bool:
    """The same shape and values (a step too big to keep its values: the same shape)."""
    ta, tb = tensor_of(a), tensor_of(b)
    if ta is None or tb is None:
        return a.shape == b.shape
    return ta.shape == tb.shape and close(ta, tb)


def _outside(ends: tuple[float, float], lowest: float, highest: float, tol: tuple[float, float]) -> bool:
    """Whether a finite value of a step, ``ends`` its smallest and largest, is surely not close
    (``isclose`` with ``tol``, (rtol, atol) of the step's values) to any finite value of a tensor from
    ``lowest`` to ``highest`` (twice the tolerance apart: rounding never decides). A window of that
    tensor, which would hold each of the step's values close to one of its own, cannot match: an
    infinite or NaN value is close to no finite one."""
    rtol, atol = tol
    small, large = ends
    return large - highest > 2 * (atol + rtol * abs(large)) or lowest - small > 2 * (atol + rtol * abs(small))


# what a Matcher works out of its reference trail alone (its values, dtypes, functions, lines)
_MATCHER_STATE = ("sorted", "probes", "_finite", "_finite_list", "by_numel", "sorted_twin", "twin", "_slices",
                  "_answers", "_bounds", "_sliced", "_windowed", "_wider", "_eps_of")


def _trail_key(reference: list[Step]) -> tuple:
    """A reference trail's content, everything of it but its scalars: what a Matcher reads of it."""
    return tuple((s.line, s.code, s.func, tuple(s.shape), s.dtype, tuple(s.parents), s.free, tuple(s.stack),
                  tuple(s.inputs), None if s.values is None else
                  (str(s.values.dtype), tuple(s.values.shape), hashlib.blake2b(s.values.numpy().tobytes()).digest()))
                 for s in reference)


class Matcher:
    """The reference's steps, indexed for the questions asked of each attempt step: which steps
    hold the same values, in which layout, or a part or a slice of them. Steps with the same values
    are compared once (a reference trail repeats values: a cache read back, a cast that changes
    nothing), and what a slice test cuts out of a step is cut and sorted once for every attempt step."""

    def __init__(self, reference: list[Step]):
        self.steps = reference
        self.ref = [(s, tensor_of(s)) for s in reference]
        # the same reference trail again (the same case of the same exercise, another failing
        # attempt, in a process that keeps outputs): what was worked out of it, answers included
        state = kept_outputs.matcher_state(_trail_key(reference)) if reference and kept_outputs.keeping() else None
        if state:
            self.__dict__.update(state)
            return
        self._index()
        if state is not None:
            state.update((name, getattr(self, name)) for name in _MATCHER_STATE)

    def _index(self) -> None:
        self.sorted = {}
        for i, (s, t) in enumerate(self.ref):
            if t is not None:
                self.sorted[i] = t.flatten().nan_to_num(nan=1e30).sort().values
        self.probes = {i: _probes(v) for i, v in self.sorted.items()}
        self._finite: dict[int, torch.Tensor] = {}  # self.sorted with -inf as a number, for searchsorted
        self._finite_list: dict[int, list[float]] = {}  # … and as numbers, for bisect
        self.by_numel: dict[int, list[int]] = {}
        for i, v in self.sorted.items():
            self.by_numel.setdefault(v.numel(), []).append(i)
        # the first step with the same sorted values (and dtype), and with the same tensor: a
        # question answered for it is answered for the others
        first_sorted: dict[tuple, int] = {}
        first_same: dict[tuple, int] = {}
        self.sorted_twin: dict[int, int] = {}
        self.twin: dict[int, int] = {}
        for i, v in self.sorted.items():
            dtype, r = self.steps[i].dtype, self.ref[i][1]
            self.sorted_twin[i] = first_sorted.setdefault((dtype, v.numel(), v.numpy().tobytes()), i)
            self.twin[i] = first_same.setdefault((dtype, tuple(r.shape), r.numpy().tobytes()), i)
        self._slices: dict[tuple[int, int], list] = {}  # (step, numel) -> the parts a slice test compares
        self._answers: dict[tuple, list] = {}  # (question, dtype, an attempt's tensor) -> its answer
        self._bounds: dict[tuple[int, float], tuple[float, float]] = {}  # (step, eps) -> the range _contains allows
        self._sliced: dict[int, list[int]] = {}  # numel -> the steps a slice of that many values may come from
        self._windowed: dict[tuple[int, float], tuple | None] = {}  # (step, eps) -> what _covers compares it with
        self._wider: dict[tuple[int, ...], list[int]] = {}  # a shape -> the steps part_of looks for a run of it in
        self._eps_of: dict[tuple[int, str], float] = {}  # (step, an attempt's dtype) -> _eps

    def _asked(self, question: str, t: torch.Tensor, dtype: str, answer) -> list:
        """``answer()``, worked out once per tensor: an attempt's trail repeats values too (a
        weight's view in every call of a script, the same row in every pass of a loop)."""
        key = (question, dtype, tuple(t.shape), t.numpy().tobytes())
        if key not in self._answers:
            self._answers[key] = answer()
        return list(self._answers[key])

    def _eps(self, i: int, dtype: str) -> float:
        eps = self._eps_of.get((i, dtype))
        if eps is None:
            eps = self._eps_of[(i, dtype)] = max(LOW_PRECISION_EPS.get(dtype, 0.0), LOW_PRECISION_EPS.get(self.steps[i].dtype, 0.0))
        return eps

    def same_values(self, t: torch.Tensor, dtype: str = "") -> list[int]:
        """Reference steps holding the same multiset of values (any layout)."""
        key = t.flatten().nan_to_num(nan=1e30).sort().values
        probes = _probes(key)
        answers: dict[int, bool] = {}

        def same(i: int) -> bool:
            eps = self._eps(i, dtype)
            return _near_all(probes, self.probes[i], eps) and close(key, self.sorted[i], eps)

        found = []
        for i in self.by_numel.get(key.numel(), []):
            twin = self.sorted_twin[i]
            if twin not in answers:
                answers[twin] = same(twin)
            if answers[twin]:
                found.append(i)
        return found

    def matches(self, t: torch.Tensor, dtype: str = "") -> list[tuple[int, bool]]:
        """Every (reference step, whether in the reference's own layout) that ``t`` matches: the
        ones in the same layout first, then permuted, merged or split ones."""
        return self._asked("matches", t, dtype, lambda: self._matches(t, dtype))

    def _matches(self, t: torch.Tensor, dtype: str) -> list[tuple[int, bool]]:
        same = self.same_values(t, dtype)
        layouts: dict[int, str | None] = {}  # twin -> "own" shape, "order" (merged or split), "permuted", None

        def layout(i: int) -> str | None:
            twin = self.twin[i]
            if twin not in layouts:
                r, eps = self.ref[twin][1], self._eps(twin, dtype)
                if tuple(r.shape) == tuple(t.shape) and close(t, r, eps):
                    layouts[twin] = "own"
                else:
                    in_order = self._in_layout(t, r, eps)
                    layouts[twin] = None if in_order is None else "order" if in_order else "permuted"
            return layouts[twin]

        own = [(i, True) for i in same if layout(i) == "own"]
        other = [(i, layout(i) == "order") for i in same if layout(i) in ("order", "permuted")]
        if not own and not other:
            own = self.part_of(t, dtype)
        if not own and not other:
            own = self.shifted(t, dtype)
        return own + sorted(other, key=lambda m: not m[1])

    def shifted(self, t: torch.Tensor, dtype: str = "") -> list[tuple[int, bool]]:
        """The reference's scores a softmax reads (directly, or through a mask laid on them) that
        ``t`` holds up to one number per row (added along the last axis): the same probabilities,
        softmax(x + c) = softmax(x). BLOOM's ALiBi bias slope·j for the reference's -slope·(i - j),
        MPT's slope·(j - (T - 1)), scores less their row's maximum: right scores, in the form the
        file chose."""
        if t.dim() < 2 or t.shape[-1] < 2 or not t.is_floating_point():
            return []
        found = []
        for i in self._softmax_inputs():
            r = self.ref[i][1]
            if r is not None and tuple(r.shape) == tuple(t.shape) and r.is_floating_point() and _row_shifted(t, r, self._eps(i, dtype)):
                found.append((i, True))
        return found

    def _softmax_inputs(self) -> list[int]:
        """The reference steps a softmax reads, and the scores a mask laid on them was laid on."""
        got = self.__dict__.get("_pre_softmax")
        if got is None:
            seen: set[int] = set()
            for s in self.steps:
                if func_name(s.func) in ("softmax", "log_softmax", "_softmax"):
                    for q in s.parents:
                        seen.add(q)
                        if func_name(self.steps[q].func) in LATE:
                            seen.update(self.steps[q].parents)
            got = self._pre_softmax = sorted(seen)
        return got

    def part_of(self, t: torch.Tensor, dtype: str = "") -> list[tuple[int, bool]]:
        """Reference steps of which ``t`` is a run of the last dim (``cos[..., :D // 2]`` of the
        reference's table, the first half of its ``x * cos``), as in the reference's own layout: a
        slice the reference never takes on its own is still its values."""
        found = []
        if t.dim() == 0 or t.numel() == 0 or is_constant(t):  # zeros are part of anything that starts at zero
            return found
        shape = tuple(t.shape)
        if shape not in self._wider:  # the steps of t's shape but for a longer last dim, in order
            self._wider[shape] = [i for i, (_, r) in enumerate(self.ref) if r is not None and r.dim() == t.dim()
                                  and tuple(r.shape[:-1]) == shape[:-1] and r.shape[-1] > shape[-1]]
        key = None
        for i in self._wider[shape]:
            r = self.ref[i][1]
            eps = self._eps(i, dtype)
            if key is None:
                key = _sorted_values(t)
                probes = _probes(key)
            if not self._contains(i, key, eps, probes):  # some value of t is nowhere in r: no run of it holds t
                continue
            if _close_to_a_run(t, r, eps):
                found.append((i, True))
        return found

    def _in_layout(self, t: torch.Tensor, r: torch.Tensor, eps: float) -> bool | None:
        """Whether ``t`` holds ``r``'s values in a layout a correct attempt may use: None when it
        does not, else whether in ``r``'s own axis order (axes permuted, merged or split)."""
        if r.dim() > MAX_PERMUTED_DIMS:
            return None
        compared: dict[tuple[int, ...], bool] = {}  # axes of more than one index, in order -> same values
        for perm in itertools.permutations(range(r.dim())):
            p = r.permute(perm)
            shape = tuple(p.shape)
            if _refines(shape, tuple(t.shape)):
                flat = lambda: close(t, p.reshape(t.shape), eps)  # noqa: E731
            elif _refines(tuple(t.shape), shape):
                flat = lambda: close(t.reshape(shape), p, eps)  # noqa: E731
            else:
                continue
            # where only axes of one index move, the values come in the same order: compared once
            order = tuple(a for a in perm if r.shape[a] != 1)
            if order not in compared:
                compared[order] = flat()
            if compared[order]:
                return perm == tuple(range(r.dim()))
        return None

    def _contains(self, i: int, key: torch.Tensor, eps: float, probes: tuple[float, ...]) -> bool:
        """Whether every value of ``key`` (sorted, with ``_probes(key)``) is close to some value of
        reference step ``i`` (loosely: a cheap test before the slices are compared one by one):
        first its range, then its probes one by one, then every value."""
        bounds = self._bounds.get((i, eps))
        if bounds is None:
            ends = self.probes.get(i) or (math.inf, -math.inf)  # its smallest and largest value
            lo, hi = ends[0], ends[-1]
            lo, hi = max(lo, -1e30), min(hi, 1e30)  # as in the list compared below: -inf and nan as ±1e30
            tol = max(RTOL * 100, 40 * eps)
            bounds = self._bounds[(i, eps)] = (lo - tol * abs(lo) - tol, hi + tol * abs(hi) + tol)
        if probes[0] < bounds[0] or probes[-1] > bounds[1]:
            return False  # a value of key lies outside r's range
        values = self._finite.get(i)
        if values is None:
            values = self._finite[i] = self.sorted[i].nan_to_num(nan=1e30, neginf=-1e30, posinf=1e30)
            self._finite_list[i] = values.tolist()
        rtol, atol = max(RTOL * 100, 40 * eps), max(ATOL * 100, 40 * eps)
        listed = self._finite_list[i]
        for x in probes:
            at = bisect.bisect_left(listed, x)
            near = min(abs(listed[min(at, len(listed) - 1)] - x), abs(listed[max(at - 1, 0)] - x))
            if not near <= rtol * abs(x) + atol:
                return False
        at = torch.searchsorted(values, key).clamp(max=values.numel() - 1)
        near = torch.minimum((values[at] - key).abs(), (values[(at - 1).clamp(min=0)] - key).abs())
        return bool((near <= rtol * key.abs() + atol).all())

    def slice_of(self, t: torch.Tensor, dtype: str = "", keep=None) -> list[tuple[int, bool]]:
        """Reference steps of which ``t`` is one index, or an aligned run of indices, along one
        axis (two adjacent axes taken as one: a ``(b, h)`` pair), in a layout a correct attempt may
        use: one head of ``(B, H, T, D)``, one row block of ``(B, H, L, S)``, as an attempt that
        loops over heads or rows computes them. Constant tensors match no slice (a zero row is in
        anything that has one). ``keep``: a test of each step a slice is found in (a costly one is
        asked of few steps)."""
        found = self._asked("slice_of", t, dtype, lambda: self._slice_of(t, dtype))
        return [m for m in found if keep is None or keep(m[0])]

    def _slice_of(self, t: torch.Tensor, dtype: str) -> list[tuple[int, bool]]:
        found = []
        if t.numel() == 0 or (t.numel() > 1 and is_constant(t)):
            return found
        if t.numel() == 1 and not (bool(torch.isfinite(t).all()) and float(t.flatten()[0]) not in (0.0, 1.0)):
            return found  # one row's running max is a value of its own; a lone 0, 1 or -inf is in anything
        n = t.numel()
        key = _sorted_values(t)
        probes = _probes(key)
        if n not in self._sliced:
            # a concatenation's parts are steps of their own: a slice of it that is none of them is no match
            self._sliced[n] = [i for i, (step, r) in enumerate(self.ref)
                               if r is not None and r.numel() > n and not r.numel() % n and r.dim() <= MAX_PERMUTED_DIMS
                               and func_name(step.func) not in ("cat", "stack", "concat", "concatenate")]
        for i in self._sliced[n]:
            eps = self._eps(i, dtype)
            if not self._contains(i, key, eps, probes):  # some value of t is nowhere in r: no slice of it holds t
                continue
            parts, table = self._slices_of(i, n)
            for j in _near_rows(probes, table, eps):
                part, values = parts[j]
                if close(key, values, eps):
                    hit = self._in_layout(t, part, eps)
                    if hit is not None:
                        found.append((i, hit))
                        break
        # a head of the reference's q after its line's transpose, rather than of the view before it
        return sorted(found, key=lambda m: (not m[1], _intermediate(self.steps, m[0])))

    def _slices_of(self, i: int, n: int) -> tuple[list[tuple[torch.Tensor, torch.Tensor]], torch.Tensor]:
        """The slices of ``n`` values of reference step ``i`` that :meth:`slice_of` tries, in order:
        (the slice, its values sorted), and their probes as one (slices, probes) table, cut once per
        step and size."""
        if (i, n) not in self._slices:
            r = self.ref[i][1]
            parts, tables = [], []
            at = _probe_places(n)
            views = [r] + [r.flatten(a, a + 1) for a in range(r.dim() - 1)]  # (b, h) pairs as one index
            if n == 1 and r.dim() > 2:
                views.append(r.flatten())  # one number: one entry, whatever its axes (a row's max, a row at a time)
            for v in views:
                for axis, size in enumerate(v.shape):
                    rest = v.numel() // size
                    if n % rest or not 0 < n // rest < size or size % (n // rest):
                        continue
                    run = n // rest
                    # every run of this axis at once: (runs, its n values), each row sorted as _sorted_values sorts
                    blocks = v.unflatten(axis, (size // run, run)).movedim(axis, 0).reshape(size // run, -1)
                    values = blocks.nan_to_num(nan=1e30, neginf=-1e30).sort(dim=1).values
                    tables.append(values[:, at].to(torch.float64))
                    for j, start in enumerate(range(0, size, run)):
                        part = v.narrow(axis, start, run)
                        parts.append((part.squeeze(axis) if run == 1 else part, values[j]))
            table = torch.cat(tables) if tables else torch.zeros((0, 5), dtype=torch.float64)
            self._slices[(i, n)] = parts, table
        return self._slices[(i, n)]

    def covers(self, t: torch.Tensor, dtype: str = "") -> list[tuple[int, bool]]:
        """Reference steps that ``t`` holds as a run of one axis, in the reference's layout (axes of
        size 1 aside): an attempt that takes more rows at once than the reference (FlashAttention
        with the whole query length as one tile, the reference a block of queries at a time) holds
        several of its blocks in one tensor. Constant tensors hold nothing."""
        return self._asked("covers", t, dtype, lambda: self._covers(t, dtype))

    def _covers(self, t: torch.Tensor, dtype: str) -> list[tuple[int, bool]]:
        if t.dim() == 0 or t.numel() < 2 or t.flatten().unique().numel() < 3:  # (0 / 1 flags are in anything)
            return []
        mine = t.squeeze() if t.dim() > 1 else t
        finite = mine[torch.isfinite(mine)]
        lowest, highest = (float(finite.min()), float(finite.max())) if finite.numel() else (None, None)
        # per (axis, reference line and operation): the steps whose values a run of that axis holds, and which
        # positions of the axis those runs cover
        runs: dict[tuple[int, int], tuple[list[int], set[int]]] = {}
        for i, (step, r) in enumerate(self.ref):
            if r is None or r.numel() < 2 or r.numel() >= t.numel():
                continue
            windowed = self._window_test(i, dtype)
            if windowed is None:  # a constant step: held by anything
                continue
            found = None  # (axis, its run): r is t's shape with one axis shorter, axes of size 1 aside
            for a in range(mine.dim()):
                rest = mine.numel() // mine.shape[a]
                if r.numel() % rest or not 0 < r.numel() // rest < mine.shape[a]:
                    continue
                shape = list(mine.shape)
                shape[a] = r.numel() // rest
                if [d for d in r.shape if d != 1] == [d for d in shape if d != 1]:
                    found = a, r.reshape(shape)
                    break
            if found is None:
                continue
            (a, theirs), eps = found, self._eps(i, dtype)
            n = theirs.shape[a]
            tol, ends = windowed
            if lowest is not None and ends is not None and _outside(ends, lowest, highest, tol):
                continue  # a value of the step is far from every value of t: no window of t holds it
            start = first_close_window(mine, a, theirs, eps, tol)
            if start is not None:  # one block per step: a copy of one block along an axis computes nothing more
                steps, covered = runs.setdefault((a, step.line, func_name(step.func)), ([], set()))
                steps.append((i, start))
                covered.update(range(start, start + n))
        # the whole of t, block by block, from one operation of one line of the reference (its loop
        # over query blocks): a tensor holding one block right and the rest otherwise (a cache
        # joined to a new key not yet rotated) covers nothing
        # ... in the reference's order (a cache joined after the new keys holds both, out of order)
        return [(i, True) for (a, _, _), (steps, covered) in runs.items()
                if len(covered) == mine.shape[a] and len(steps) > 1
                and [s for _, s in steps] == sorted(s for _, s in steps) for i, _ in steps]

    def _window_test(self, i: int, dtype: str) -> tuple | None:
        """What :meth:`_covers` compares reference step ``i`` with, worked out once per step and
        eps: None for a constant step, else (the tolerance :func:`first_close_window` compares it
        with, (its smallest, its largest finite value) or None when it has none)."""
        eps = self._eps(i, dtype)
        key = (i, eps)
        if key not in self._windowed:
            r = self.ref[i][1]
            if is_constant(r):
                self._windowed[key] = None
            else:
                finite = r[torch.isfinite(r)]
                ends = (float(finite.min()), float(finite.max())) if finite.numel() else None
                self._windowed[key] = tolerance(r, eps), ends
        return self._windowed[key]

    def match(self, t: torch.Tensor, dtype: str = "", func: str = "") -> tuple[int, bool] | None:
        """(reference step, whether in the reference's own layout) that ``t`` matches, or None.
        A step the reference makes in the same layout wins over a permuted one; among those, one
        made by the same function (a cast that changes nothing holds its input's values too)."""
        found = self.matches(t, dtype)
        if not found:
            return None
        best = [m for m in found if m[1]] or found
        same_func = [m for m in best if func and func_name(self.steps[m[0]].func) == func_name(func)]
        return (same_func or best)[0]


def _intermediate(reference: list[Step], i: int) -> bool:
    """Whether reference step ``i`` is consumed by a later step of the same run of its line (not
    by the same line on a loop's next pass) that computes something: a transpose or view that
    ends the line (``torch.cat([q_nope, q_pe], -1).transpose(1, 2)``) only lays out what ``i``
    holds, and an attempt holding ``i`` in its own layout has taken no step less."""
    line = reference[i].line
    feeding = {i}
    for j in range(i + 1, len(reference)):
        s = reference[j]
        if s.line != line:
            return False
        if feeding & set(s.parents):
            if func_name(s.func) not in LAYOUTS:
                return True
            feeding.add(j)
    return False


def _blame(i: int, attempt: list[Step], matched, reference: list[Step]) -> tuple[int, str] | None:
    """The input of step ``i`` that holds reference values in a layout of its own ("layout") or a
    value the reference only has half-way through one of its lines ("incomplete"): the earliest
    such input made on another line than step ``i``; when those are all on step ``i``'s own line
    (``k.transpose(-2, -1)`` inside ``q @ k.transpose(-2, -1)``), the same one level up, where a
    layout carried through the reference's own next step is followed up to where it was taken."""

    def suspect(p: int) -> str | None:
        m = matched[p]
        if m is None or attempt[p].free:  # a mask made apart from the inputs is no half-done computation
            return None
        if not m[1]:
            return "layout"
        return "incomplete" if _intermediate(reference, m[0]) else None

    def carried(q: int, p: int) -> bool:
        """Step ``p`` feeds ``q`` as the reference's counterpart of ``p`` feeds that of ``q``: the
        attempt takes the reference's next step on it (on another line), nothing stops short."""
        return matched[q] is not None and matched[p] is not None and \
            matched[p][0] in reference[matched[q][0]].parents

    level = list(attempt[i].parents)
    for _ in range(3):
        found = [(p, r) for p in level if (r := suspect(p)) is not None]
        elsewhere = [f for f in found if attempt[f[0]].line != attempt[i].line]
        if elsewhere:
            return min(elsewhere)
        if not found:
            return None
        # (a layout carried from an input in that layout, B.T A.T for A B: where it was first taken)
        level = [q for p, reason in found for q in attempt[p].parents
                 if not carried(p, q) or reason == suspect(q) == "layout"]
    return None


def _wrong_outputs(attempt: list[Step], reference: list[Step], matched, outputs,
                   near: frozenset = frozenset()) -> dict[int, tuple[str, int]]:
    """Attempt step -> (output name, the reference's step for it), for each named output whose
    values differ from the reference's in every layout a correct attempt may use and that no
    wrong tensor made apart from the inputs led to (a rotation by the wrong angles is the angles'
    mistake, not the output's); ``near``: outputs close to the reference's only within the trail's
    wider tolerance (see :func:`_near_misses`), wrong too."""
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
            if attempt[q].free and matched[q] is None and tensor_of(attempt[q]) is not None:
                return True
            todo.extend(attempt[q].parents)
        return False

    wrong = {}
    for name, a in mine.items():
        r = theirs.get(name)
        if (r is not None and 0 <= a < len(attempt) and 0 <= r < len(reference)
                and (a in near or not _identical(attempt[a], reference[r]))
                and (matched[a] is None or matched[a][0] != r) and not wrong_free_above(a)):
            wrong[a] = (name, r)
    return wrong


FLOATS = frozenset({"float32", "float64"})  # dtypes whose rounding is far below the grader's tolerance
SUMS = frozenset({"sum", "nansum"})  # a sum the reference may take as a mean: the number that scales it later tells


def _strictly_close(a: Step, b: Step, tol: tuple[float, float]) -> bool:
    """Whether ``a``'s values are within the grader's own tolerance ``tol`` of ``b``'s in some order:
    compared sorted, the closest any arrangement can be (a layout the trail already lined up)."""
    ta, tb = tensor_of(a), tensor_of(b)
    if ta is None or tb is None or ta.numel() != tb.numel():
        return True
    ta, tb = ta.flatten().sort().values, tb.flatten().sort().values
    return bool(torch.isclose(ta, tb, rtol=tol[0], atol=tol[1], equal_nan=True).all())


def _near_misses(trails: "_Trails", outputs, tolerance) -> frozenset:
    """The named outputs of the attempt that the trail lines up with the reference's (its
    tolerance is ten times the grader's) but that differ from it at the grader's own tolerance
    (``tolerance``: the case's, never below the float32 one): a small difference the grade fails
    (label smoothing spread over V - 1 classes, another eps) would otherwise read as getting back on
    track at the output, and the run would have no line. Each such output, and each step that an
    output wrong at the grader's tolerance is computed from whose values are only near its match,
    stops matching (``trails.matched``), so the first of them is where the attempt goes wrong
    (``var + 1e-3`` where the reference adds 1e-5 is not right because it is near). Float32 / float64 steps only: a low
    precision's rounding is of that size."""
    if not outputs:
        return frozenset()
    rtol, atol = tolerance or (RTOL, ATOL)
    tol = (max(rtol, RTOL), max(atol, ATOL))
    att, ref, matched = trails.att, trails.ref, trails.matched
    near, wrong = set(), set()
    for name, a in outputs[0].items():
        r = outputs[1].get(name)
        if r is None or not (0 <= a < len(att) and 0 <= r < len(ref)) or att[a].dtype not in FLOATS \
                or ref[r].dtype not in FLOATS or _strictly_close(att[a], ref[r], tol):
            continue
        wrong.add(a)
        if matched[a] is not None and _identical(att[a], ref[r]):
            near.add(a)
    for a in wrong:
        for j in _ancestors(a, att) | {a}:
            m = matched[j]
            if m is not None and att[j].dtype in FLOATS and not _strictly_close(att[j], ref[m[0]], tol):
                matched[j] = None
    return frozenset(near)


def _ancestors(r: int, steps: list[Step]) -> set[int]:
    """The steps of ``steps`` (a trail, the reference's or the attempt's) that step ``r`` is
    computed from, however far back (a parent outside the trail, which a cut trail may name, is
    not followed)."""
    seen, todo = set(), list(steps[r].parents)
    while todo:
        q = todo.pop()
        if q not in seen and 0 <= q < len(steps):
            seen.add(q)
            todo.extend(steps[q].parents)
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






def _code(text: str) -> str:
    """A line of code without its comment (the reference's shape comments are not what to type)."""
    import io
    import tokenize

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text.strip()
    comment = next((t for t in tokens if t.type == tokenize.COMMENT), None)
    return text[: comment.start[1]].rstrip() if comment is not None else text.strip()


def _number(value: float) -> str:
    return f"{value:.4g}"




# the words attention code spells its three roles with (HF's key_states, Meta's xk, "queries")
_ROLE_WORDS = {"query": "q", "queries": "q", "key": "k", "keys": "k", "value": "v", "values": "v"}


def _role(name: str) -> str:
    """The role a variable's name says, spelt as a short name: ``key_states``, ``keys``, ``xk``
    and ``k_h`` are ``k``; a name that says no role is itself."""
    n = name.lower().removeprefix("self.")
    n = re.sub(r"_(states|proj|heads|layer|t|h|bhtd|bthd)$", "", n)
    if re.fullmatch(r"x[qkv]", n):
        n = n[1]
    return _ROLE_WORDS.get(n, n)


def _final(steps: list[Step], k: int) -> bool:
    """Whether step ``k`` is a value its statement ends with (see :meth:`_Trails.final`)."""
    run = _Trails.statement_run(steps, k)
    return not any(k in steps[q].parents for q in run if q > k)


def _parts(n: int, marks) -> list[str]:
    """The label of the part each of ``n`` steps is in, from ``marks`` ((first step, label), in
    order); "" for every step of a single call."""
    labels = [""] * n
    for first, label in sorted(marks or []):
        for k in range(max(first, 0), n):
            labels[k] = label
    return labels


RELAID_SHARE = 4  # a relaid table holds at least a quarter of the distinct numbers of the reference's table


class _Trails:
    """The two trails side by side: what each attempt step matches, the reference's ancestry."""

    def __init__(self, attempt: list[Step], reference: list[Step], axes: dict[str, int],
                 marks: tuple[list, list] | None = None, source: str = "", ref_source: str = ""):
        self.att, self.ref, self.axes = attempt, reference, axes
        self.argument_copies = _argument_copies(source)
        self.argument_defaults = _argument_defaults(source)
        self.source_lines = source.splitlines()
        self.source, self.ref_source = source, ref_source
        # the object (top-level class or function) each step runs in, when both files define it
        att_objects, ref_objects = _objects(source), _objects(ref_source)
        shared = set(att_objects) & set(ref_objects)
        self.att_in = [_object_at(att_objects, (s.stack or [s.line])[0], shared) for s in attempt]
        self.ref_in = [_object_at(ref_objects, (s.stack or [s.line])[0], shared) for s in reference]
        self.matcher = Matcher(reference)
        self.near: frozenset = frozenset()  # outputs only near the reference's (see _near_misses)
        # in a script of calls, the call each step is in (the label of its part): a slice lines up
        # only within one call, and a line run again by the next call is no loop
        att_marks, ref_marks = marks or ([], [])
        self.att_part = _parts(len(attempt), att_marks)
        self.ref_part = _parts(len(reference), ref_marks)
        # the lines the attempt runs more than once in one call (a loop's body, a helper called per head)
        seen_lines: set = set()
        repeated: set = set()
        last = None
        for k, step in enumerate(attempt):
            where = (step.line, tuple(step.stack or ()), self.att_part[k])
            if where != last:  # a new run of the line, not the next step of the same statement
                (repeated if where in seen_lines else seen_lines).add(where)
            last = where
        self.up: list[set[int]] = []  # every earlier reference step each one is computed from
        for s in reference:
            ups = set()
            for p in s.parents:
                if 0 <= p < len(self.up):
                    ups |= {p} | self.up[p]
            self.up.append(ups)
        self.ref_used = {p for s in reference for p in s.parents}  # the reference steps it goes on from
        self.src_up: list[set[int]] = []  # the traced inputs each reference step is computed from
        for s in reference:
            srcs = set(s.inputs)
            for p in s.parents:
                if 0 <= p < len(self.src_up):
                    srcs |= self.src_up[p]
            self.src_up.append(srcs)
        self.cands: list[list[tuple[int, bool]]] = []
        self.matched: list[tuple[int, bool] | None] = []
        for k, step in enumerate(attempt):
            t = tensor_of(step)
            found = [] if t is None else self.matcher.matches(t, step.dtype)
            if t is not None and (step.line, tuple(step.stack or ()), self.att_part[k]) in repeated and \
                    all(_intermediate(reference, m) for m, _ in found):
                # one head (or row block) of a loop over them: of what the reference's line ends
                # with, not only of a value half-way through it (a run of q_proj's output)
                more = [m for m in self.matcher.slice_of(
                    t, step.dtype, keep=lambda r: self.ref_part[r] == self.att_part[k] and self.lined_up(step, r))
                    if m not in found]
                found = sorted(found + more, key=lambda m: (not m[1], _intermediate(reference, m[0])))
            if not found and t is not None and func_name(step.func) not in PICKS | COPIES:
                # several of the reference's blocks computed at once (not a copy: k.repeat holds k)
                found = self.matcher.covers(t, step.dtype)
            if self.att_part[k].startswith(OBJECT):  # one object's steps stand for that object's only
                found = [m for m in found if self.ref_part[m[0]] == self.att_part[k]]
            found = [m for m in found if self.same_object(k, m[0])]
            self.cands.append(found)
            best = [m for m in found if m[1]] or found
            same = [m for m in best if func_name(reference[m[0]].func) == func_name(step.func)]
            self.matched.append((same or best)[0] if best else None)
        self.scalar_names = set().union(*(names_of(x.name) for s in reference for x in s.scalars))
        self.scalar_values = {x.value for s in reference for x in s.scalars if x.name}  # numbers it keeps in variables
        self.ref_names = set().union(*(names_of(self.name_of(reference, j)) for j in range(len(reference))))
        # (name, function) of the reference's steps: how it makes each of its values
        self.ref_made_as = {(self.name_of(reference, j), func_name(r.func)) for j, r in enumerate(reference)}
        self.ref_roles = {_role(n) for n in self.ref_names} & set(_ROLE_WORDS.values())
        self.ref_aliases = _aliases(ref_source)

    def same_object(self, k: int, r: int) -> bool:
        """Whether attempt step ``k`` may hold reference step ``r``: not when they run in two
        different objects of the exercise (RMSNorm that subtracts the mean computes LayerNorm's
        values: it is wrong, not back on track)."""
        return not self.att_in[k] or self.ref_in[r] in ("", self.att_in[k])

    def lined_up(self, step: Step, r: int) -> bool:
        """Whether ``step`` may hold a slice of reference step ``r``: what it is computed from is
        ``r`` or the stages ``r`` is computed from (a per-head slice of q, scores from per-head q
        and k), not a slice another stage happens to hold (a decode step's output that equals the
        prefill's first row because its mask lets it see only key 0)."""
        sources = self.src_up[r] | set(self.ref[r].inputs)
        stages = self.up[r] | {r}

        def grounded(s: Step, depth: int) -> bool:
            if not set(s.inputs) <= sources:
                return False
            for p in s.parents:
                parent = self.att[p]
                if parent.free or is_constant(tensor_of(parent)):  # a start value (zeros, -inf) says nothing
                    continue
                if not parent.parents and parent.inputs and func_name(parent.func) in PICKS and set(parent.inputs) <= sources:
                    continue  # one head of an input as it is given (q[b, h] of a (B, H, L, D) input)
                if self.cands[p]:
                    if not any(m in stages for m, _ in self.cands[p]):
                        return False
                elif depth >= MAX_DEPTH or not grounded(parent, depth + 1):
                    return False  # a step the reference has no value for (x1 * cos - x2 * sin): what it is made from
            return True

        return grounded(step, 0)

    def wrong_free(self, p: int) -> bool:
        """Attempt step ``p`` is made without the inputs and holds nothing the reference makes, in
        the reference's layout: a mask transposed (``triu`` for ``tril``) is another mask."""
        return (self.att[p].free and not self.own(p) and not _fill(self.att[p]) and not self.same_mask(p)
                and not self.relaid(p) and not self.spread_number(p) and not self.right_where_kept(p))

    def right_where_kept(self, p: int) -> bool:
        """Attempt step ``p``, a table of finite numbers made without the inputs, holds a value of the
        reference (in its shape) at every position that a mask the attempt applies later to what is
        made from it keeps, and differs only where that mask blocks: ``|i - j|`` by ``cdist`` for the
        reference's ``i - j``, under the file's causal mask. What the mask throws away cannot be wrong;
        what the file does with the table further on, or the mask itself, may be."""
        t = tensor_of(self.att[p])
        shape = tuple(self.att[p].shape)
        if t is None or not t.numel() or t.numel() != math.prod(shape) or self.att[p].dtype not in FLOATS | set(LOW_PRECISION_EPS):
            return False  # (a complex table's values are its real view: twice its size)
        t = t.reshape(shape).double()
        if not bool(torch.isfinite(t).all()) or float(t.min()) <= ADDITIVE_BLOCK:
            return False  # an additive mask is a mask, never a table the mask keeps
        theirs = [r for r, ref in enumerate(self.ref) if tuple(ref.shape) == shape and ref.dtype in FLOATS | set(LOW_PRECISION_EPS)
                  and (x := tensor_of(ref)) is not None and x.numel() == t.numel()]
        if not theirs:
            return False
        for k in sorted(self.later(p)):
            if func_name(self.att[k].func) not in _MASKING:
                continue
            polarity = _polarity(self.att, k)
            if polarity is None:
                continue
            m, fills_true = polarity
            mask = tensor_of(self.att[m])
            if mask is None or _lead_stripped(self.att[m].shape) != _lead_stripped(shape) or mask.numel() != t.numel():
                continue
            kept = mask.reshape(shape).bool()
            kept = ~kept if fills_true else kept
            for r in theirs:
                same = torch.isclose(t, tensor_of(self.ref[r]).reshape(shape).double(), rtol=RTOL, atol=ATOL)
                if bool((same | ~kept).all()) and not bool(same.all()):
                    return True
        return False

    def spread_number(self, p: int) -> bool:
        """Attempt step ``p`` is a float tensor holding one number, not a whole one, that the reference
        takes as a plain number (``torch.full((B, 1), top_p)`` for ``searchsorted``, where the
        reference compares with ``top_p`` itself): that number in the shape the file's call wants, no
        mask, and right."""
        t = tensor_of(self.att[p])
        if t is None or not t.numel() or self.att[p].dtype not in FLOATS | set(LOW_PRECISION_EPS) or not is_constant(t):
            return False
        value = float(t.reshape(-1)[0])
        return math.isfinite(value) and not value.is_integer() and any(
            math.isclose(value, x.value, rel_tol=1e-6) for r in self.ref for x in r.scalars)  # (as float32 holds it)

    def relaid(self, p: int) -> bool:
        """Attempt step ``p`` is a table made without the inputs whose numbers are all numbers of
        one of the reference's tables, in a shape none of the reference's tables with those numbers
        has: the cosines of the right angles laid out as ``[cos, cos]`` halves where the reference
        keeps complex pairs. Its numbers are right, and whether their arrangement is right is told
        by the step that pairs them with the data. Only a table made from steps that hold the
        reference's own values (the angles): one made from a wrong one (slopes in reverse head
        order, whose same numbers in the same count are a wrong table too) is wrong."""
        step = self.att[p]
        t = tensor_of(step)
        if not step.free or t is None or step.dtype.endswith("bool") or not bool(torch.isfinite(t).all()):
            return False

        def right(q: int, depth: int) -> bool:  # holds the reference's values, or is made from such steps only
            if self.own(q):
                return True
            parents = self.att[q].parents
            return bool(parents) and self.att[q].free and depth < MAX_DEPTH and all(right(a, depth + 1) for a in parents)

        if not step.parents or not all(right(a, 0) for a in step.parents):
            return False
        values = t.flatten().unique()
        if values.numel() < 3:
            return False
        found = False
        for s, r in self.matcher.ref:
            if not s.free or r is None or s.dtype.endswith("bool"):
                continue
            theirs = r[torch.isfinite(r)].flatten().sort().values
            if theirs.numel() == 0:
                continue
            at = torch.searchsorted(theirs, values).clamp(max=theirs.numel() - 1)
            near = torch.minimum((theirs[at] - values).abs(), (theirs[(at - 1).clamp(min=0)] - values).abs())
            if not bool((near <= ATOL + RTOL * values.abs()).all()):
                continue
            if values.numel() * RELAID_SHARE < theirs.unique().numel():
                continue  # a few of a large table's numbers (slopes 1, 1/4, 1/16 among a bias's): not that table relaid
            if tuple(r.shape) == tuple(t.shape) or (r.numel() == t.numel() and close(
                    t.flatten().sort().values, r.flatten().nan_to_num(nan=1e30).sort().values)):
                return False  # its own table's numbers in another order
            found = True
        return found

    def same_mask(self, p: int) -> bool:
        """Attempt step ``p`` is a mask that holds nothing wrong: a neutral start (all zeros, all
        True, all False) to combine masks into, or an additive mask (0 where allowed, -inf or a
        large negative where not) that is a bool mask of the reference, maybe with axes to
        broadcast over (``(B, 1, T, T)`` for ``(T, T)``)."""
        step = self.att[p]
        t = tensor_of(step)
        if t is None or t.numel() == 0:
            return False
        if step.dtype.endswith("bool"):
            return bool((t == t.flatten()[0]).all())
        if not bool(((t == 0) | (t == -math.inf)).all()):
            return False
        allowed = t == 0
        if bool(allowed.all()):
            return True
        for s, r in self.matcher.ref:
            if not s.free or r is None:
                continue
            if s.dtype.endswith("bool"):
                theirs = r == 1
            elif bool(((r == 0) | (r == -math.inf)).all()):
                theirs = r == 0
            else:
                continue
            try:
                shape = torch.broadcast_shapes(allowed.shape, theirs.shape)
            except RuntimeError:
                continue
            if shape == allowed.shape and torch.equal(allowed, theirs.expand(shape)):
                return True
        return False

    def net_mask(self, p: int) -> bool:
        """Attempt step ``p`` is a mask (0 / -inf, or bool True where allowed) that blocks exactly
        what the reference's masking blocks by the time it is done (the -inf entries of a masked
        scores step of the reference, broadcast): the causal and the padding mask joined into one
        ``(B, 1, T, T)`` mask, which the reference never makes, applies them both right."""
        step = self.att[p]
        t = tensor_of(step)
        if t is None or t.numel() == 0:
            return False
        if step.dtype == "bool":
            blocked = ~t.bool()
        elif bool(((t == 0) | torch.isneginf(t)).all()):
            blocked = torch.isneginf(t)
        else:
            return False
        if not bool(blocked.any()) or bool(blocked.all()):
            return False
        for s, r in self.matcher.ref:
            if r is None or s.dtype == "bool" or func_name(s.func) not in LATE or r.dim() < blocked.dim():
                continue
            theirs = torch.isneginf(r)
            if not bool(theirs.any()):
                continue
            try:
                shape = torch.broadcast_shapes(blocked.shape, theirs.shape)
            except RuntimeError:
                continue
            if shape == theirs.shape and torch.equal(blocked.expand(shape), theirs):
                return True
        return False

    def own(self, p: int) -> set[int]:
        """The reference steps attempt step ``p`` matches in the reference's own layout."""
        return {m for m, own in self.cands[p] if own}

    # --- names -------------------------------------------------------------------------------------

    @staticmethod
    def statement_run(steps: list[Step], k: int) -> range:
        """The steps of the statement execution step ``k`` belongs to (its line, and the calls of
        the file's own helpers made from it)."""
        stack = steps[k].stack or [steps[k].line]

        def same_statement(j: int) -> bool:
            other = steps[j].stack or [steps[j].line]
            return other[:len(stack)] == stack or (other == stack[:len(other)] and other[-1] == stack[-1])

        lo = hi = k
        while lo > 0 and same_statement(lo - 1):
            lo -= 1
        while hi + 1 < len(steps) and same_statement(hi + 1):
            hi += 1
        return range(lo, hi + 1)

    @classmethod
    def name_of(cls, steps: list[Step], k: int) -> str:
        """The variable step ``k`` is assigned to: for ``cos, sin = cos[p], sin[p]``, the one of its
        place among the line's results (when the line makes as many results as it names)."""
        names = [n.strip() for n in assigned(steps[k].code).split(",")]
        if len(names) == 1:
            return names[0]
        run = cls.statement_run(steps, k)
        depth = len(steps[k].stack or [0])
        finals = [j for j in run if steps[j].line == steps[k].line and len(steps[j].stack or [0]) == depth
                  and not any(j in steps[q].parents for q in run if q > j)]
        if len(finals) == len(names) and k in finals:
            return names[finals.index(k)]
        return ", ".join(names)

    def final(self, k: int) -> bool:
        """Whether attempt step ``k`` is a value its statement ends with (what the line assigns),
        not one that a later step of the same statement, or of a helper it calls, goes on from."""
        return _final(self.att, k)

    def swapped(self, k: int) -> bool:
        """Attempt step ``k`` is what its line assigns to a name the reference uses, and holds what
        the reference calls by another of its names (``q = self.k_proj(x)``), what that name holds
        there (not a step half-way through the reference's line)."""
        m = self.matched[k]
        if m is None or not self.final(k) or not _final(self.ref, m[0]):
            return False
        name, ref_name = self.name_of(self.att, k), self.name_of(self.ref, m[0])
        if "," in name + ref_name or ref_name in ("", name) or frozenset((name, ref_name)) in self.ref_aliases:
            return False  # (`loss = nll` in the reference: both names hold that value there)
        f = func_name(self.att[k].func)
        if func_name(self.ref[m[0]].func) != f and (name, f) in self.ref_made_as:
            return False  # the reference makes its own `name` the same way: values that merely coincide (a max is a score)
        if self.named_later(m[0], name):
            return False  # a running variable (timm / CLIP: `attn = q @ k.T * scale` … `attn = attn.softmax(-1)`)
        if self.named_earlier(k, m[0], name):
            return False  # the same, the other way: `freqs = torch.outer(t, freqs)`, the reference's freqs made into angles
        # the file's own spelling of a role counts as the reference's name (key for k, xq for q)
        return name in self.ref_names or (_role(name) != _role(ref_name) and _role(name) in self.ref_roles)

    def named_later(self, r: int, name: str) -> bool:
        """Whether the reference gives ``name`` (or its role) to a value it computes from reference
        step ``r``: the file's name is a running variable that holds an earlier stage of that value
        for now (the scores under the name of the probabilities), not a value in another's place."""
        role = _role(name)
        return any(r in _ancestors(j, self.ref) for j in range(r + 1, len(self.ref))
                   if _final(self.ref, j) and any(n == name or _role(n) == role for n in names_of(self.name_of(self.ref, j))))

    def named_earlier(self, k: int, r: int, name: str) -> bool:
        """Whether attempt step ``k``'s line makes ``name`` from its own earlier value (``freqs =
        torch.outer(t, freqs)``) and the reference gives ``name`` (or its role) to a value it
        computes reference step ``r`` from: a running variable that has moved on to a later stage
        under the name of an earlier one, not a value in another's place."""
        code = self.att[k].code
        if not assigned(code) or "=" not in code or not re.search(rf"\b{re.escape(name)}\b", code.split("=", 1)[1]):
            return False
        role, up = _role(name), _ancestors(r, self.ref)
        return any(_final(self.ref, j) and any(n == name or _role(n) == role for n in names_of(self.name_of(self.ref, j)))
                   for j in up if j != r)

    def climb_swapped(self, q: int) -> int:
        """Up from a swapped step while the one value it is made from (through the steps of its own
        line) is swapped the same way: ``q = q_.view(…)`` of ``k, q_, v = …`` goes back to the unpacking."""
        while True:
            up, todo = [], list(self.att[q].parents)
            while todo:
                u = todo.pop()
                if self.att[u].line == self.att[q].line and not self.final(u):
                    todo.extend(self.att[u].parents)
                else:
                    up.append(u)
            if len(up) != 1 or self.matched[up[0]] is None or not self.swapped(up[0]):
                return q
            q = up[0]

    def swapped_above(self, p: int) -> Found | None:
        """The role found among ``p`` and its ancestors (a few named steps up, through the steps of
        a helper's ``return`` line): the earliest step named like one of the reference's values
        that holds another, followed up while its input is swapped the same way."""
        level, seen, found, depth = [p], set(), [], 0
        while level and depth < 4:
            found += [q for q in level if self.swapped(q)]
            seen |= set(level)
            if any(assigned(self.att[q].code) for q in level):  # a helper's `return …` is no step up
                depth += 1
            level = [q for k in level for q in self.att[k].parents if q not in seen]
        if not found:
            return None
        q = self.climb_swapped(min(found))
        m = self.matched[q]
        step, ref = self.att[q], self.ref[m[0]]
        line, code = step.line, step.code
        if len(step.stack) > 1 and self.source_lines:
            # inside a helper of the file, given what the reference calls by that name by its caller
            # (apply_rope(v, …) where k belongs): the helper does what it is asked, the call is wrong
            frame, wanted = step.stack[:-1], self.name_of(self.ref, m[0])
            given = [a for a in _ancestors(q, self.att) if self.att[a].stack[:-1] != frame
                     and len(self.att[a].stack) < len(step.stack) and self.matched[a] is not None
                     and self.name_of(self.ref, self.matched[a][0]) == wanted]
            if given and 0 < frame[-1] <= len(self.source_lines):
                line, code = frame[-1], self.source_lines[frame[-1] - 1].strip()
        return Found(line, code, self.name_of(self.att, q), tuple(step.shape), name_shape(step.shape, self.axes),
                     "role", self.name_of(self.ref, m[0]), name_shape(ref.shape, self.axes))

    def raised_on(self, line: int, source: str) -> Found | None:
        """The attempt raised at ``line`` on a tensor of a shape the reference never has: the step
        that made it, the last value of a name the raising line reads (``m`` made (B, H, H, 1) from
        a size read off the wrong axis, where ``torch.maximum(m, s)`` then fails)."""
        lines = source.splitlines()
        if not 0 < line <= len(lines):
            return None
        code = lines[line - 1].strip()
        read = set(re.findall(r"[A-Za-z_]\w*", code.split("=", 1)[1] if re.match(r"[\w\s,.()\[\]]+=[^=]", code) else code))
        shapes = {tuple(r.shape) for r in self.ref}
        last: dict[str, int] = {}
        for k, step in enumerate(self.att):
            name = assigned(step.code)
            if name and step.line != line and self.final(k):
                last[name] = k
        for name in sorted(read & set(last), key=lambda n: last[n]):
            k = last[name]
            if self.matched[k] is None and tuple(self.att[k].shape) not in shapes:
                return self.found(k, "raised_shape", ref_code=code)
        return None

    def found(self, k: int, reason: str, ref: int | None = None, ref_code: str = "") -> Found:
        if reason == "made":  # a mask built in one line: what the line makes, not its first piece ((T, 1) of a (T, T))
            k = line_end(self.att, k)
        step = self.att[k]
        r = self.ref[ref] if ref is not None else None
        return Found(step.line, step.code, self.name_of(self.att, k), tuple(step.shape), name_shape(step.shape, self.axes),
                     reason, self.name_of(self.ref, ref) if r is not None else "",
                     name_shape(r.shape, self.axes) if r is not None else "", _code(ref_code))

    # --- lining up a step with the reference's ---------------------------------------------------

    def counterpart(self, i: int) -> int | None:
        """The reference step attempt step ``i`` stands for: the same function, applied to inputs
        each of which the reference has as one of that step's inputs or an earlier stage of them
        (free inputs that match nothing aside). Ties go to the one fed most directly, then to the
        one whose rank among the reference's calls of that function is the attempt's."""
        step = self.att[i]
        f = _kind(step)
        # an input of the call only rearranged (k folded to (B*H, S, D)) stands for that input as it is
        taken = {p: set(self.att[p].inputs) for p in step.parents if _rearranged_input(self.att[p])}
        need = [{m for m, _ in self.cands[p]} for p in step.parents if not self.wrong_free(p) and p not in taken]
        if any(not n for n in need):
            return None
        given = set(step.inputs).union(*taken.values())
        rank = sum(1 for s in self.att[:i] if _kind(s) == f)
        options = []
        for r, s in enumerate(self.ref):
            if _kind(s) != f or not all(n & self.up[r] for n in need) or not given <= self.src_up[r]:
                continue
            direct = sum(1 for n in need if n & set(s.parents)) + len(given & set(s.inputs))
            place = sum(1 for q in self.ref[:r] if _kind(q) == f)
            options.append((-direct, place != rank, r))
        return min(options)[2] if options else None

    def explain(self, i: int, r: int, depth: int = 0) -> Found | None:
        """Why attempt step ``i`` differs from its counterpart ``r``, when its inputs or numbers
        say it: an input that stops short of what the reference feeds ``r`` (followed up to the
        step that departs), a free input made wrong, a number that differs. None: the step itself."""
        step, ref = self.att[i], self.ref[r]
        # the inputs of r that no input of i supplies as they are: what a stale input may stand for
        supplied = {m for p in step.parents for m in self.own(p)}
        missing = [x for x in ref.parents if x not in supplied]
        if self.combines_as(i, self.up[r]):
            # i combines what an earlier step of the reference combines, with another function
            # (scores - attn_bias where the reference adds them): i itself is the wrong step
            return None
        for p in step.parents:
            parent = self.att[p]
            if _rearranged_input(parent) and set(parent.inputs) <= set(ref.inputs):
                continue  # an input of the call the reference takes as it is, only rearranged
            if not self.cands[p] or self.wrong_free(p):
                if parent.free and not _fill(parent) and not self.relaid(p):  # made without the inputs (a mask, a rotation table), wrong
                    top = self.free_top(p)
                    q = self.counterpart(top)
                    if q is not None and depth < MAX_DEPTH:
                        deeper = self.explain(top, q, depth + 1)  # a step of the mask left out, a wrong number
                        if deeper is not None:
                            return deeper
                    return self.found(top, "made")
                if depth == 0:
                    return None  # a wrong input that got back on track later: not this step's story
                # inside a step that stands for a later one of the reference (a masked_fill that changed
                # nothing): its wrong input is the story, from where it first went wrong
                while True:
                    up = [q for q in self.att[p].parents if not self.cands[q] and not self.att[q].free]
                    if not up:
                        return self.found(p, "values")
                    p = min(up)
            mine = self.own(p)
            if not mine and {m for m, _ in self.cands[p]} & set(ref.parents):
                continue  # what r takes in, in the attempt's own layout (an einsum's "bsht"): its numbers may say more
            if not mine:
                mine = self.stage_relaid(p, missing)
            if not mine:
                return None  # the right values in another layout: the layout rules say it
            if mine & set(ref.parents):
                continue
            earlier = {m for m in mine for x in missing if m == x or m in self.up[x]}
            if not earlier:
                return None  # another of the reference's values (a swapped role): said by the role rule
            m = max(earlier)
            # the reference's steps from m to the input of r it stands for
            between = sorted(q for x in missing if m in self.up[x] for q in self.up[x] | {x} if m in self.up[q])
            if depth < MAX_DEPTH and _kind(parent) != _kind(self.ref[m]):
                # p does what a later step of the reference does, to an input that stops short: why
                for q in between:
                    if _kind(self.ref[q]) == _kind(parent):
                        deeper = self.explain(p, q, depth + 1)
                        if deeper is not None:
                            return deeper
                        break
            # (the input of r itself when it is made from m directly: logits.masked_fill(~keep) is the step
            # missing, not the top-k that made keep from the same logits)
            nxt = next((x for x in missing if m in self.ref[x].parents), None) or \
                next((q for q in between if m in self.ref[q].parents), None)
            if nxt is None:
                return None
            if self.done_later(i, nxt, m):
                continue  # the attempt takes that step after this one (the masks in another order)
            if self.combines_as(p, between):
                return self.found(p, "values")  # p combines what a later step of the reference does, otherwise (| for &)
            if _kind(self.ref[nxt]) == _kind(step) and depth < MAX_DEPTH:
                return self.explain(i, nxt, depth + 1)  # i stands for that earlier step (v @ kᵀ for q @ kᵀ)
            # Where the missing step belongs follows the reference's lines: the rest of the line that
            # made the input (q @ kᵀ without its scale), the line that uses it (masked_fill(~mask, …)
            # given the mask itself), or a line of its own after the input's.
            def frame(k: int) -> list[int]:
                return self.ref[k].stack[:-1]

            if self.ref[nxt].line == self.ref[m].line and frame(nxt) == frame(m):
                k = self.maker(p, m)
                found = self.found(k, "incomplete", m, self.ref[m].code)
                # returned so by a helper of the file: the rest of the line belongs to the call
                return self.at_caller(found, k, i) if self.returned(k) else found
            late = self.applied_after(i, nxt, m, masking=True)
            if late is not None:  # the mask or bias applied to what i makes (after the softmax): where it is
                return self.found(late, "late", nxt, self.ref[nxt].code)
            if (frame(nxt) == frame(r) and (self.ref[nxt].line == ref.line or frame(nxt) != frame(m))) or (
                    parent.line == step.line and parent.stack == step.stack) or (
                    list(frame(nxt))[:len(frame(r)) + 1] == [*frame(r), ref.line]):
                # done where the input is used: on that line (or the input is made on the line that uses
                # it, self.wq_b(self.wq_a(x)) without the norm between), or in the helper that uses it, or
                # in a helper called on that line (self.wkv_b(self.kv_norm(c_kv)), that line quoted)
                said = self.ref[nxt].code if frame(nxt) == frame(r) else ref.code
                return self.returned_ahead(p, m, nxt, i) or self.found(i, "input", r, said)
            unused = self.unused(p, {nxt, *between}, nxt)
            if unused is not None:  # the attempt takes the step but drops its result (masked_fill not assigned)
                return self.at_caller(self.found(unused, "unused", nxt, self.ref[nxt].code), unused, i)
            made = self.unused_input(nxt, m)
            if made is not None:  # it makes what that step takes in (the causal mask) and never uses it
                return self.at_caller(self.found(made, "unused", nxt, self.ref[nxt].code), made, i)
            if any(p in s.parents and _kind(s) == _kind(self.ref[nxt]) for s in self.att[p + 1:]) or \
                    self.applied_after(i, nxt, m) is not None:
                # the file does take that step on p for another use, or on what i makes: this use of p
                # is the one that goes without it
                return self.found(i, "input", r, self.ref[nxt].code)
            late = self.added_late(i, nxt, m)
            if late is not None:  # a bias the reference adds to the scores, added to what the softmax made
                return self.found(late, "late", nxt, self.ref[nxt].code)
            found = self.at_caller(self.found(p, "skipped", m, self.ref[nxt].code), p, i)
            return self.taken_on_sibling(found, p, nxt) or found
        return self.numbers(i, r)

    def taken_on_sibling(self, found: Found, p: int, nxt: int) -> Found | None:
        """``found``, the step ``nxt`` skipped on what ``p`` holds, said of the line where the file
        takes that step on a sibling value instead, after ``p``: the line of the reference's helper
        that ``nxt`` runs on (its RoPE line) run by the file, in ``p``'s function, for another value
        (``q = apply_rotary_emb(q, …)`` with no line for k): where the skipped value's call belongs."""
        ref, mine = self.ref[nxt], self.att[p].stack
        if len(ref.stack) < 2 or not mine:
            return None
        for j in range(p + 1, len(self.att)):
            m, step = self.matched[j], self.att[j]
            if m is None or m[0] == nxt or not m[1]:
                continue
            twin = self.ref[m[0]]
            if twin.line != ref.line or twin.stack == ref.stack or nxt in _ancestors(m[0], self.ref):
                continue  # the same line of the reference's helper, called for another value
            # where the two calls part: a line of the function that holds both (p's may sit in a lambda)
            k = next((n for n, (a, b) in enumerate(zip(mine, step.stack)) if a != b), None)
            if k is None or k + 1 >= len(step.stack) or step.stack[k] <= found.line or found.line not in mine[k:]:
                continue
            line = step.stack[k]
            if not 0 < line <= len(self.source_lines) or not 0 < found.line <= len(self.source_lines):
                return None
            code, there = self.source_lines[line - 1], self.source_lines[found.line - 1]
            indent = lambda text: len(text) - len(text.lstrip())  # noqa: E731
            if indent(code) != indent(there) or re.search(rf"\b{re.escape(found.name)}\b", code):
                return None  # in another block (a loop over heads), or the line hands the value on untouched
            return dataclasses.replace(found, line=line, code=code.strip())
        return None

    def stage_relaid(self, p: int, missing: list[int]) -> set[int]:
        """The reference steps attempt step ``p`` holds in another layout (its scores as (B, H, T, S)
        where the reference keeps (B, T, H, S)) that are an earlier stage of an input of the
        counterpart it is fed to (``missing``), a step that computes (a mask applied, not a layout)
        away: that step left out is the story, whatever the layout."""
        found = set()
        for m, _ in self.cands[p]:
            for x in missing:
                if m in self.up[x] and any(func_name(self.ref[q].func) not in LAYOUTS | CASTS
                                           for q in self.up[x] | {x} if m in self.up[q]):
                    found.add(m)
        return found

    def returned_ahead(self, p: int, m: int, nxt: int, i: int) -> Found | None:
        """Input ``p`` of step ``i`` holds reference step ``m`` where ``i`` needs ``nxt``, made from it,
        because ``p`` undoes what a function of the file returns (``~blocked`` of the contract's
        ``sliding_window_mask`` that returns the blocked positions): that function's ``return``, when
        :meth:`ahead_of_return` finds it gives back a later stage than the reference's function."""
        up = [a for a in self.att[p].parents if nxt in self.own(a)]
        if len(up) != 1 or len(self.att[p].parents) != 1:
            return None
        inner, outer = list(self.att[up[0]].stack or ()), list(self.att[i].stack or ())
        if len(inner) <= len(outer) or inner[:len(outer) - 1] != outer[:-1]:
            return None  # (made in a call of a function from i's own function)
        return self.ahead_of_return(up[0], nxt)

    def ahead_of_return(self, a: int, m: int) -> Found | None:
        """Attempt step ``a`` is what a function of the file returns, the function the reference
        defines too (the contract's ``causal_mask``), and holds reference step ``m``, which the
        reference makes only after its own function returns, from what it returns (``~allowed`` in
        the caller): the function gives back another value than the reference's, on its ``return``
        line ("output"), whatever its caller then does with it."""
        if not self.source or not self.ref_source:
            return None
        made = self.att[a]
        lines = self.source.splitlines()
        if len(made.stack or ()) < 2 or not 0 < made.line <= len(lines) or not lines[made.line - 1].lstrip().startswith("return"):
            return None
        name = _function_at(self.source, made.line)
        ref_in = [q for q, r in enumerate(self.ref) if len(r.stack or ()) >= 2 and _function_at(self.ref_source, r.line) == name]
        if not name or not ref_in or m in ref_in or not self.up[m] & set(ref_in):
            return None
        ref_return = self.ref[max(q for q in ref_in if q < m)]
        return Found(made.line, made.code, self.name_of(self.att, a), tuple(made.shape), name_shape(made.shape, self.axes),
                     "output", name, name_shape(ref_return.shape, self.axes), _code(ref_return.code))

    def unused(self, p: int, wanted: set[int], nxt: int) -> int | None:
        """A later step computed from ``p`` that nothing uses and that holds one of ``wanted`` or does
        what the first of them does (a masked_fill with -1e9 where the reference fills -inf)."""
        for j in range(p + 1, len(self.att)):
            # (what it holds the reference goes on with: topk's indices beside its values are no result left unused)
            if p in self.att[j].parents and not self.used(j) and not self.sibling_used(j) and (
                    {c for c, _ in self.cands[j]} & wanted & self.ref_used or _kind(self.att[j]) == _kind(self.ref[nxt])):
                return j
        return None

    def used(self, j: int) -> bool:
        """Whether a later attempt step is computed from step ``j``."""
        return any(j in s.parents for s in self.att[j + 1:])

    def sibling_used(self, j: int) -> bool:
        """Step ``j`` is one result of a call that gives several (topk's values beside its indices,
        sort's, max's) and another result of that call is used: the file took the call for that one
        and makes what the unused one holds its own way (a softmax over all experts where the
        reference takes the top values'), so the way it makes it, not the call, is where it goes wrong."""
        step = self.att[j]
        for k in (j - 1, j + 1):
            if 0 <= k < len(self.att):
                other = self.att[k]
                if (other.line, other.func, other.parents, other.stack) == (step.line, step.func, step.parents, step.stack) \
                        and self.used(k):
                    return True
        return False

    def unused_input(self, nxt: int, m: int) -> int | None:
        """An attempt step that nothing uses and that holds another input of the reference's step
        ``nxt`` (besides ``m``), or an earlier stage of it: the mask made for a masked_fill that is
        never applied."""
        wanted = set()
        for x in self.ref[nxt].parents:
            if x != m:
                wanted |= self.up[x] | {x}
        for j, step in enumerate(self.att):
            if any(j in s.parents for s in self.att[j + 1:]):
                continue
            if self.own(j) & wanted & self.ref_used:
                return j
        return None

    def at_caller(self, found: Found, p: int, i: int) -> Found:
        """``found`` about step ``p``; when ``p`` was made inside a helper of the file that ``i``'s
        function called (``allowed = causal_mask(T)``), said of the line of that call, the
        statement whose value ``p`` is (the code is read from the file)."""
        mine, theirs = self.att[p].stack, self.att[i].stack
        if not mine or not theirs:
            return found
        # the first frame where the two part (i may itself sit in another helper: the norm that
        # takes in an attention output the reference adds the residual to first)
        k = next((n for n, (a, b) in enumerate(zip(mine, theirs)) if a != b), len(theirs) - 1)
        if k < len(mine) - 1:
            return dataclasses.replace(found, line=mine[k], code="")
        return found

    def returned(self, k: int) -> bool:
        """Attempt step ``k`` is what a helper of the file returns: the last value of a ``return``
        line, inside a call."""
        step = self.att[k]
        return len(step.stack or ()) > 1 and step.code.startswith("return ") and self.final(k)

    def maker(self, p: int, m: int) -> int:
        """The attempt step that first holds what ``p`` holds (reference step ``m``): ``p`` or the
        input it merely views, casts or copies (``allowed[None, None]`` of ``torch.ones(T, T)``), or
        combines with what was made without the inputs and changed nothing (``score + adder`` of zeros)."""
        while True:
            up = [q for q in self.att[p].parents if m in {c for c, _ in self.cands[q]}]
            if len(up) != 1 or any(q != up[0] and not self.att[q].free for q in self.att[p].parents):
                return p
            p = up[0]

    def combines_as(self, k: int, among) -> bool:
        """Attempt step ``k`` takes in exactly what one of the reference steps ``among`` combines (two
        inputs or more): it stands for that step, whatever function it applies."""
        held = [{c for c, _ in self.cands[p]} for p in self.att[k].parents]
        for x in among:
            px = set(self.ref[x].parents)
            if len(px) >= 2 and len(px) == len(held) and all(h & px for h in held) and px <= set().union(*held):
                return True
        return False

    def later(self, i: int) -> set[int]:
        """The attempt's steps computed from step ``i``'s result, directly or through others."""
        later, todo = set(), [i]
        while todo:
            k = todo.pop()
            for j in range(k + 1, len(self.att)):
                if k in self.att[j].parents and j not in later:
                    later.add(j)
                    todo.append(j)
        return later

    def done_later(self, i: int, nxt: int, m: int) -> bool:
        """Whether the attempt applies the reference's step ``nxt`` (made from ``m`` and other inputs)
        after its step ``i``, to ``i``'s result: the same function with those other inputs."""
        side = [x for x in self.ref[nxt].parents if x != m and not self.ref[x].free]
        side_free = [x for x in self.ref[nxt].parents if x != m and self.ref[x].free]
        side_inputs = set(self.ref[nxt].inputs)
        if side and all(self.src_up[x] & set(self.att[i].inputs) for x in side) or side_inputs & set(self.att[i].inputs):
            return True  # step i itself takes in what that step does (attn_bias + attn_mask for a masked_fill)
        if not side and not side_free:
            return False
        later = self.later(i)
        for j in sorted(later):
            if _kind(self.att[j]) != _kind(self.ref[nxt]):
                continue
            # each other input there, or an earlier stage of it (a mask not inverted is still that mask)
            theirs = {c for p in self.att[j].parents for c, _ in self.cands[p]}
            # (with free inputs only, one of the same shape at least: a weight taken in the wrong
            # layout is still that step done later, a product of the feed-forward is not)
            shapes = {tuple(sorted(self.att[q].shape)) for q in self.att[j].parents if q not in later and q != i}
            if all(theirs & (self.up[x] | {x}) for x in side) and (side or len(self.att[j].parents) > 1) and (
                    side or all(theirs & (self.up[x] | {x}) or tuple(sorted(self.ref[x].shape)) in shapes
                                for x in side_free)):
                return True
        return False

    def applied_after(self, i: int, nxt: int, m: int, masking: bool = False) -> int | None:
        """The first step computed from ``i``'s result that takes in what the reference's step ``nxt``
        takes besides ``m`` (or an earlier stage of it): the causal mask applied to the probabilities.
        ``masking``: both steps apply a mask or a bias (:data:`LATE`), the mask built in steps of its own
        (``ones * attention_mask.float()``) followed back to what the reference's is made from."""
        side = [x for x in self.ref[nxt].parents if x != m]
        if not side or masking and _kind(self.ref[nxt]) not in LATE:
            return None
        later = self.later(i)
        behind, todo = {i}, [i]  # i and every step it is made from
        while todo:
            for q in self.att[todo.pop()].parents:
                if q not in behind:
                    behind.add(q)
                    todo.append(q)
        data = {x for q in behind for x in self.att[q].inputs}  # the traced inputs i is computed from

        def side_input(q: int) -> bool:  # made apart from i's inputs (a mask from attention_mask, ones)
            seen, todo = {q}, [q]
            while todo:
                k = todo.pop()
                if set(self.att[k].inputs) & data:
                    return False
                for p in self.att[k].parents:
                    if p not in seen:
                        seen.add(p)
                        todo.append(p)
            return True

        for j in sorted(later):
            others = [q for q in self.att[j].parents if q not in later and q != i]
            # each other input and what it was made from, apart from what i is made from (the mask
            # built in steps, not the scores it was never applied to)
            if masking and _kind(self.att[j]) not in LATE:
                continue
            made_from, todo = set(others), [q for q in others if masking and q not in behind and side_input(q)]
            while todo:
                for q in self.att[todo.pop()].parents:
                    if q not in made_from and q not in later and q not in behind:
                        made_from.add(q)
                        todo.append(q)
            theirs = {c for q in made_from for c, _ in self.cands[q]}
            if others and all(theirs & (self.up[x] | {x}) for x in side):
                return j
        return None

    def added_late(self, i: int, nxt: int, m: int) -> int | None:
        """A later step computed from ``i``'s result that applies a tensor made without the inputs
        (adds, subtracts or multiplies it, fills or selects by it), where the reference's step
        ``nxt`` applies one made without the inputs to ``m`` (a position bias in another convention
        than the reference's added after the softmax, a mask zeroing the probabilities): that step,
        else None."""
        if _kind(self.ref[nxt]) not in LATE or not any(self.ref[x].free for x in self.ref[nxt].parents if x != m):
            return None
        later = self.later(i)
        for j in sorted(later):
            others = [q for q in self.att[j].parents if q not in later and q != i]
            if _kind(self.att[j]) in LATE and others and all(self.att[q].free for q in others) and any(
                    self.wrong_free(q) for q in others):
                return j
        return None

    def free_top(self, p: int) -> int:
        """The earliest step of the wrong free tensor ``p`` was made from (through steps that match
        nothing and are computed from something: a factory such as ``arange`` is not climbed to)."""
        while True:
            up = [q for q in self.att[p].parents if self.wrong_free(q) and not self.factory(q)]
            if not up:
                return p
            p = min(up)

    def factory(self, q: int) -> bool:
        """Step ``q`` is a factory (``arange``), or one only reshaped or cast (``arange(T).view(1, T)``,
        ``arange(T)[:, None]``): a building block, not where a mask made from it goes wrong. A tensor
        of the file's own numbers (``torch.tensor(slopes)``) is no building block: they may be wrong."""
        while self.att[q].parents:
            if func_name(self.att[q].func) in GRIDS:  # meshgrid(arange(T), arange(T)): the positions, laid out
                return all(self.factory(r) for r in self.att[q].parents)
            moves = func_name(self.att[q].func) in LAYOUTS | COPIES | CASTS | {"getitem"}
            if not moves or len(self.att[q].parents) != 1:
                return False
            q = self.att[q].parents[0]
        return func_name(self.att[q].func) not in DATA

    def _base2(self) -> bool:
        """Whether the attempt takes its exponentials with ``exp2`` (the Triton tutorial's softmax,
        its scores scaled by log2(e) more than the reference's)."""
        if not hasattr(self, "_exp2"):
            self._exp2 = any(func_name(s.func) == "exp2" for s in self.att)
        return self._exp2

    def numbers(self, i: int, r: int) -> Found | None:
        """A plain number that attempt step ``i`` is given where its counterpart ``r`` has another,
        held by a variable the reference's step reads too (``scale_factor``, ``self.eps``) or one of
        the attempt's own (when not merely the reference's numbers in another order): the line where
        that variable got its value."""
        mine, theirs = self.att[i].scalars, self.ref[r].scalars
        a_factor, b_factor = _scaling(self.att[i]), _scaling(self.ref[r])
        if a_factor is not None and b_factor is not None:
            # a scaling against a scaling, * s or / s: the factors compared, the reference's said in the
            # attempt's form (its / 2.0 is * 0.5 beside the attempt's * scale)
            if math.isclose(a_factor, b_factor, rel_tol=1e-6) or math.isclose(mine[0].value, theirs[0].value, rel_tol=1e-6):
                return None  # the same number, used otherwise (/ scale for * scale): the step itself
            shown = b_factor if func_name(self.att[i].func) == "mul" else 1.0 / b_factor
            theirs = [Scalar(mine[0].key, shown, theirs[0].name, theirs[0].origin, theirs[0].size)]
        by_key: dict[str, Scalar] = {s.key: s for s in theirs}
        reordered = sorted(s.value for s in mine) == sorted(s.value for s in theirs)
        layout = func_name(self.att[i].func) in LAYOUTS | COPIES
        for a in mine:
            b = by_key.get(a.key)
            if b is not None and math.isclose(a.value, b.value, rel_tol=1e-6, abs_tol=1e-12):
                continue
            if b is not None and b.value and self._base2() and any(
                    math.isclose(a.value / b.value, r, rel_tol=1e-6) for r in (LOG2E, 1 / LOG2E)):
                continue  # the reference's number times log2(e): the scale of a softmax taken with exp2
            if not a.name and b is not None and not layout:
                worked = self.worked_out(i, r, a, b)  # (1.0 - smoothing) with smoothing wrong: where it got it
                if worked is not None:
                    return worked
            if (b is not None and not a.name and not b.name and not a.key[:1].isdigit()
                    and float(a.value).is_integer() and float(b.value).is_integer()):
                # a whole number written on the line, given by keyword (softmax(…, dim=-2)): the line
                step = self.att[i]
                return Found(step.line, step.code, a.key, (), _number(a.value), "scalar", b.key, _number(b.value),
                             _code(step.code))  # the attempt's line (quoted as "your …")
            if b is not None and b.name and not a.name and a.key == b.key and not reordered and not layout:
                # a number written on the line where the reference reads a variable holding another
                # (`labels != -100` for `targets != ignore_index`): the line (a view's sizes are its
                # layout, said by the layout rules: -1 there is no number for the reference's `c`)
                step = self.att[i]  # (its shape: the step, in the call it goes wrong in)
                return Found(step.line, step.code, b.name, tuple(step.shape), _number(a.value), "scalar", b.name,
                             _number(b.value), _code(step.code))
            if a.origin is None or not a.name or b is None:
                continue
            names = names_of(a.name)
            # The variable the reference reads there, holding another value: where it got it. Or one of
            # the attempt's own that the reference never reads (its scale under another name, where the
            # reference may compute it in place): where it got it, unless it is a size (read from a
            # shape, or a number the reference has as a size of its own, head_dim where sqrt(head_dim)
            # belongs: then the step uses the wrong one, and the step's line is the one).
            own = not (names & self.scalar_names or reordered or a.size
                       or any(math.isclose(a.value, v, rel_tol=1e-9) for v in self.scalar_values))
            default = next((d for d in self.argument_defaults.get(a.origin, ()) if math.isclose(d[1], a.value, rel_tol=1e-9)), None)
            if ((b.name and names & names_of(b.name)) or own) and default is not None and 0 < default[0] <= len(self.source_lines):
                # `self.eps = eps` of `eps=1e-5`: the caller left it to the default, which is the wrong number
                return Found(default[0], self.source_lines[default[0] - 1].strip(), a.name, (), _number(a.value), "scalar",
                             b.name, _number(b.value), _code(self.att[i].code))
            if ((b.name and names & names_of(b.name)) or own) and a.origin in self.argument_copies:
                # `self.r = r`: the number the caller passed, kept as it is: right, its use is not
                step = self.att[i]
                return Found(step.line, step.code, a.name, tuple(step.shape), _number(a.value), "scalar", b.name,
                             _number(b.value), _code(step.code))
            if (b.name and names & names_of(b.name)) or own:
                # the line where it got its value; quoted (ref_code), the attempt's own line that uses
                # it: the reference's line is not in the learner's file
                return Found(a.origin, "", a.name, (), _number(a.value), "scalar", b.name if b is not None else "",
                             _number(b.value) if b is not None else "", _code(self.att[i].code))
        return None

    def worked_out(self, i: int, r: int, a: Scalar, b: Scalar) -> Found | None:
        """Attempt step ``i``'s number ``a``, worked out on its line from one variable that got its value
        on another line of the function (``(1.0 - smoothing) * loss`` of ``smoothing = eps * V / (V - 1)``,
        ``triu(diagonal=-(span - 1))`` of ``span = window + 1``), where its counterpart ``r`` has ``b``,
        worked out on the reference's line by the same arithmetic from one of its own variables
        (``1 - label_smoothing``, ``-(window - 1)``): the arithmetic is right and the variable holds
        the wrong number, said where it got it ("scalar"). A size (read from a shape) is left to the
        step's line, as :meth:`numbers` leaves it."""
        step, ref = self.att[i], self.ref[r]
        if not 0 < step.line <= len(self.source_lines) or not self.ref_source:
            return None
        ref_lines = self.ref_source.splitlines()
        if not 0 < ref.line <= len(ref_lines):
            return None
        held = {x.name: x for k in range(max(0, i - 8), min(len(self.att), i + 9))
                if (self.att[k].line, self.att[k].stack, self.att_part[k]) == (step.line, step.stack, self.att_part[i])
                for x in self.att[k].scalars if x.name and x.name.isidentifier()}
        theirs = _arithmetic_pieces(ref_lines[ref.line - 1].strip())
        found = []
        for piece, name in _arithmetic_pieces(self.source_lines[step.line - 1].strip()):
            known = held.get(name)
            if known is not None and known.size:
                continue
            v = known.value if known is not None else _solved(piece, name, a.value)
            mine = None if v is None else _evaluated(piece, name, v)
            if mine is None or not _same_number(mine, a.value):
                continue
            for other, ref_name in theirs:
                if _shape_of(other, ref_name) != _shape_of(piece, name):
                    continue
                w = _solved(other, ref_name, b.value)
                if w is not None and not _same_number(w, v):
                    found.append((name, v, ref_name, w, known))
        if len({f[0] for f in found}) != 1:
            return None
        name, v, ref_name, w, known = found[0]
        origin = known.origin if known is not None and known.origin is not None else \
            _assigned_before(self.source, name, step.line)
        if origin is None or origin == step.line or not 0 < origin <= len(self.source_lines):
            return None
        return Found(origin, self.source_lines[origin - 1].strip(), name, (), _number(v), "scalar", ref_name,
                     _number(w), _code(step.code))

    def short(self, outputs) -> Found | None:
        """An output that holds an earlier stage of the reference's output of that name."""
        mine, theirs = outputs
        for name, a in sorted(mine.items(), key=lambda kv: kv[1]):
            r = theirs.get(name)
            if r is None or not (0 <= a < len(self.att)) or not (0 <= r < len(self.ref)):
                continue
            own = self.own(a)
            if r in own and self.att[a].dtype != self.ref[r].dtype:
                # the right values in another dtype (float32 where the input was bfloat16): the
                # reference's cast back is missing; its line is the one that changes the dtype
                cast = next((q for q in sorted(self.up[r] | {r}, reverse=True)
                             if self.ref[q].dtype == self.ref[r].dtype
                             and any(self.ref[p].dtype != self.ref[r].dtype for p in self.ref[q].parents)), r)
                f = self.found(a, "dtype", r, self.ref[cast].code)
                return dataclasses.replace(f, named=f"{f.named} {self.att[a].dtype}",
                                           ref_named=f"{f.ref_named} {self.ref[r].dtype}")
            if not own or r in own:
                continue
            earlier = own & self.up[r]
            if not earlier:
                continue
            m = max(earlier)
            nxt = min(q for q in self.up[r] | {r} if m in self.ref[q].parents)
            return self.found(a, "short", m, self.ref[nxt].code)
        return None


def find(attempt: list[Step], reference: list[Step], axes: dict[str, int], raised_at: int | None = None,
         outputs: tuple[dict[str, int], dict[str, int]] | None = None, source: str = "",
         ref_source: str = "", marks: tuple[list, list] | None = None, part_axes=None,
         tolerance: tuple[float, float] | None = None) -> Found | None:
    """The first step of ``attempt`` that goes wrong for good (see the module doc), or None.
    ``outputs``: the steps that made each named output, the attempt's and the reference's.
    ``marks``: where each call of a script of calls starts, in the attempt's trail and the reference's;
    the found step's call is its ``part``, and ``part_axes(part)`` the axis names to write its shapes
    with when that call's sizes differ (None: ``axes``). ``tolerance``: the case's (rtol, atol), when
    it has its own (see :func:`_near_misses`).
    ``source`` and ``ref_source``, the two files, let :mod:`.explain` name a cause on another line
    where the values alone say no more than "wrong values here"."""
    if not attempt and raised_at is not None and reference:  # it raised before computing anything from the inputs
        return Found(raised_at, "", "", (), "", "raised_first")
    if not attempt or not reference:
        return None
    trails = _Trails(attempt, reference, axes, marks, source, ref_source)
    def explained(found: Found | None) -> Found | None:
        """The finder's line, said where its cause is written when the file shows it (a buffer, a
        list, a grid, indices, a None handed to a helper, a table's key set elsewhere)."""
        if found is not None:
            found = _buffer_made(found, trails, source) or found
            found = _list_made(found, trails, source) or found
            found = _compared_grids(found, trails) or found
            found = _indices_made(found, trails) or found
            found = _cell_writes(found, trails, source) or found
            found = _none_unless(found, trails, source) or found
            found = _unused_for_none(found, trails, source) or found
            found = _table_choice(found, trails, source) or found
            found = _table_function(found, trails, source) or found
        return found

    found = _first_wrong(trails, axes, raised_at, outputs, source, ref_source)
    if found is None or _at_output(found, attempt, outputs):
        # nothing said, or only that an output is wrong: the steps only near their match on the way
        # to a wrong output are looked at too (see _near_misses)
        found = _near_again(trails, found, axes, raised_at, outputs, source, ref_source, tolerance)
    elif found.reason == "input" and any(st.line == found.line and tuple(st.shape) == found.shape
                                         and func_name(st.func) in SUMS for st in attempt):
        found = _scaled_on(trails, found, "rescaled") or found  # (a sum where the reference takes a mean is no step left out)
    found = explained(found)
    if found is None or not marks or not marks[0]:
        return found
    at = locate(found, attempt, reference, trails.matcher)
    if found.reason == "zero_positions":  # the positions of the call where they are all 0, made here or in the helper it calls
        at = next((j for j, st in enumerate(attempt) if (st.line == found.line or found.line in (st.stack or ())[:-1])
                   and tuple(st.shape) == found.shape and st.free and (t := tensor_of(st)) is not None
                   and t.numel() and not bool(t.abs().max() > 0)), at)
    if at is None and found.reason == "output":  # said at a return statement, which makes no step: the value's step
        at = next((j for j, st in enumerate(attempt) if tuple(st.shape) == tuple(found.shape)
                   and assigned(st.code) == found.name), None)
    if at is None:  # said at the call of a helper of the file: a step made inside that call
        at = next((j for j, st in enumerate(attempt) if found.line in (st.stack or ())[:-1]), None)
    part = next((label for first, label in reversed(sorted(marks[0])) if at is not None and first <= at), "")
    if not part:
        return found
    named = part_axes(part) if part_axes is not None else None
    if named and named != axes:
        trails.axes = named
        found = explained(_first_wrong(trails, named, raised_at, outputs, source, ref_source)) or found
    return dataclasses.replace(found, part=part)



def _at_output(found: Found, attempt: list[Step], outputs) -> bool:
    """Whether ``found`` says no more than that a named output's own step holds wrong values."""
    if found.reason != "values" or not outputs:
        return False
    return any(0 <= a < len(attempt) and attempt[a].line == found.line and tuple(attempt[a].shape) == found.shape
               for a in outputs[0].values())


def _near_again(trails: _Trails, found: Found | None, axes, raised_at, outputs, source: str, ref_source: str,
                tolerance) -> Found | None:
    """:func:`_first_wrong` again with the steps only near their match on the way to a wrong output
    no longer matching (:func:`_near_misses`); its answer when it has one that is not a mask, an index
    or a constant (a number a little off is the story: "near", or, for a sum where the reference takes
    a mean, the number that scales it, :func:`_scaled_on`), else ``found`` with the trails as they were."""
    saved = list(trails.matched)
    trails.near = _near_misses(trails, outputs, tolerance)
    again = _first_wrong(trails, axes, raised_at, outputs, source, ref_source) if trails.matched != saved else None
    if again is not None and trails.near and again.reason in NEAR_OVER:
        steps = [s for s in trails.att if s.line == again.line and tuple(s.shape) == again.shape]
        if steps and all(s.dtype not in FLOATS or is_constant(tensor_of(s)) for s in steps):
            again = None  # (a mask or a test is no number a little off: the difference is elsewhere)
        else:
            again = _scaled_on(trails, again) or dataclasses.replace(again, reason="near", ref_code="")
    if again is None:
        trails.matched[:] = saved
        trails.near = frozenset()
        return found
    return again


def _scaled_on(trails: _Trails, found: Found, reason: str = "near") -> Found | None:
    """In a run whose outputs are only near the reference's: ``found``'s step holds a reference
    value times one number (``lprobs.sum(-1)`` where the reference takes the mean), a building block
    in another scale, not a slip; the first step computed from it that multiplies or divides by a
    plain number is where that scale is (or is not) taken back: the line that set the number
    (``eps_i = epsilon / (V - 1)``), else that step's own line (reason "near"). None when the step
    is no such multiple or no such number follows."""
    att = trails.att
    k = next((j for j, st in enumerate(att) if st.line == found.line and tuple(st.shape) == found.shape
              and trails.matched[j] is None), None)
    t = tensor_of(att[k]) if k is not None else None
    if t is None or t.numel() < 2 or not bool(torch.isfinite(t).all()):
        return None
    flat = t.flatten()

    def multiple(r: torch.Tensor | None) -> bool:
        if r is None or r.numel() != flat.numel() or not bool(torch.isfinite(r).all()) or bool((r == 0).any()):
            return False
        ratio = flat / r.flatten()
        return not math.isclose(float(ratio[0]), 1.0, rel_tol=1e-3) and close(ratio, ratio[:1].expand_as(ratio))

    if not any(multiple(r) for _, r in trails.matcher.ref):
        return None
    later, todo = set(), [k]
    while todo and len(later) < 64:
        q = todo.pop()
        for c in range(q + 1, len(att)):
            if q in att[c].parents and c not in later:
                later.add(c)
                todo.append(c)
    for c in sorted(later):
        st = att[c]
        numbers = [x for x in st.scalars if x.key in ("0", "1")]  # (a number read off a size too: V - 1)
        if func_name(st.func) in {"mul", "div", "truediv", "mul_", "div_"} and numbers:
            x = numbers[0]
            if x.origin and 0 < x.origin <= len(trails.source_lines):  # the number, where it is set
                code = trails.source_lines[x.origin - 1].strip()
                return Found(x.origin, code, x.name or assigned(code), (), f"{x.value:g}", reason)
            return Found(st.line, st.code, assigned(st.code), tuple(st.shape), name_shape(st.shape, trails.axes), reason)
    return None

# what a run whose outputs are only near the reference's says instead as "near": its values are a
# little off, not made from a stage the reference takes first nor half-way through a line
NEAR_OVER = frozenset({"input", "values", "incomplete"})


def _list_made(found: Found, trails: _Trails, source: str) -> Found | None:
    """A wrong tensor "made" by ``torch.tensor(name)`` from a Python list the file computed
    (``slopes = [base ** i for i in range(n)]``): the line that assigned that list, the last plain
    assignment of ``name`` before the call in its function (the trace sees no Python arithmetic)."""
    import ast

    if found.reason != "made" or not any(s.line == found.line and func_name(s.func) in DATA for s in trails.att):
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno <= found.line <= (n.end_lineno or n.lineno)
             and isinstance(n.func, ast.Attribute) and n.func.attr in DATA and n.args and isinstance(n.args[0], ast.Name)]
    if len(calls) != 1:
        return None
    name = calls[0].args[0].id
    span = _span_of(_function_spans(source), found.line)
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.lineno < found.line
             and (span is None or span[0] <= n.lineno <= span[1])
             and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)
             and isinstance(n.value, (ast.List, ast.ListComp, ast.BinOp, ast.Call))]
    if not lines:
        return None
    line = max(lines)
    code = source.splitlines()[line - 1].strip()
    return dataclasses.replace(found, line=line, code=code, name=name, shape=(), named="")


COMPARE = {"gt", "ge", "lt", "le", "eq", "ne", "greater", "greater_equal", "less", "less_equal"}
SHIFTS = {"add", "sub", "rsub", "neg", "unsqueeze", "getitem", "unbind", "select", "view", "reshape", "expand", "to", "float", "long", "int"}


def _ramp(t: torch.Tensor | None) -> tuple[float, float] | None:
    """(start, step) when ``t`` counts along exactly one of its axes by a constant, non-zero step
    and is the same along every other: a position grid (``arange(T)[:, None]``, ``ones.cumsum(1)``)."""
    if t is None or t.dim() == 0 or t.numel() < 2 or not bool(torch.isfinite(t).all()):
        return None
    varying = [a for a in range(t.dim()) if t.shape[a] > 1 and not bool((t == t.narrow(a, 0, 1)).all())]
    if len(varying) != 1:
        return None
    line = t.movedim(varying[0], -1).reshape(-1, t.shape[varying[0]])[0]
    steps = line[1:] - line[:-1]
    if float(steps[0]) == 0 or not bool((steps == steps[0]).all()):
        return None
    return float(line[0]), float(steps[0])


def _grid_roots(att: list[Step], c: int) -> list[int] | None:
    """What comparison step ``c`` compares, followed up through its own line (an offset, a
    broadcast): two steps made on other lines, or None."""
    step = att[c]
    if func_name(step.func) not in COMPARE or len(step.parents) != 2:
        return None
    roots = []
    for p in step.parents:
        q = p
        while 0 <= q < len(att) and att[q].line == step.line and func_name(att[q].func) in SHIFTS \
                and len(att[q].parents) == 1:
            q = att[q].parents[0]
        if not 0 <= q < len(att) or att[q].line == step.line:
            return None
        roots.append(q)
    return roots


def _matches_no_mask(trails: _Trails, step: Step) -> bool:
    """Whether the mask ``step`` holds matches no reference step, nor does its negation, in the
    reference's own layout (a transposed triangle is no match for a mask)."""
    mask = tensor_of(step)
    return mask is not None and not any(own for form in (mask, 1 - mask)
                                        for _, own in trails.matcher.matches(form, step.dtype))


def _compared(trails: _Trails, c: int) -> Found:
    step = trails.att[c]
    return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, trails.axes),
                 "compared")


# where a comparison of grids that the reference makes too may be said instead (not a raise, a layout …)
COMPARED_OVER = {"made", "incomplete", "values", "skipped", "input"}


def _compared_grids(found: Found, trails: _Trails) -> Found | None:
    """A wrong mask made by comparing position grids: the grids are right, as any grid is a
    building block the reference need not make; the comparison that turns them into a mask
    (``key_rank > query_rank + 1``, an offset or ``>`` for ``>=``) is where it goes wrong, said at
    its line when that mask, or its negation, matches nothing of the reference's. Two ways: the
    finder says "made" of a grid that counts alike with the other side (``key_rank =
    ones.cumsum(1)``, ``query_rank = ones.cumsum(0)``, both 1 .. T), or the reference compares
    grids into a mask of that shape too (a flash tile's ``cols > rows``) and the attempt's first
    comparison of two position grids matches none of its masks, wherever the finder looked."""
    if found.reason not in COMPARED_OVER:
        return None
    att = trails.att
    if found.reason == "made":
        grids = [k for k, s in enumerate(att) if s.line == found.line and s.free and _ramp(tensor_of(s)) is not None]
        for c in range(grids[0] + 1 if grids else len(att), len(att)):
            roots = _grid_roots(att, c) if att[c].line != found.line else None
            if roots is None or not set(roots) & set(grids):
                continue
            ramps = [_ramp(tensor_of(att[q])) for q in roots]
            if any(r is None for r in ramps) or len({(r[0], abs(r[1])) for r in ramps}) != 1:
                return None  # (grids that count differently: one of them may be the slip)
            return _compared(trails, c) if _matches_no_mask(trails, att[c]) else None
    shapes = {tuple(s.shape) for s in trails.ref if func_name(s.func) in COMPARE and s.dtype == "bool"}
    for c, step in enumerate(att):
        roots = _grid_roots(att, c) if tuple(step.shape) in shapes and step.line != found.line else None
        if roots is None:
            continue
        ramps = [_ramp(tensor_of(att[q])) for q in roots]
        if any(r is None for r in ramps) or len({abs(r[1]) for r in ramps}) != 1:
            continue
        return _compared(trails, c) if _matches_no_mask(trails, step) else None  # (the first such comparison only)
    return None


WRITES = {"index_put", "index_fill", "scatter", "index_copy", "setitem"}
INTEGER = {"int64", "int32", "int16", "int8", "uint8", "long", "int"}


def _indices_made(found: Found, trails: _Trails) -> Found | None:
    """A wrong mask "made" by writing one value at positions into a mask that was right before
    (``m.index_put((too_far[0], too_far[1]), False)`` on the causal ``m``): the positions are the
    slip, said at the one line that made them (``torch.tril_indices(T, T, offset=-window - 1)``)
    when every index comes from that line."""
    if found.reason != "made":
        return None
    att = trails.att
    writes = [k for k, s in enumerate(att) if s.line == found.line and func_name(s.func) in WRITES and s.free]
    if len(writes) != 1 or len(att[writes[0]].parents) < 3:
        return None
    step = att[writes[0]]
    base, *rest = step.parents
    base_t = tensor_of(att[base]) if 0 <= base < len(att) else None
    if base_t is None or not (is_constant(base_t) or any(own for _, own in trails.matcher.matches(base_t, att[base].dtype))):
        return None
    values = [p for p in rest if att[p].dtype not in INTEGER]
    indices = [p for p in rest if att[p].dtype in INTEGER]
    written = tensor_of(att[values[0]]) if len(values) == 1 else None
    if written is None or not indices or not (written.numel() == 1 or is_constant(written)):
        return None
    roots = set()
    for p in indices:
        q = p
        while att[q].line == step.line and len(att[q].parents) == 1 and func_name(att[q].func) in SHIFTS:
            q = att[q].parents[0]
        if att[q].line == step.line:
            return None
        roots.add(att[q].line)
    if len(roots) != 1:
        return None
    line = roots.pop()
    k = max(j for j, s in enumerate(att) if s.line == line and j < writes[0])
    made = att[k]
    return Found(made.line, made.code, assigned(made.code), tuple(made.shape), name_shape(made.shape, trails.axes), "indices")


FACTORIES = {"zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like"}


def _cell_writes(found: Found, trails: _Trails, source: str) -> Found | None:
    """A wrong tensor "made" at the call of a function of the file that makes it with a factory
    (``torch.zeros``, ``ones``, ``full``, ``empty``), fills it by subscript writes at one line inside a
    loop (``m[i - 1, j - 1] = True`` cell by cell, ``mask[row, :row] = True`` row by row,
    ``slopes[num_heads - h] = vals[h - 1]``) and returns it: writes into a tensor make no step of the
    trail, so the call is where its values are first seen; the write is what made them, said there
    (reason "cell_writes")."""
    import ast

    if found.reason != "made" or not source:
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions: dict[str, list] = {}
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, []).append(node)
    # the calls on the line, and those that gave a name the line reads a value earlier in its function
    # (``keep = causal_mask(T)`` a line or two before: a call that returns a tensor makes no step there)
    calls = [n for n in walk(tree) if isinstance(n, ast.Call) and n.lineno <= found.line <= (n.end_lineno or n.lineno)]
    read = {n.id for n in walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.lineno <= found.line <= (n.end_lineno or n.lineno)}
    around = _function_node_at(source, found.line)
    if around is not None and read:
        calls += [node.value for node in walk(around) if isinstance(node, ast.Assign) and node.lineno < found.line
                  and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                  and node.targets[0].id in read and isinstance(node.value, ast.Call)]
    called = set()
    for node in calls:
        name = last_name(node.func)
        if name in functions and len(functions[name]) == 1:
            called.add(name)
    writes = {w for w in (_filled_by_writes(functions[name][0]) for name in called) if w is not None}
    if len(writes) != 1:
        return None
    line, name = writes.pop()
    code = source.splitlines()[line - 1].strip() if line <= len(source.splitlines()) else ""
    return Found(line, code, name, found.shape, found.named, "cell_writes")


def _filled_by_writes(function) -> tuple[int, str] | None:
    """(the line, the name) of the one subscript write inside a loop that fills the tensor ``function``
    returns, made by a factory and changed by nothing else; None otherwise."""
    import ast

    returns = [n for n in walk(function) if isinstance(n, ast.Return)]
    if len(returns) != 1 or not isinstance(returns[0].value, ast.Name):
        return None
    name = returns[0].value.id
    made, writes = [], set()
    for node in walk(function):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and target.id == name:
                    call = node.value if isinstance(node, ast.Assign) else None
                    if not isinstance(call, ast.Call) or last_name(call.func) not in FACTORIES:
                        return None  # given another value: not a tensor filled by writes
                    made.append(node)
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
                    writes.add(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == name:
            return None  # changed in place otherwise too (fill_, index_put_)
    if len(made) != 1 or len(writes) != 1:
        return None
    line = writes.pop()
    loops = [n for n in walk(function) if isinstance(n, (ast.For, ast.While))
             and n.lineno < line <= (n.end_lineno or n.lineno)]
    return (line, name) if loops else None


def _guarded_name(test) -> str | None:
    """The variable an ``if`` runs its body for when it is set: ``mask is not None``, ``mask`` (a
    step under it left out means the variable was None)."""
    import ast

    if isinstance(test, ast.Name):
        return test.id
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return test.left.id
    return None



def _string_line(tree, name: str) -> int | None:
    """The one line of the file that gives ``name`` a string literal: a class body's ``name = "…"`` or
    ``name: str = "…"``, ``self.name = "…"``, a module's ``name = "…"``, a parameter's default
    ``name="…"`` or a call's keyword ``name="…"``; None when there is none or more than one."""
    import ast

    def text(node) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    lines = set()
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None and text(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name or isinstance(t, ast.Attribute) and t.attr == name
                   for t in targets):
                lines.add(node.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            lines |= {d.lineno for a, d in defaults(node) if a.arg == name and text(d)}
        elif isinstance(node, ast.keyword) and node.arg == name and text(node.value):
            lines.add(node.value.lineno)
    return lines.pop() if len(lines) == 1 else None


def _table_choice(found: Found, trails: _Trails, source: str) -> Found | None:
    """Values that first go wrong inside a class or function of the file that a table of the file's
    own alternatives holds (``ACT2FN = {"gelu_new": NewGELUActivation, "silu": SiLUActivation}``),
    picked by a key given as a string in one place (``hidden_act = "gelu_new"``, a config field's
    default, a module constant): when the reference's code names another key of the table and not
    this one, the entry is right as written and the choice is the slip, said where the string is
    set (reason "table_key"). A wrong formula inside the entry the reference does name stays where
    the finder put it."""
    import ast

    if found.reason not in ("values", "made", "incomplete", "skipped", "input") or not trails.ref_source:
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    top = [n for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
           and n.lineno <= found.line <= (n.end_lineno or n.lineno)]
    if len(top) != 1:
        return None
    entry = top[0].name
    tables = {}
    for node in walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if len(targets) == 1 and isinstance(targets[0], (ast.Name, ast.Attribute)) \
                and isinstance(node.value, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                             for k in node.value.keys):
            keys = {k.value: v for k, v in zip(node.value.keys, node.value.values)}
            chosen = [k for k, v in keys.items() if isinstance(v, ast.Name) and v.id == entry
                      or isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == entry]
            target = targets[0]
            if len(chosen) == 1 and len(keys) > 1:
                tables[target.id if isinstance(target, ast.Name) else target.attr] = (chosen[0], set(keys) - {chosen[0]})
    if len(tables) != 1:
        return None
    (table, (key, others)), = tables.items()
    picks = [n.slice for n in walk(tree) if isinstance(n, ast.Subscript) and (
        isinstance(n.value, ast.Name) and n.value.id == table or isinstance(n.value, ast.Attribute) and n.value.attr == table)]
    if len(picks) != 1:
        return None
    pick = picks[0]
    if isinstance(pick, ast.Constant) and pick.value == key:
        line = pick.lineno
    elif isinstance(pick, (ast.Name, ast.Attribute)):
        line = _string_line(tree, pick.id if isinstance(pick, ast.Name) else pick.attr)
    else:
        return None
    if line is None or key not in trails.source_lines[line - 1]:
        return None
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", trails.ref_source.lower()))
    if key.lower() in words or not any(o.lower() in words for o in others):
        return None
    code = trails.source_lines[line - 1].strip()
    name = pick.id if isinstance(pick, ast.Name) else pick.attr if isinstance(pick, ast.Attribute) else assigned(code)
    return Found(line, code, name or key, (), repr(key), "table_key")


def _table_function(found: Found, trails: _Trails, source: str) -> Found | None:
    """Values that first go wrong in a library function (``torch.sigmoid``) that the finder's line
    does not name: it calls something held elsewhere (``self.activation_func(...)``), and the function
    is written as the value of exactly one entry of a table of functions in the file (``{"silu":
    torch.sigmoid, "relu": torch.relu}``), a function the reference never runs: that entry is where
    the wrong function was chosen for its key, said at its line (reason "table_entry")."""
    import ast

    if found.reason not in ("values", "made") or not source:
        return None
    theirs = {func_name(st.func) for st in trails.ref}
    line_text = trails.source_lines[found.line - 1] if 0 < found.line <= len(trails.source_lines) else ""
    # run on the line, not named there, and never run by the reference (a function it does not use)
    ran = {f for f in (func_name(st.func) for st in trails.att if st.line == found.line)
           if f and f not in theirs and not re.search(rf"\b{re.escape(f)}\b", line_text)}
    if not ran:
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    entries = []
    for node in walk(tree):
        if isinstance(node, ast.Dict) and len(node.keys) > 1 and all(
                isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
            for k, v in zip(node.keys, node.values):
                if last_name(v) in ran and abs(v.lineno - found.line) > 1:
                    entries.append((k.value, v))
    if not entries:
        return _function_held(found, trails, tree, ran)
    if len(entries) != 1:
        return None
    key, value = entries[0]
    line = value.lineno
    return Found(line, trails.source_lines[line - 1].strip().rstrip(","), key, (), repr(key), "table_entry",
                 part=found.part)


def _function_held(found: Found, trails: _Trails, tree, ran: set[str]) -> Found | None:
    """The one-entry form of :func:`_table_function`: the function run where the values first go wrong,
    never run by the reference and not named on that line, is given to a name by exactly one
    assignment of the file (``act_fn: ClassVar = staticmethod(torch.sigmoid)``, ``self.act =
    torch.sigmoid``, ``ACT = F.gelu``): that choice of function is where it goes wrong, said at the
    assignment (reason "function_held")."""
    import ast

    def held(value) -> str | None:
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
                and value.func.id in ("staticmethod", "classmethod") and len(value.args) == 1:
            value = value.args[0]
        last = last_name(value)
        return last if last in ran else None

    holders = []
    for node in walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n.id if isinstance(n, ast.Name) else n.attr for n in targets if isinstance(n, (ast.Name, ast.Attribute))]
            function = held(node.value)
            if function and len(names) == 1 and abs(node.lineno - found.line) > 1:
                holders.append((node.lineno, names[0], function))
    if len(holders) != 1:
        return None
    line, name, function = holders[0]
    return Found(line, trails.source_lines[line - 1].strip(), name, (), function, "function_held", part=found.part)


def _none_unless(found: Found, trails: _Trails, source: str) -> Found | None:
    """A step left out by ``if mask is not None:`` inside a function whose ``mask`` the one call of
    it passes as a variable that is None unless a condition of the caller holds (``mask = None``,
    then ``if self.triangular_masking and layer_past is None: mask = ...``): the caller's condition
    is where it goes wrong, said at its line (the guard only honours what it is given). A call that
    passes a literal None there (a decode path's ``self._attend(q, k, v, None)``) is the line itself
    ("none_given")."""
    import ast

    if found.reason != "guarded":
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def innermost(line: int):
        around = [f for f in functions if f.lineno < line <= (f.end_lineno or f.lineno)]
        return min(around, key=lambda f: (f.end_lineno or f.lineno) - f.lineno) if around else None

    fn = innermost(found.line)
    guard = next((n for n in ast.walk(fn) if isinstance(n, ast.If) and n.lineno == found.line), None) if fn else None
    name = _guarded_name(guard.test) if guard is not None else None
    params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]] if fn else []
    if name is None or name not in params:
        return None
    callers = {s.stack[n - 1] for s in trails.att for n in range(1, len(s.stack or ()))
               if fn.lineno < s.stack[n] <= (fn.end_lineno or fn.lineno)
               and not fn.lineno <= s.stack[n - 1] <= (fn.end_lineno or fn.lineno)}

    def call_of(caller: int):
        """(the function holding the caller's line, its call of ``fn``, the argument given as ``name``)."""
        outer = innermost(caller)
        if outer is None:
            return None, None, None
        call = next((n for n in ast.walk(outer) if isinstance(n, ast.Call) and n.lineno <= caller <= (n.end_lineno or n.lineno)
                     and (getattr(n.func, "attr", None) or getattr(n.func, "id", None)) == fn.name), None)
        if call is None:
            return outer, None, None
        given = next((k.value for k in call.keywords if k.arg == name), None)
        if given is None:
            positional = params[1:] if isinstance(call.func, ast.Attribute) and params[:1] == ["self"] else params
            j = positional.index(name) if name in positional else -1
            given = call.args[j] if 0 <= j < len(call.args) else None
        return outer, call, given

    # a call that passes a literal None there (a decode path's `self._attend(q, k, v, None)`, the
    # prefill's call passing a mask): the only call that can leave the step out, said at its line
    literal = [c for c in sorted(callers) if isinstance(call_of(c)[2], ast.Constant) and call_of(c)[2].value is None]
    if len(literal) == 1:
        code = source.splitlines()[literal[0] - 1].strip()
        return Found(literal[0], code, name, (), "", "none_given", fn.name, part=found.part)
    if len(callers) != 1:
        return None
    caller = callers.pop()
    outer, call, given = call_of(caller)
    if outer is None or call is None:
        return None
    if not isinstance(given, ast.Name):
        return None
    var = given.id
    nones, conditional = [], set()
    ifs = [n for n in ast.walk(outer) if isinstance(n, ast.If)]
    for node in ast.walk(outer):
        if isinstance(node, ast.Assign) and node.lineno < call.lineno \
                and any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
            if isinstance(node.value, ast.Constant) and node.value.value is None:
                nones.append(node)
                continue
            holding = [i for i in ifs if i.lineno < node.lineno <= (i.end_lineno or i.lineno)
                       and not i.lineno <= call.lineno <= (i.end_lineno or i.lineno)]
            if not holding:
                return None  # (set unconditionally too: not left None by a condition)
            conditional.add(max(holding, key=lambda i: i.lineno).lineno)
    if len(nones) != 1 or len(conditional) != 1:
        return None
    line = conditional.pop()
    code = source.splitlines()[line - 1].strip()
    return Found(line, code, var, (), "", "none_unless", fn.name, part=found.part)


def _unused_for_none(found: Found, trails: _Trails, source: str) -> Found | None:
    """A value made and then used by nothing ("unused": ``band = sliding_window_mask(…)``) in a
    function that, on the run that failed, calls a helper of the file with a literal None for a
    parameter the helper guards (``if allowed is not None:``, left out): the value was meant for that
    argument, and the call that gives None instead is the line ("none_given"), when it is the only
    such call of the function that ran."""
    import ast

    if found.reason != "unused":
        return None
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    around = [f for f in functions.values() if f.lineno < found.line <= (f.end_lineno or f.lineno)]
    if not around:
        return None
    outer = min(around, key=lambda f: (f.end_lineno or f.lineno) - f.lineno)
    ran = {n for st in trails.att for n in (*(st.stack or ()), st.line)}
    hits = []
    for call in ast.walk(outer):
        if not isinstance(call, ast.Call) or call.lineno <= found.line or call.lineno not in ran:
            continue
        fn = functions.get(getattr(call.func, "attr", None) or getattr(call.func, "id", None))
        if fn is None or fn is outer:
            continue
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        positional = params[1:] if isinstance(call.func, ast.Attribute) and params[:1] == ["self"] else params
        for j, arg in enumerate(call.args):
            if not (isinstance(arg, ast.Constant) and arg.value is None) or j >= len(positional):
                continue
            name = positional[j]
            guards = [n for n in ast.walk(fn) if isinstance(n, ast.If) and _guarded_name(n.test) == name
                      and not any(b.lineno in ran for b in n.body)]
            if guards:
                hits.append((call.lineno, name, fn.name))
    if len(hits) != 1:
        return None
    line, name, helper = hits[0]
    return Found(line, source.splitlines()[line - 1].strip(), name, (), "", "none_given", helper, part=found.part)


def _buffer_made(found: Found, trails: _Trails, source: str) -> Found | None:
    """A wrong tensor "made" from a buffer the forward only reads (``self.mask[:T, :T]`` of a
    ``register_buffer("mask", torch.tril(…, diagonal=1))``): the line that made the buffer, in
    ``__init__``, which the trace never sees, when one line of the file sets it; of a
    register_buffer call written over several lines, the line of the tensor it is given."""
    import ast

    if found.reason != "made":
        return None
    tops = [s for s in trails.att if s.line == found.line and s.free and not s.parents]
    read = {m for s in tops for m in re.findall(r"self\.(\w+)\s*\[", s.code)}
    if len(tops) != 1 or len(read) != 1:
        return None
    attr = read.pop()
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer" \
                and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == attr:
            given = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "tensor"), node)
            lines.add(given.lineno)
    setter = attribute_line(source, attr)
    if setter is not None:
        lines.add(setter)
    if len(lines) != 1:
        return None
    line = lines.pop()
    code = source.splitlines()[line - 1].strip().rstrip(",") if line <= len(source.splitlines()) else ""
    return Found(line, code, f"self.{attr}", tuple(tops[0].shape), name_shape(tops[0].shape, trails.axes), "made")


def _raw_input(i: int, r: int, trails: _Trails, ref_source: str) -> Found | None:
    """Attempt step ``i`` takes a traced input as it came in where its counterpart ``r`` takes it
    changed first (a norm before the projections): the step that changes it is missing. Said of
    the attempt's line at the level where the reference changes it: the statement that passes the
    input on unchanged (``self.self_attn(hidden_states)`` where the reference calls
    ``self.attention(self.attn_norm(x))``), or the step's own line when the reference changes it
    in the same function."""
    step, ref = trails.att[i], trails.ref[r]
    if not step.inputs or not ref.parents or any(not trails.att[p].free and not trails.own(p) & set(ref.parents)
                                                 for p in step.parents):
        return None  # (other inputs made without the inputs, a mask, or what the counterpart takes there, may come along)
    changed = [q for q in ref.parents if set(step.inputs) & trails.src_up[q] and not set(step.inputs) & set(ref.inputs)]
    if len(changed) != 1:
        return None
    first = min(q for q in trails.up[changed[0]] | {changed[0]} if set(step.inputs) & set(trails.ref[q].inputs))
    made, used = list(trails.ref[changed[0]].stack or ()), list(ref.stack or ())
    stack = list(step.stack or [step.line])
    d = next((n for n, (a, b) in enumerate(zip(made, used)) if a != b), None)
    if d is None:
        if made != used or not _source_free(trails, changed[0], step.inputs):
            return None
        d = len(stack) - 1  # changed on the very statement that uses it (softmax(logits.masked_fill(…) / T)): this one
    functions = _function_spans(ref_source)
    if d > 0 and d < len(made) and _span_of(functions, made[d]) != _span_of(functions, used[d]):
        d -= 1  # changed inside a helper called on the statement that uses it: that statement
    line = stack[min(d, len(stack) - 1)]
    code = next((s.code for s in trails.att if s.line == line), "")
    # the reference's statement that changes it, at that level (a step of that line)
    ref_line = made[d] if d < len(made) else None  # (the attempt's stack may be deeper than the reference's)
    ref_code = next((s.code for s in trails.ref if s.line == ref_line), trails.ref[first].code)
    return Found(line, code, assigned(code), (), "", "input", trails.name_of(trails.ref, first), "", _code(ref_code))


def _source_free(trails: _Trails, q: int, inputs) -> bool:
    """Whether reference step ``q`` is made from the traced ``inputs`` through steps none of which the
    attempt holds (the input never appears in the attempt at any stage the reference makes)."""
    return not any(m in trails.up[q] | {q} for cands in trails.cands for m, _ in cands if set(inputs) & trails.src_up[m])


def _argument_copies(source: str) -> set[int]:
    """The lines of ``source`` that keep an argument of their function as it came in, under a
    name (``self.r = r``, ``scale = scale``)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    lines = set()
    for f in walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = {a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)}
            lines |= {n.lineno for n in walk(f) if isinstance(n, ast.Assign) and len(n.targets) == 1
                      and (isinstance(n.value, ast.Name) and n.value.id in args
                           or isinstance(n.value, ast.Tuple) and n.value.elts  # self.r, self.alpha = r, alpha
                           and all(isinstance(e, ast.Name) and e.id in args for e in n.value.elts))}
    return lines


def _argument_defaults(source: str) -> dict[int, list[tuple[int, float]]]:
    """For each line of ``source`` that keeps an argument as it came in (see
    :func:`_argument_copies`): the (line, value) of the numeric defaults of the arguments it keeps
    (``def __init__(self, dim, eps=1e-5)``, then ``self.eps = eps``)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[int, list[tuple[int, float]]] = {}
    for f in walk(tree):
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        numbers = {}
        for arg, d in defaults(f):
            try:
                value = ast.literal_eval(d)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                numbers[arg.arg] = (d.lineno, float(value))
        for n in walk(f):
            if isinstance(n, ast.Assign) and len(n.targets) == 1:
                kept = [n.value] if isinstance(n.value, ast.Name) else list(n.value.elts) if isinstance(n.value, ast.Tuple) else []
                found.setdefault(n.lineno, []).extend(numbers[e.id] for e in kept if isinstance(e, ast.Name) and e.id in numbers)
    return {k: v for k, v in found.items() if v}


def _aliases(source: str) -> set[frozenset[str]]:
    """The pairs of names ``source`` binds one to the other as they are (``loss = nll``)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return set()
    return {frozenset((t.id, node.value.id)) for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name) for t in node.targets if isinstance(t, ast.Name) and t.id != node.value.id}


def _function_spans(source: str) -> list[tuple[int, int]]:
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _span_of(spans: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    around = [s for s in spans if s[0] <= line <= s[1]]
    return max(around) if around else None


@functools.lru_cache(maxsize=8)
def _objects(source: str) -> dict[str, tuple[int, int]]:
    """The top-level classes and functions of ``source``: name -> (first line, last line)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    return {n.name: (n.lineno, n.end_lineno or n.lineno) for n in tree.body
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def _object_at(objects: dict[str, tuple[int, int]], line: int, among: set[str]) -> str:
    """The name of the object of ``among`` whose lines hold ``line``, or ""."""
    return next((name for name in among if objects[name][0] <= line <= objects[name][1]), "")


def _function_at(source: str, line: int) -> str:
    """The name of the innermost function (or class, for a method) of ``source`` holding ``line``."""
    import ast

    around = [n for n in _definitions(source) if n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return ""
    inner = max(around, key=lambda n: n.lineno)
    classes = [n for n in around if isinstance(n, ast.ClassDef) and n is not inner]
    if inner.name in ("forward", "__call__") and classes:
        return max(classes, key=lambda n: n.lineno).name
    return inner.name


@functools.lru_cache(maxsize=8)
def _definitions(source: str) -> tuple:
    """The functions and classes of ``source``, nested ones too (``ast.walk``'s order): asked of every
    step a divergence looks at (:func:`_function_at`), so found once per source."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))


def _caller_of_return(s: _Search, step: Step) -> tuple[int, str] | None:
    """The line of the file that called the helper whose ``return`` statement made ``step``
    (followed up while that line is itself a helper's ``return``), with its code; None when the
    step is not made on a return line of a function the file calls."""
    lines = s.source.splitlines()
    stack = list(step.stack or [step.line])
    found = None
    while len(stack) > 1 and 0 < stack[-1] <= len(lines) and lines[stack[-1] - 1].lstrip().startswith("return "):
        stack.pop()
        found = stack[-1]
    if found is None:
        return None
    code = next((a.code for a in s.att if a.line == found), "") or lines[found - 1].strip()
    return found, code


def _return_after(source: str, step: Step) -> tuple[int, str] | None:
    """The first ``return`` of the function that ran ``step`` (its outermost frame in the file), at
    or after the line of that frame: (its line, its code as written on one line)."""
    import ast

    line = (step.stack or [step.line])[0]
    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    around = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return None
    function = max(around, key=lambda n: n.lineno)
    returns = sorted(n.lineno for n in ast.walk(function) if isinstance(n, ast.Return) and n.lineno >= line)
    if not returns:
        return None
    return returns[0], source.splitlines()[returns[0] - 1].strip()


# --- the rules: where the first wrong step's story is told ----------------------------------------
#
# The attempt's steps are looked at in order. For each, the rules of STEP_RULES are tried in turn:
# the first that answers says it (a Found: the line to show; NEXT_STEP: this step is not where it
# goes wrong, try the next one; NO_LINE: it goes wrong here but no line can be said). When no step
# is the story, the rules of END_RULES look at the trails as a whole.

NEXT_STEP = "next step"
_ELEMENTWISE = {"mul", "add", "sub", "div", "mul_", "add_", "sub_", "div_"}
_PICKS_ONE = {"max", "min", "maximum", "minimum"}  # what keeps one of the entries it compares
NO_LINE = "no line"


class _Search:
    """What the rules share: the two trails lined up, what each attempt step is apart from its
    values (a constant, a copy of a matched step, a wrong named output, what uses it), and the
    :class:`~attnprep.grader.explain.Explainer` that reads the files, made when first asked."""

    def __init__(self, trails: _Trails, axes: dict[str, int], raised_at: int | None,
                 outputs: tuple[dict[str, int], dict[str, int]] | None, source: str, ref_source: str):
        self.trails, self.axes, self.raised_at, self.outputs = trails, axes, raised_at, outputs
        self.source, self.ref_source = source, ref_source
        self.att, self.ref, self.matcher, self.matched = trails.att, trails.ref, trails.matcher, trails.matched
        self.children: dict[int, list[int]] = {}
        for i, step in enumerate(self.att):
            for p in step.parents:
                self.children.setdefault(p, []).append(i)
        self.constant = [is_constant(tensor_of(s)) for s in self.att]
        self.copied = self._copies()
        self.wrong_outputs = _wrong_outputs(self.att, self.ref, self.matched, outputs, trails.near)
        self.output_steps = set((outputs or ({}, {}))[0].values())
        self._explainer: Explainer | None = None
        self.ref_rotates: bool | None = None  # the reference rotates by tables that are not constant (see _zero_angles)

    def _copies(self) -> list[bool]:
        """Copies of a matched tensor along a broadcast axis (repeat_kv's expand + reshape of MQA's
        one K/V head, which the reference leaves to broadcasting): no values of their own to be
        wrong. A copy merged into a shape the reference has and matching nothing of it is no copy
        (the copies in the wrong order, einops' "b (r g) t d" for "b (g r) t d"), unless it is the
        one head it copies, repeated along an axis (MQA's k repeated over the heads)."""
        attempt, matched = self.att, self.matched
        copied = [False] * len(attempt)
        copy_of: dict[int, int] = {}  # a copy -> the matched step it copies
        ref_shapes = {tuple(r.shape) for r in self.ref}
        for i, step in enumerate(attempt):
            if matched[i] is None and not step.free and len(step.parents) == 1 and 0 <= step.parents[0] < i:
                p = step.parents[0]
                name = func_name(step.func)
                if copied[p] and name in LAYOUTS and (tuple(step.shape) not in ref_shapes
                                                        or _copies(tensor_of(step), tensor_of(attempt[copy_of[p]]))):
                    copied[i], copy_of[i] = True, copy_of[p]
                elif name in COPIES and matched[p] is not None and _broadcast(attempt[p].shape, step.shape):
                    copied[i], copy_of[i] = True, p
        return copied

    @property
    def explainer(self) -> Explainer:
        if self._explainer is None:
            self._explainer = Explainer(self.att, self.ref, self.matcher, self.matched, self.axes, self.source,
                                        self.ref_source)
        return self._explainer

    def descendants(self, i: int) -> set[int]:
        """The attempt's steps computed from step ``i``'s result, directly or through others."""
        later, todo = set(), list(self.children.get(i, []))
        while todo:
            j = todo.pop()
            if j not in later:
                later.add(j)
                todo.extend(self.children.get(j, []))
        return later

    def leads_nowhere(self, i: int) -> bool:
        """Nothing computed from step ``i`` reaches an output of the run: every use of it ends in a
        value the file drops (a helper shared by two objects computes ``mean(x²)`` for both, and
        only one of them uses it). Said only in the run of one object of the exercise (RMSNorm,
        then LayerNorm), whose output step is known, and when the run finished; a step that changes
        a tensor in place (``index_add_``, ``out[i] = …``) counts as reaching one. (Not in a run of
        one object: what a loop writes into a tensor made before it, ``dk[b, h] = …``, may leave no
        step that links it to the output.)"""
        if self.raised_at is not None or not self.output_steps or not self.trails.att_part[i].startswith(OBJECT):
            return False
        last = len(self.att) - 1
        for j in self.descendants(i) | {i}:
            raw = str(self.att[j].func)
            if j in self.output_steps or j == last or raw.strip("_") in ("setitem", "copy") or (
                    raw.endswith("_") and not raw.endswith("__")) or raw in _IN_PLACE_DUNDERS:
                return False
        return True

    def recovers(self, i: int) -> bool:
        """Some step computed from step ``i`` matches the reference again (a constant does not
        count: any wrong input gives it; nor does a max or min, which keeps one entry and drops the
        ones a wrong mask changed; nor a step that holds what another of its inputs, not made from
        ``i``, holds: ``torch.where(valid, nll, 0)`` with a mask that keeps every entry passes
        ``nll`` through, the mistake in ``valid`` is not undone, it changed nothing there; nor a
        test of the values, ``torch.isinf(m)``, that matches no test of the reference's: its true /
        false flags match some 0 / 1 entries of a value of the reference by chance)."""
        later = self.descendants(i)
        for j in later:
            m = self.matched[j]
            if m is None or self.constant[j] or j in self.wrong_outputs or func_name(self.att[j].func) in _PICKS_ONE or (
                    self.att[j].dtype == "bool" and self.ref[m[0]].dtype != "bool"):
                continue
            if not any(q != i and q not in later and self.matched[q] is not None and (
                    self.matched[q][0] == m[0] or _identical(self.att[q], self.att[j])) for q in self.att[j].parents):
                return True
        return False

    def cause(self, j: int) -> Found | None:
        """What :mod:`.explain` finds behind wrong step ``j``: not its *missing* nor its wrong
        numbers, which the lined-up rules say their own way ("incomplete", "scalar")."""
        w = self.explainer
        found = w.culprit(j)
        if found is not None and found.reason in ("number", "number_literal"):
            found = None
        end = w.run_end(j)  # (a factor only where the line scales by a number: `* scale`)
        return found or (w.scaled(end) if _scaling(self.att[end]) is not None else None) or w.skipped(j)

    def said(self, k: int, reason: str) -> Found:
        """Attempt step ``k``'s own line, found for ``reason``."""
        step = self.att[k]
        return Found(step.line, step.code, self.trails.name_of(self.att, k), tuple(step.shape),
                     name_shape(step.shape, self.axes), reason)


class _Here:
    """The attempt step the rules look at, with what they ask of it worked out once."""

    def __init__(self, search: _Search, i: int):
        self.search, self.i, self.step = search, i, search.att[i]

    @functools.cached_property
    def same(self) -> list[int]:
        """The reference steps holding the same values in any layout (in the same object)."""
        same = self.search.matcher.same_values(tensor_of(self.step), self.step.dtype)
        return [r for r in same if self.search.trails.same_object(self.i, r)]

    @functools.cached_property
    def counterpart(self) -> int | None:
        return self.search.trails.counterpart(self.i)

    @functools.cached_property
    def fine(self) -> set[int]:
        """The inputs that are what the reference feeds the counterpart: their role is right,
        whatever their name (only when the counterpart takes in every input as it is: with roles
        swapped, the step lined up may well be another one, attn @ v for a q that holds v)."""
        s, r, step = self.search, self.counterpart, self.step
        if r is not None and set(step.inputs) == set(s.ref[r].inputs) and all(
                s.trails.own(p) & set(s.ref[r].parents) for p in step.parents if not s.att[p].free):
            return set(step.parents)
        return set()


def _output_holds_another_value(s: _Search, h: _Here):
    """A named output that holds another value of the reference's (the keys returned as the
    values, the latent cached before its norm) is wrong where that value is made: "short" when it
    holds an earlier stage of that output, else "output"."""
    i, step = h.i, h.step
    if i not in s.wrong_outputs or s.matched[i] is None or step.free:
        return None
    name, r = s.wrong_outputs[i]
    short = s.matched[i][0] in _ancestors(r, s.ref)
    while func_name(step.func) in LAYOUTS | CASTS and _caller_of_return(s, step) is None:
        # only laid out here (k, v = k.transpose(1, 2), …): made by the step it views, on its line
        ps = [q for q in step.parents if not s.att[q].free]
        if len(ps) != 1 or s.matched[ps[0]] is None or s.matched[ps[0]][0] != s.matched[h.i][0] or \
                (s.att[ps[0]].stack or [])[:-1] != (step.stack or [])[:-1]:
            break  # (within the function that lays it out)
        step = s.att[ps[0]]
    line, code = step.line, step.code
    part = s.trails.ref_part[r]
    returning = [k for k, label in enumerate(s.trails.att_part) if label == part]
    if short:
        later = _made_right_not_given(s, i, r, name)
        if later is not None:
            return later
    if short and _laid_out_to(s.matched[i][0], r, s.ref) and s.recovers(i) and _return_after(s.source, h.step):
        # the right numbers, which the attempt itself goes on to use right (its other results match),
        # short of the reference's output by a transpose or view only: given back in its own layout
        # by the return statement, where the output's layout is the contract's choice
        line, code = _return_after(s.source, h.step)
        return Found(line, code, assigned(step.code), tuple(step.shape), name_shape(step.shape, s.axes),
                     "returned_layout", name, name_shape(s.ref[r].shape, s.axes), s.ref[r].code)
    if part and s.trails.att_part[i] != part and returning:
        # made by an earlier call and given back as it came in by the call that returns it (the
        # cache a decode step was given): that call's return statement
        line, code = _return_after(s.source, s.att[returning[-1]]) or (line, code)
    elif any(n != name and m == s.matched[i][0] for n, m in (s.outputs or ({}, {}))[1].items()):
        # what the reference returns under another name (the keys as the values): made right, given
        # back in the wrong place, by the return statement
        line, code = _return_after(s.source, step) or (line, code)
    else:
        # made on a helper's return line (HF's repeat_kv): the helper does what it is asked, the
        # call that takes its result for this output is where it goes wrong
        line, code = _caller_of_return(s, step) or (line, code)
    return Found(line, code, assigned(step.code), tuple(step.shape), name_shape(step.shape, s.axes),
                 "short" if short else "output", name, name_shape(s.ref[r].shape, s.axes), s.ref[r].code)


MAX_LATER_ASKED = 64  # steps made from a short output asked whether they hold the output's right value


def _made_right_not_given(s: _Search, i: int, r: int, name: str) -> Found | None:
    """The output (step ``i``) holds an earlier stage of the reference's output ``r``, and the
    attempt goes on to compute ``r``'s own values from it, in the same call, only not as that
    output (the latent cached as it comes, its norm applied afterwards to the whole cache): the
    statement, in the function that gives the outputs back, where those right values are made
    is where they should have been kept. None when no such step."""
    part = s.trails.att_part[i]
    want = tuple(s.ref[r].shape)
    asked = 0
    for j in sorted(s.descendants(i)):
        st = s.att[j]
        if s.trails.att_part[j] != part or st.free or tuple(st.shape) != want or st.dtype != s.ref[r].dtype:
            continue
        t = tensor_of(st)
        if t is None:
            continue
        asked += 1
        if asked > MAX_LATER_ASKED:
            return None
        if r not in s.trails.matcher.same_values(t, st.dtype):
            continue
        # the frame of the function that returns the outputs: the depth the stacks of the call's
        # other outputs share with this step's
        others = [s.att[k].stack or () for n, k in (s.outputs or ({}, {}))[0].items()
                  if n != name and 0 <= k < len(s.att) and s.trails.att_part[k] == part]
        stack = st.stack or (st.line,)
        depth = min((next((n for n, (a, b) in enumerate(zip(o, stack)) if a != b), min(len(o), len(stack)))
                     for o in others), default=0)
        line = stack[min(depth, len(stack) - 1)]
        return Found(line, "", assigned(st.code) if line == st.line else "", tuple(st.shape),
                     name_shape(st.shape, s.axes), "kept_elsewhere", name, name_shape(s.ref[r].shape, s.axes),
                     s.ref[r].code)
    return None


def _laid_out_to(a: int, r: int, ref: list[Step]) -> bool:
    """Reference step ``r`` is made from step ``a`` by layout steps alone (a transpose, a view)."""
    while r != a:
        step = ref[r]
        if func_name(step.func) not in LAYOUTS or len(step.parents) != 1:
            return False
        r = step.parents[0]
    return True


def _wrong_start(s: _Search, h: _Here):
    """A step that takes in a start value made without the inputs (a running max started at 0 where
    the reference starts it at -inf, :meth:`~attnprep.grader.explain.Explainer.culprit`'s "start"):
    the line that sets it, even when later steps happen to match again (the max of the first
    block is positive on most rows)."""
    i, step = h.i, h.step
    if not s.source or step.free or s.matched[i] is not None or s.copied[i] or tensor_of(step) is None:
        return None
    starts = {s.att[p].line for p in step.parents if s.att[p].free and (s.constant[p] or math.prod(s.att[p].shape) == 1)}
    if not starts:
        return None
    found = s.explainer.culprit(i)  # "start", or the wrong number on the line that makes the start value
    if found is not None and (found.reason == "start" or found.line in starts):
        return found
    return _start_that_changes(s, i)


# what a running value is combined with, element by element, whichever side it is on
_COMBINES = {"maximum": torch.maximum, "minimum": torch.minimum, "fmax": torch.fmax, "fmin": torch.fmin,
             "add": torch.add, "mul": torch.mul}


def _start_that_changes(s: _Search, i: int) -> Found | None:
    """Step ``i`` combines a start value made without the inputs (one number: ``m = torch.tensor(0.0)``)
    with a computed value, where the reference starts the same combination (``torch.maximum(m, …)``)
    at another number, and the result differs from what the reference's start gives: the start is
    wrong, on the line that sets it, when no counterpart lines the step up (a row at a time, one
    number per row, where the reference keeps a tensor of rows). A start that changes nothing here
    (-1e30 for -inf) is no story."""
    step = s.att[i]
    op = _COMBINES.get(func_name(step.func))
    if op is None or len(step.parents) != 2 or step.scalars:
        return None
    for p in step.parents:
        start, other = s.att[p], s.att[step.parents[0] if p == step.parents[1] else step.parents[1]]
        t, o, made = tensor_of(start), tensor_of(other), tensor_of(step)
        if not start.free or other.free or start.line == step.line or not is_constant(t) or o is None or made is None:
            continue
        value = float(t.flatten()[0])
        theirs = [(q, float(tensor_of(s.ref[q]).flatten()[0])) for r in s.ref if func_name(r.func) == func_name(step.func)
                  for q in r.parents if s.ref[q].free and is_constant(tensor_of(s.ref[q]))]
        for q, ref_value in theirs:
            if _near(value, ref_value):
                continue
            try:
                would = op(torch.full_like(t, ref_value), o)
            except RuntimeError:
                continue
            if would.shape == made.shape and not close(made, would):
                return Found(start.line, start.code, assigned(start.code), tuple(start.shape), f"{value:g}", "start",
                             assigned(s.ref[q].code), f"{ref_value:g}", s.ref[q].code)
    return None


# ``x += y`` and the like: a step that changes a tensor in place (see _Search.leads_nowhere)
_IN_PLACE_DUNDERS = frozenset(f"__i{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "div", "and", "or",
                                                       "xor", "pow", "matmul", "lshift", "rshift", "mod"))


LAYERS = frozenset({"linear", "conv1d", "bilinear"})  # what a module's layer computes from its input


def _layer_left_out(s: _Search, i: int) -> bool:
    """Whether attempt step ``i``, an input only rearranged (``x.view(B, T, H, D)``, then
    ``.transpose(1, 2)``), is computed with where the reference has a layer's output: every
    reference step that takes that input is a layer (``self.q_proj(x)``), and what the attempt
    computes from the rearranged input, past further rearrangements, is no layer (the scores'
    matmul). The layer is left out on this line: it is where it goes wrong, not the product that
    first holds other numbers (``q = x.view(…)`` for ``q = self.q_proj(x).view(…)``)."""
    roots, todo, seen = set(), [i], set()
    while todo:  # the traced inputs the rearrangements start from
        j = todo.pop()
        if j in seen:
            continue
        seen.add(j)
        roots |= set(s.att[j].inputs) if not s.att[j].parents else set()
        todo.extend(s.att[j].parents)
    taking = [r for r in s.ref if set(r.inputs) & roots]
    if not roots or not taking or any(func_name(r.func) not in LAYERS for r in taking):
        return False
    users, todo, seen = [], list(s.children.get(i, [])), set()
    while todo:  # what is computed from it, past its further rearrangements
        c = todo.pop()
        if c in seen:
            continue
        seen.add(c)
        if func_name(s.att[c].func) in LAYOUTS | CASTS:
            todo.extend(s.children.get(c, []))
        else:
            users.append(c)
    return bool(users) and not any(func_name(s.att[c].func) in LAYERS for c in users)


def _not_the_story(s: _Search, h: _Here):
    """Skip a step that cannot be where it goes wrong: made without the inputs, matching the
    reference, a copy of a matched step, without values, or one the attempt gets back on track
    from (an output that differs from the reference's is wrong for good, whatever is made from it
    later: a cache in the wrong order the next call's attention happens not to mind); an input
    only rearranged (what is computed from it tells whether that layout is right); a step nothing
    uses (the indices torch.max returns beside the values)."""
    i, step = h.i, h.step
    output = i in s.wrong_outputs
    if step.free or s.matched[i] is not None or s.copied[i] or tensor_of(step) is None or (not output and s.recovers(i)):
        return NEXT_STEP
    if not output and (_rearranged_input(step) or _rearranged_chain(s.att, i)) and not (
            func_name(step.func) not in LAYOUTS | CASTS
            and any(s.att[c].dtype == "bool" or not s.att[c].shape for c in s.children.get(i, []))) \
            and not _layer_left_out(s, i):
        return NEXT_STEP  # (a part picked to be tested, `attention_mask[:, -1].all()`, is where a guard starts)
    if i not in s.children and i != len(s.att) - 1 and i not in s.output_steps:
        return NEXT_STEP
    if not output and s.leads_nowhere(i):
        return NEXT_STEP  # (nor a chain of steps nothing uses in the end)
    if not output and s.trails.net_mask(i):
        return NEXT_STEP  # (the masks joined into one the reference never makes, right: what uses it may not be)
    return None



TRIG = frozenset({"cos", "sin", "polar"})  # what turns angles into a rotation's table
_TABLE_WORDS = re.compile(r"\b(?:cos|sin)")  # a rotation's table read from one made before the call (cos_sin_cache)


def _parameters_at(source: str, line: int) -> set[str]:
    """The parameters of the innermost function of ``source`` holding ``line``."""
    import ast

    around = [n for n in _definitions(source) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= line <= (n.end_lineno or n.lineno)]
    if not around:
        return set()
    f = max(around, key=lambda n: n.lineno).args
    return {a.arg for a in (*f.posonlyargs, *f.args, *f.kwonlyargs)}


def _zero_angles(s: _Search, h: _Here):
    """A wrong step computed from a rotation that changed nothing: its table made without the
    inputs is constant (cos 1, sin 0) because the angles are all 0, from positions that are all 0
    in this call (a decode step's one token rotated at position 0, where the reference rotates it at
    the positions reached so far; the reference's own tables are not constant). The step reads right
    values (the unrotated ones, which the reference has too), so no value is wrong before it: the
    line that made the positions is said ("zero_positions"), or, when they are made inside a helper
    from one of its parameters (``arange(start, start + T)``), the line that calls that helper
    (``rope(k_pe, theta)``, ``start`` left at its default)."""
    if h.step.free or s.matched[h.i] is not None or tensor_of(h.step) is None:
        return None
    if s.ref_rotates is None:  # (asked once per search)
        s.ref_rotates = any(func_name(r.func) in TRIG and r.free and not is_constant(tensor_of(r)) for r in s.ref)
    if not s.ref_rotates:
        return None
    att, seen, todo, tables = s.att, set(), list(h.step.parents), []
    while todo and len(seen) < 64:
        q = todo.pop()
        if q in seen or not 0 <= q < len(att):
            continue
        seen.add(q)
        st = att[q]
        if st.free:
            if s.constant[q] and (func_name(st.func) in TRIG or _TABLE_WORDS.search(st.code)) and st.dtype in FLOATS \
                    and (t := tensor_of(st)) is not None and float(t.flatten()[0]) in (0.0, 1.0):
                tables.append(q)  # (cos 1, sin 0: computed here, or read from a table made before the call)
            continue
        todo.extend(st.parents)
    if not tables:
        return None
    zeros, up = set(), set()
    for c in tables:  # up what the table is made from (angles, a lookup) to what is all 0 there
        todo = list(att[c].parents)
        while todo and len(up) < 64:
            q = todo.pop()
            if q in up or not 0 <= q < len(att) or not att[q].free:
                continue
            up.add(q)
            todo.extend(att[q].parents)
            t = tensor_of(att[q])
            if t is not None and t.numel() and not bool(t.abs().max() > 0):
                zeros.add(q)
    roots = sorted(q for q in zeros if not any(p in zeros for p in att[q].parents))
    if not roots or len({att[q].line for q in roots}) != 1:
        return None
    z = att[roots[0]]
    stack = list(z.stack or ())
    params = _parameters_at(s.source, z.line) if s.source and len(stack) >= 2 else set()
    names = {x.name for x in z.scalars} & params
    if names:
        level = len(stack) - 2
        while level > 0 and (through := _handed_on(s.source, stack[level], stack[level + 1], names)):
            names = through  # (the caller hands its own parameter on: the call that gives it is further out)
            level -= 1
        line = stack[level]
        code = s.trails.source_lines[line - 1].strip() if 0 < line <= len(s.trails.source_lines) else ""
        return Found(line, code, assigned(code), tuple(z.shape), name_shape(z.shape, s.axes), "zero_positions")
    return s.said(roots[0], "zero_positions")


def _handed_on(source: str, line: int, inner: int, names: set[str]) -> set[str]:
    """The parameters of the function holding ``line`` that every call on ``line`` of the function
    holding ``inner`` passes on, by the same name, as one of ``names`` (``self._compute_cos_sin(start,
    …)`` inside ``forward(self, x, start=0)``); empty when a call leaves one of them out."""
    import ast

    around = [n for n in _definitions(source) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
              and n.lineno <= inner <= (n.end_lineno or n.lineno)]
    if not around:
        return set()
    callee = max(around, key=lambda n: n.lineno).name
    calls = [n for n in _definitions_calls(source) if n.lineno <= line <= (n.end_lineno or n.lineno)
             and (isinstance(n.func, ast.Name) and n.func.id == callee or isinstance(n.func, ast.Attribute) and n.func.attr == callee)]
    if not calls:
        return set()
    passed = set(names)
    for call in calls:
        given = {a.id for a in call.args if isinstance(a, ast.Name)} | {k.value.id for k in call.keywords
                                                                      if isinstance(k.value, ast.Name) and k.arg in names}
        passed &= given
    return passed & _parameters_at(source, line)


@functools.lru_cache(maxsize=8)
def _definitions_calls(source: str) -> tuple:
    """Every call of ``source``."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    return tuple(n for n in walk(tree) if isinstance(n, ast.Call))


def _returned_ahead_input(s: _Search, h: _Here):
    """Wrong values made from what a function of the file returns (through its caller's views) when
    that function gives back a later stage than the reference's function of that name (the blocked
    positions where the contract's mask returns the allowed ones): its ``return`` line, see
    :meth:`_Trails.ahead_of_return`; the step that uses it does what the contract says."""
    todo, seen = list(h.step.parents), set()
    while todo:
        p = todo.pop()
        if p in seen or len(seen) > 8 or s.matched[p] is None:
            continue
        seen.add(p)
        found = s.trails.ahead_of_return(p, s.matched[p][0])
        if found is not None:
            return found
        if func_name(s.att[p].func) in LAYOUTS | CASTS | {"getitem", "__getitem__"}:
            todo.extend(s.att[p].parents)
    return None


def _wrong_argument(s: _Search, h: _Here):
    """Wrong values made inside a call of a function that the reference defines too (its
    ``apply_rope``), from an argument the reference never gives its function of that name, in any
    layout (the values rotated where the reference rotates the keys): the line of that call."""
    step = h.step
    stack = list(step.stack or ())
    if not s.source or not s.trails.ref_source or len(stack) < 2:
        return None
    name = _function_at(s.source, step.line)
    spans = _function_spans(s.source)
    span = _span_of(spans, step.line)
    ref_in = {q for q, r in enumerate(s.ref) if len(r.stack or ()) >= 2 and _function_at(s.trails.ref_source, r.line) == name}
    if not name or not ref_in or span is None:
        return None
    given = {x for q in ref_in for x in s.ref[q].parents if x not in ref_in}  # what the reference's function is given
    for p in step.parents:
        parent = s.att[p]
        if parent.free or not s.trails.own(p) or span[0] <= parent.line <= span[1]:
            continue
        held = {m for m, _ in s.trails.cands[p]}
        if held & given or not given or any(held & s.trails.up[x] for x in given):
            continue  # (an earlier stage of what it is given, the mask not applied yet: a step left out, not the argument)
        at = next((k for k in range(len(stack) - 1) if _span_of(spans, stack[k + 1]) == span), None)
        if at is None:
            return None
        line = stack[at]
        handed = _handed_another(s, h)  # the call hands it one of the reference's values meant for another
        if handed is not None and handed.line == line:
            return handed
        code = next((a.code for a in s.att if a.line == line), "") or s.source.splitlines()[line - 1].strip()
        return Found(line, code, s.trails.name_of(s.att, p), tuple(parent.shape), name_shape(parent.shape, s.axes), "values")
    return None


def _empty_slice(s: _Search, h: _Here):
    """An empty slice (``q[:, :, i:i - block]``) where the reference never has one: nothing after
    it can match, this line is the story."""
    if tensor_of(h.step).numel() == 0 and all(math.prod(r.shape) for r in s.ref):
        return s.said(h.i, "values")
    return None


def _raw_input_rule(s: _Search, h: _Here):
    """Wrong values from a traced input taken as it came in, where the counterpart takes it changed
    first (a norm before the projections): see :func:`_raw_input`."""
    if h.counterpart is None or h.same:
        return None
    found = _raw_input(h.i, h.counterpart, s.trails, s.ref_source)
    if found is None or found.line != h.step.line or not s.source:
        return found
    # changed in the same function in the reference: a statement of the file there that leaves the
    # input as it was (`logits = logits`, where the reference divides by the temperature) is its place
    src = s.explainer.src
    read = set(re.findall(r"[A-Za-z_]\w*", h.step.code))
    span = next(((a, b) for a, b, _, _ in src.functions if a <= h.step.line <= b), None)
    noops = [n for n, names in sorted(src.noops.items()) if span and span[0] < n < h.step.line and names & read]
    if len(noops) == 1:
        name = sorted(src.noops[noops[0]] & read)[0]
        return dataclasses.replace(found, line=noops[0], code=src.code(noops[0]), reason="noop", name=name,
                                   shape=tuple(h.step.shape), named=name_shape(h.step.shape, s.axes))
    return found


def _lined_up(s: _Search, h: _Here):
    """Lined up with the reference's step that does the same to the same inputs, the difference may
    lie in what it was given (:meth:`_Trails.explain`: an input one step short, a wrong mask, a wrong
    number). The right numbers in a wrong layout say more than a missing step, unless a wrong
    number made it. Said better, where the files show it: bare wrong values by a cause on another
    line; a step left out by an ``if`` or a loop bound ("guarded"), or written as a statement that
    does nothing (``q = q``, ``pass``: "noop"); a line's step made up for later by a wrong factor
    (the scores scaled, not q)."""
    if h.counterpart is None:
        return None
    explained = s.trails.explain(h.i, h.counterpart)
    if explained is None or (h.same and explained.reason != "scalar"):
        return None
    if explained.reason in ("incomplete", "skipped", "input"):
        moved = _scale_moved(s, h)
        if moved is not None:
            return moved
    if not s.source:
        return explained
    if explained.reason == "values":
        at = locate(explained, s.att, s.ref, s.matcher)
        better = s.cause(at) if at is not None else None
        if better is not None:
            return better
    if explained.reason in ("incomplete", "skipped"):
        guarded = s.explainer.skipped(h.i)
        if guarded is not None and guarded.reason == "guarded":
            return guarded
    if explained.reason in ("skipped", "input", "incomplete"):
        handed = _handed_another(s, h)
        if handed is not None:
            return handed
    if explained.reason == "skipped":
        noop = s.explainer.noop_between(explained, h.i)
        if noop is not None:
            return noop
        at = locate(explained, s.att, s.ref, s.matcher)
        line = _call_line(s.att[at], h.step) if at is not None and "," not in explained.name else None
        back = _passes_through(s.source, explained.name, explained.line, line) if line else None
        if back is not None:  # handed to a function of the file that gives it back untouched
            return dataclasses.replace(explained, line=back[0], code=back[1], reason="noop")
    if explained.reason == "incomplete":
        renamed = _renamed_as_is(s, h.i)  # (the ~ the reference takes on its mask, left out under a new name)
        if renamed is not None:
            return renamed
        end = s.explainer.run_end(h.i)
        factor = s.explainer.scaled(end) if end != h.i else None
        if factor is not None:
            return factor
        unscaled = _unscaled_pick(s, h, explained)
        if unscaled is not None:
            return unscaled
    return explained


def _handed_another(s: _Search, h: _Here) -> Found | None:
    """Step ``h`` runs inside a helper of the file and does what a step of the reference's helper does
    (the same function, its other inputs the same values), but takes from the caller a value of the
    reference (``v``) where that step takes another one the reference makes apart from it (``k``:
    neither is a stage of the other), which the attempt makes too and never hands to that helper:
    the call that hands the helper the one for the other (``v = rope(v, theta)`` where ``k = rope(k,
    theta)`` belongs) is where it goes wrong ("handed")."""
    step = h.step
    if len(step.stack) < 2:
        return None
    name = func_name(step.func)
    fed = None
    for p in step.parents:
        given = s.att[p]
        if s.matched[p] is None or given.free or not given.stack \
                or len(given.stack) >= len(step.stack) or given.stack[:-1] != step.stack[:len(given.stack) - 1]:
            continue  # (made in the caller's frame, the helper called from it)
        m = s.matched[p][0]
        others = [s.matched[o] for o in step.parents if o != p]
        if any(o is None for o in others):
            continue
        for r, ref in enumerate(s.ref):
            if func_name(ref.func) != name or sorted(ref.shape) != sorted(step.shape) \
                    or not all(o[0] in ref.parents for o in others) or m in ref.parents:
                continue
            for q in ref.parents:
                if s.ref[q].free or sorted(s.ref[q].shape) != sorted(given.shape) or q in s.trails.up[m] or m in s.trails.up[q] \
                        or len(s.ref[q].stack) >= len(ref.stack) or any(q == o[0] for o in others):
                    continue  # (a stage of the other is one taken short or late, said as such)
                laid = {q} | {x for x in s.ref[q].parents if func_name(s.ref[q].func) in LAYOUTS}  # (k before its transpose)
                twins = [a for a in range(len(s.att)) if s.matched[a] is not None and s.matched[a][0] in laid
                         and len(s.att[a].stack) <= len(given.stack)]
                if fed is None:  # what the steps of this line of the helper are made from, in any of its calls
                    fed = set().union(*(_ancestors(j, s.att) for j in range(len(s.att))
                                        if s.att[j].line == step.line and s.att[j].stack[:-1] == step.stack[:-1]))
                if not twins or any(a in fed for a in twins):
                    continue  # (the attempt hands it that one too)
                line = step.stack[len(given.stack) - 1]
                if not 0 < line <= len(s.trails.source_lines):
                    continue
                return Found(line, s.trails.source_lines[line - 1].strip(), s.trails.name_of(s.att, p), tuple(given.shape),
                             name_shape(given.shape, s.axes), "handed", s.trails.name_of(s.ref, q),
                             name_shape(s.ref[q].shape, s.axes), _code(ref.code))
    return None


_CARRY_FACTOR = LAYOUTS | CASTS | {"getitem", "matmul", "einsum", "bmm", "mm"}  # f(c·x) = c·f(x)


def _scale_moved(s: _Search, h: _Here) -> Found | None:
    """A scaling by a number (``q * scale``) lined up with the reference's scaling of a later stage
    (``scores / math.sqrt(D)``): where the scale goes is a convention (q, k or the scores), so the
    input taken before the reference's steps is no step missing. When what it makes, through steps
    that carry a factor (a matmul, a layout), is a reference value times a constant, its number is
    the wrong one: said where that number got its value, or at the scaling ("scalar")."""
    a = _scaling(h.step)
    if a is None or _scaling(s.ref[h.counterpart]) is None:
        return None
    todo, seen = [h.i], set()
    while todo:
        for c in s.children.get(todo.pop(0), []):
            if c in seen or len(seen) > 40:
                continue
            seen.add(c)
            if func_name(s.att[c].func) not in _CARRY_FACTOR:
                continue
            times = _times_reference(s, c, h.counterpart)
            if times is None:
                todo.append(c)
                continue
            factor, r = times
            if s.trails._base2() and _log2e(factor):
                return None
            number, step = h.step.scalars[0], h.step
            right = _number(number.value / factor)
            if number.name and number.origin is not None and number.origin != step.line and not number.size:
                return Found(number.origin, "", number.name, (), _number(number.value), "scalar", number.name,
                             right, _code(step.code))
            return Found(step.line, step.code, number.name or _factor_text(step.code), tuple(step.shape),
                         _number(number.value), "scalar", s.trails.name_of(s.ref, r), right, _code(step.code))
    return None


def _times_reference(s: _Search, c: int, r0: int) -> tuple[float, int] | None:
    """Attempt step ``c`` holds reference step ``r0``'s values, or those of a step made from it,
    times a constant other than 1, in any layout a correct attempt may use (the scores grouped
    (B, KV, G, T, S)): (the factor, that step)."""
    t = tensor_of(s.att[c])
    if t is None or s.constant[c] or not bool(torch.isfinite(t).any()):
        return None
    finite = torch.isfinite(t)
    big = float(t[finite].abs().max())
    for r, (ref, rt) in enumerate(s.matcher.ref):
        if rt is None or rt.numel() != t.numel() or int(torch.isfinite(rt).sum()) != int(finite.sum()) or (
                r != r0 and r0 not in s.trails.up[r]):
            continue
        theirs = float(rt[torch.isfinite(rt)].abs().max()) if bool(torch.isfinite(rt).any()) else 0.0
        if theirs == 0 or big == 0:
            continue
        factor = big / theirs
        if math.isclose(factor, 1, rel_tol=1e-3) or not math.isfinite(factor):
            continue
        m = s.matcher.match(t / factor, s.att[c].dtype)
        if m is not None and (m[0] == r0 or r0 in s.trails.up[m[0]]):
            return factor, m[0]
    return None


def _factor_text(code: str) -> str:
    """The number's side of a line that scales one tensor (``1.0 / math.sqrt(d)`` of ``q = q * (1.0 /
    math.sqrt(d))``), as written; "" when the line is no such product."""
    import ast

    try:
        node = ast.parse(code.strip()).body[0]
    except (SyntaxError, ValueError, IndexError):
        return ""
    value = getattr(node, "value", None)
    if isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mult, ast.Div)):
        sides = [x for x in (value.right, value.left) if not isinstance(x, ast.Name)]
        return ast.unparse(sides[0]) if len(sides) == 1 else ""
    return ""


def _unscaled_pick(s: _Search, h: _Here, explained: Found) -> Found | None:
    """An input taken as it came in (``q[:, :, i:j]``) said to stop short of the reference's line that
    scales it (``q[:, :, i:j] * scale``): where the reference puts its scale is a convention (on q,
    on the scores), so taking the input is no mistake. A later factor applied to what step ``i``
    makes (``qk * qk_scale``) that leaves it a constant times a reference value: that number, where
    it is set ("scalar"), or the factor's line; else, unless the input is taken under the name the
    reference gives its scaled value (the reference's line, its scale left out: that line), the step
    that uses the input without the scale ("input")."""
    p = locate(explained, s.att, s.ref, s.matcher)
    if p is None or p not in h.step.parents:
        # said at the call of a helper of the file that returned it (`Q_i = load_tile(q, …)`): the
        # step's parent made on that call
        p = next((q for q in h.step.parents if explained.line in (s.att[q].stack or [s.att[q].line])), p)
    if p is None or p not in h.step.parents or s.matched[p] is None:
        return None
    pick = s.att[p]
    if any(not s.att[q].free for q in pick.parents) or not pick.inputs or pick.free or func_name(pick.func) not in PICKS:
        return None  # (indices made without the inputs, offs_m = arange(…), may pick it)
    m = s.matched[p][0]
    scaling = [q for q, r in enumerate(s.ref) if m in r.parents and r.line == s.ref[m].line and _scaling(r) is not None]
    if not scaling:
        return None
    todo, seen = [h.i], set()
    while todo:  # what is made from i, up to the first step that scales it by a number
        j = todo.pop(0)
        for c in s.children.get(j, []):
            if c in seen or len(seen) > 40:
                continue
            seen.add(c)
            factor = _scaling(s.att[c])
            if factor is None:
                if func_name(s.att[c].func) in LAYOUTS | CASTS | {"getitem"}:
                    todo.append(c)
                continue
            found = s.explainer.scaled(c)
            if found is None or s.trails._base2() and _log2e(found.named):
                continue  # (log2(e) more than the reference's: the scale of a softmax taken with exp2)
            number = s.att[c].scalars[0]
            if number.name and number.origin is not None and number.origin != s.att[c].line and not number.size:
                ratio = float(found.named)
                return Found(number.origin, "", number.name, (), _number(number.value), "scalar", number.name,
                             _number(number.value / ratio), _code(s.att[c].code))
            return found
    if s.trails.name_of(s.att, p) == s.trails.name_of(s.ref, m):
        return None  # the reference's line written as it is (its q_blk) but for its scale: that line
    return s.trails.found(h.i, "input", h.counterpart, s.ref[scaling[0]].code)


_WIDER = {"float16": 0, "bfloat16": 0, "float32": 1, "float64": 2}  # how wide a float dtype computes


def _cast_left_out(s: _Search, h: _Here):
    """An input that holds the values of a cast the reference makes (``x.to(float32)``) in the
    narrower dtype it was cast from (statistics taken in float16): the cast left out, said where
    that input was made ("skipped"; at the call, when a helper of the file made it)."""
    for p in h.step.parents:
        m = s.matched[p]
        if m is None or func_name(s.ref[m[0]].func) not in CASTS:
            continue
        mine, theirs = _WIDER.get(s.att[p].dtype), _WIDER.get(s.ref[m[0]].dtype)
        if mine is not None and theirs is not None and mine < theirs:
            found = s.trails.found(p, "skipped", m[0], s.ref[m[0]].code)
            return s.trails.at_caller(found, p, h.i)
    return None


def _layout(s: _Search, h: _Here):
    """The right numbers in a layout no correct attempt uses (a view where a transpose belongs):
    "layout", at the step that made them so when this one only rearranges it (the cache's cat in
    the wrong order, then transposed). Not when an input made on another line is named like one
    of the reference's values and holds another (kᵀ q where q kᵀ belongs: the roles are wrong)."""
    i, step, same = h.i, h.step, h.same
    swapped = [p for p in step.parents if s.att[p].line != step.line and p not in h.fine and s.trails.swapped(p)]
    if not same or swapped:
        return None
    while True:
        ps = [q for q in step.parents if not s.att[q].free]
        if func_name(step.func) not in LAYOUTS | CASTS or len(ps) != 1 or s.matched[ps[0]] is not None:
            break
        held = tensor_of(s.att[ps[0]])
        up = s.matcher.same_values(held, s.att[ps[0]].dtype) if held is not None else []
        if not up:
            break
        i, step, same = ps[0], s.att[ps[0]], up
    name = s.trails.name_of(s.att, i)
    same = sorted(same, key=lambda j: (s.trails.name_of(s.ref, j) != name, len(s.ref[j].shape) != len(step.shape)))
    ref_step = s.ref[same[0]]
    return Found(step.line, step.code, name, tuple(step.shape), name_shape(step.shape, s.axes),
                 "layout", s.trails.name_of(s.ref, same[0]), name_shape(ref_step.shape, s.axes))


def _blamed_input(s: _Search, h: _Here):
    """The right values computed from inputs the reference does not feed that operation: the
    earliest such ancestor (up to three steps back, :func:`_blame`) made the mistake, an input in a
    layout the reference never uses there ("layout") or one the reference only has half-way
    through one of its lines, q @ kᵀ before the scale ("incomplete"). Said as a role when that
    layout comes from inputs in swapped roles (k, q, v = … for q, k, v), or as a number that undid
    the line's step or a later factor."""
    blamed = _blame(h.i, s.att, s.matched, s.ref)
    if blamed is None:
        return None
    p, reason = blamed
    if reason == "layout" and s.source and _scaling(h.step) is not None:
        # the step scales by a number and holds a reference value times another number, in a layout a
        # correct attempt may use (scores (B, T, H, S) of an einsum): the number is the story, not the
        # layout its inputs came in
        scaled = s.explainer.scaled(h.i)
        if scaled is not None:
            return scaled
    if reason == "incomplete" and p in h.step.parents and _own_way(s, h.step):
        return None
    others = [q for q in h.step.parents if q != p]
    if reason == "layout" and p in h.step.parents and _kind(h.step) in _ELEMENTWISE and others and all(
            s.att[q].free and math.prod(s.att[q].shape) < math.prod(h.step.shape) for q in others):
        # the input in another axis order, combined element by element with a table made without the
        # inputs that broadcasts over it (q in (B, H, T, D) times cos (T, D)): an order a correct attempt
        # may use; what the step pairs it with is the story (the table, or how its halves are paired)
        return None
    if reason == "layout" and _layout_used_right(s, p):
        return None
    if reason == "layout" and _leading_axes_only(s, h.step, p):
        return None
    role = s.trails.swapped_above(p)
    if role is not None:
        return role
    if reason == "incomplete" and s.source:
        renamed = _renamed_as_is(s, h.i)  # (the ~ the reference takes on its mask, left out under a new name)
        if renamed is not None:
            return renamed
        instead = s.explainer.instead_of_incomplete(h.i, p)
        if instead is not None:
            return instead
    parent, ref_step = s.att[p], s.ref[s.matched[p][0]]
    return Found(parent.line, parent.code, s.trails.name_of(s.att, p), tuple(parent.shape),
                 name_shape(parent.shape, s.axes), reason, s.trails.name_of(s.ref, s.matched[p][0]),
                 name_shape(ref_step.shape, s.axes), _code(ref_step.code))


def _own_way(s: _Search, step: Step) -> bool:
    """``step`` applies a function the reference never applies, one that searches or counts (integer
    positions: ``searchsorted`` on a running sum the reference goes on from by subtracting) or reduces
    its one input (``torch.var`` of the centred values): the file takes its own way from that input,
    so the input, a value the reference has half-way through one of its lines, stops short of
    nothing; where that way goes wrong is said further on. (A function that does elementwise what one
    of the reference's does, ``torch.pow`` for ``**``, ``logical_not`` for ``~``, an einsum for an outer
    product, is no way of its own: the input is still the story.)"""
    name = func_name(step.func)
    if name in LAYOUTS | CASTS or any(func_name(r.func) == name for r in s.ref):
        return False
    if step.dtype in INTEGER:
        return True
    taken = [p for p in step.parents if not s.att[p].free]
    return len(taken) == 1 and math.prod(step.shape) < math.prod(s.att[taken[0]].shape)


_JOINS_LAST = {"cat", "concat", "concatenate"}  # joins that keep the leading axes when they join along the last


def _leading_axes_only(s: _Search, step: Step, p: int) -> bool:
    """Attempt step ``p`` holds the reference's values with its leading axes in another order (heads
    before tokens: a layout a correct attempt may use, SPEC §8), its last axis as the reference's,
    and ``step``, made from it, keeps those leading axes as they are and works on the last one only
    (the pairs of a rotation unbound, a split of the features, the
    nope and rope parts of a key joined): the order of the leading axes
    cannot be what makes ``step`` go wrong, so the layout is not the story."""
    mine, theirs = tuple(s.att[p].shape), tuple(s.ref[s.matched[p][0]].shape)
    n = len(mine) - 1
    if n < 2 or len(theirs) != len(mine) or mine == theirs or sorted(mine) != sorted(theirs) or mine[-1] != theirs[-1]:
        return False
    if func_name(step.func) not in PICKS | _JOINS_LAST or len(step.shape) < n or tuple(step.shape[:n]) != mine[:n]:
        return False
    return all(len(s.att[q].shape) >= n and tuple(s.att[q].shape[:n]) == mine[:n] for q in step.parents)


_JOINS = {"or", "and", "xor", "ior", "iand", "ror", "rand", "logical_or", "logical_and", "logical_xor",
          "bitwise_or", "bitwise_and", "bitwise_xor"}  # what joins two bool masks into one (func_name spelling)


def _masks_joined(s: _Search, h: _Here):
    """Two (or more) bool masks that are each one of the reference's, in its own layout, joined into
    a mask that blocks other positions than the reference's masking does by its end (``pad | causal``
    where a correct attempt has ``&``): the join is the step that goes wrong, not one of its right
    inputs (which the reference only holds half-way through the line that applies it)."""
    step = h.step
    if func_name(step.func) not in _JOINS or step.dtype != "bool" or s.matched[h.i] is not None \
            or len(set(step.parents)) < 2 or step.inputs:
        return None
    if not all(s.matched[p] is not None and s.matched[p][1] and s.att[p].dtype == "bool"
               and s.ref[s.matched[p][0]].dtype == "bool" and not s.constant[p] for p in step.parents):
        return None
    if s.trails.net_mask(h.i) or s.trails.same_mask(h.i):
        return None
    return Found(step.line, step.code, s.trails.name_of(s.att, h.i), tuple(step.shape),
                 name_shape(step.shape, s.axes), "masks_joined")


def _layout_used_right(s: _Search, p: int) -> bool:
    """Attempt step ``p``'s layout is one the attempt also makes on the same line (a layout helper of
    the file, called for both objects) and gets back on track from there: a layout a correct
    attempt uses, so what this use of it does is the story (a cast left out), not the layout."""
    step = s.att[p]

    def back_on_track(q: int) -> bool:  # a step made from q holds a reference value in the reference's layout
        return any(s.matched[j] is not None and s.matched[j][1] and not s.constant[j] for j in s.descendants(q))

    return any(st.line == step.line and st.func == step.func and st.stack != step.stack
               and tuple(st.shape) == tuple(step.shape) and s.matched[q] is not None and not s.matched[q][1]
               and back_on_track(q) for q, st in enumerate(s.att))


def _wrong_input(s: _Search, h: _Here):
    """An input made by the file alone (a mask) that the reference never makes: the earliest step
    it was made from ("made"). An input named like one of the reference's values that holds
    another (``q = k_proj(x)``; only the value its line ends with is what the name holds), made on
    another line: that line ("role"), followed up while its inputs are swapped the same way."""
    for p in h.step.parents:  # a wrong mask made by the file is what the values say; a role, what the names say
        if s.trails.wrong_free(p):
            return s.trails.found(s.trails.free_top(p), "made")
    for p in h.step.parents:
        if s.matched[p] is not None and p not in h.fine:
            role = s.trails.swapped_above(p)
            if role is not None and role.line != h.step.line:
                return role
    return None


def _passed_through(s: _Search, h: _Here):
    """Wrong values from an input that holds a value of the reference as it was made, carried
    (viewed, copied) from a line where the file then hands it to a function of its own that gives
    it back untouched (``return xq * cos + rot(xq) * sin, xk``: the keys never rotated): that
    ``return`` ("noop"), where the step the reference takes on it was left out."""
    if not s.source:
        return None
    todo, seen = list(h.step.parents), set()
    while todo:
        p = todo.pop()
        if p in seen or len(seen) > 12:
            continue
        seen.add(p)
        step = s.att[p]
        if step.free:
            continue
        carries = func_name(step.func) in LAYOUTS | COPIES | CASTS | {"getitem", "__getitem__"}
        name = s.trails.name_of(s.att, p) if s.matched[p] is not None and s.trails.own(p) else ""
        at = _call_line(step, h.step) if name and "," not in name else None
        back = _passes_through(s.source, name, step.line, at) if at else None
        if back is None and carries:
            todo.extend(step.parents)
        if back is not None:
            m, nxt = s.matched[p][0], None
            for q in range(m + 1, len(s.ref)):  # the first step the reference computes from it (through its layouts)
                if m in s.ref[q].parents:
                    if func_name(s.ref[q].func) not in LAYOUTS | CASTS:
                        nxt = s.ref[q]
                        break
                    m = q
            return Found(back[0], back[1], name, tuple(step.shape), name_shape(step.shape, s.axes), "noop",
                         assigned(nxt.code) if nxt else "", "", _code(nxt.code) if nxt else "")
    return None


def _call_line(made: Step, used: Step) -> int | None:
    """The line of ``made``'s function from which ``used`` is reached (the call of a helper that
    uses the value, or ``used``'s own line), or None when ``used`` runs elsewhere."""
    mine, theirs = list(made.stack or [made.line]), list(used.stack or [used.line])
    if len(theirs) < len(mine) or theirs[:len(mine) - 1] != mine[:-1]:
        return None
    return theirs[len(mine) - 1]


def _passes_through(source: str, name: str, after: int, before: int) -> tuple[int, str] | None:
    """A statement between lines ``after`` and ``before`` that assigns ``name`` (alone or in a tuple)
    from a call of a top-level function of ``source`` that returns, in that place, the parameter
    the call passes ``name`` to, untouched: that ``return`` (its line, its code)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and after < node.lineno < before and len(node.targets) == 1
                and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)):
            continue
        f = functions.get(node.value.func.id)
        target = node.targets[0]
        names = [t.id if isinstance(t, ast.Name) else "" for t in (target.elts if isinstance(target, ast.Tuple) else [target])]
        if f is None or name not in names:
            continue
        place = names.index(name)
        params = [a.arg for a in (*f.args.posonlyargs, *f.args.args)]
        given = [j for j, a in enumerate(node.value.args) if isinstance(a, ast.Name) and a.id == name]
        given += [params.index(k.arg) for k in node.value.keywords if k.arg in params and isinstance(k.value, ast.Name)
                  and k.value.id == name]
        if len(given) != 1 or given[0] >= len(params):
            continue
        param = params[given[0]]
        for r in ast.walk(f):
            if not isinstance(r, ast.Return) or r.value is None:
                continue
            parts = r.value.elts if isinstance(r.value, ast.Tuple) else [r.value]
            if len(parts) == len(names) and isinstance(parts[place], ast.Name) and parts[place].id == param:
                return r.lineno, source.splitlines()[r.lineno - 1].strip()
    return None


def _cause_elsewhere(s: _Search, h: _Here):
    """The values say no more: a cause the two files show on another line (a number, a guard, a
    start value, :mod:`.explain`); no line at all when the explainer finds the step is not
    where the attempt goes wrong."""
    if not s.source:
        return None
    found = s.cause(h.i)
    if found is not None:
        return found
    if s.explainer.claims(h.i):
        return None
    # a part of an input picked only to be tested (`attention_mask[:, -1].all()`) with no cause of its
    # own: what the test leaves out is told further on (a guard around a step the reference takes)
    tested = (not h.step.parents and h.step.inputs and func_name(h.step.func) in PICKS and s.children.get(h.i)
              and all(s.att[c].dtype == "bool" or not s.att[c].shape for c in s.children[h.i]))
    if not tested or h.i in s.wrong_outputs:
        return NO_LINE
    return _guard_left_out(s, h) or NEXT_STEP


def _guard_left_out(s: _Search, h: _Here) -> Found | None:
    """Step ``h`` picks a part of an input only to test it, in the condition of an ``if`` whose body
    did not run (``if not attention_mask[:, -1].all():`` around the padding mask, true only with
    right padding); the reference applies that input here and it changes what it is applied to:
    the condition left the step out ("guarded", its line)."""
    import ast

    try:
        tree = parsed(s.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    line = h.step.line
    guard = next((n for n in ast.walk(tree) if isinstance(n, ast.If)
                  and n.test.lineno <= line <= (n.test.end_lineno or n.test.lineno)), None)
    if guard is None or not guard.body:
        return None
    first, last = guard.body[0].lineno, guard.body[-1].end_lineno or guard.body[-1].lineno
    if any(first <= n <= last for step in s.att for n in (step.stack or [step.line])):
        return None  # the body ran
    source = set(h.step.inputs)
    made_from: set[int] = set()
    for q, r in enumerate(s.ref):
        if set(r.inputs) & source or set(r.parents) & made_from:
            made_from.add(q)
            others = [p for p in r.parents if p not in made_from and not s.ref[p].free]
            if len(others) != 1 or func_name(r.func) in LAYOUTS:
                continue
            mine, theirs = tensor_of(r), tensor_of(s.ref[others[0]])
            if mine is None or theirs is None or (mine.shape == theirs.shape and close(mine, theirs)):
                return None  # the reference's step changes nothing here: leaving it out is no mistake
            data = s.ref[others[0]]
            return Found(guard.lineno, s.source.splitlines()[guard.lineno - 1].strip(), s.trails.name_of(s.ref, others[0]),
                         tuple(data.shape), name_shape(data.shape, s.axes), "guarded", "", "", _code(r.code))
    return None


def _reused_callee(s: _Search, h: _Here):
    """Wrong values made inside a function (a module's forward) that the file calls from several
    lines, from inputs that are all what the reference feeds its counterpart and with the same
    numbers: what differs is nothing the trail sees, the parameters of the object called (one norm
    module called for both norms). The line of this call, where the object is chosen. Not when the
    counterpart is also fed a value the step is not (a norm whose ``h * rsqrt(...)`` lost its ``rsqrt``:
    its code left a stage out, said where it is written)."""
    step, r = h.step, h.counterpart
    stack = list(step.stack or ())
    if r is None or len(stack) < 2 or not step.parents or not s.source:
        return None
    ref = s.ref[r]
    if any(not (s.trails.own(p) & set(ref.parents)) for p in step.parents) or set(step.inputs) != set(ref.inputs):
        return None
    if not set(ref.parents) <= set().union(*(s.trails.own(p) for p in step.parents)):
        return None
    if len(step.scalars) != len(ref.scalars) or any(a.value != b.value for a, b in zip(step.scalars, ref.scalars)):
        return None
    spans = _function_spans(s.source)
    mine = _span_of(spans, step.line)
    callers = {tuple(a.stack[:-1]) for a in s.att if a.stack and len(a.stack) >= 2 and _span_of(spans, a.line) == mine}
    if mine is None or len(callers) < 2:
        return None
    line = stack[-2]
    code = next((a.code for a in s.att if a.line == line), "") or s.source.splitlines()[line - 1].strip()
    return Found(line, code, assigned(code), tuple(step.shape), name_shape(step.shape, s.axes), "values")


def _bare_values(s: _Search, h: _Here):
    """Else the step itself: wrong values on its own line; not a right mask applied to the right
    scores ahead of another mask the reference applies first (see :func:`_mask_taken_early`). Said
    better where the file shows why: a case input picked with its axes elsewhere (see
    :func:`_input_picked_otherwise`), a branch that would have read a case input and did not run
    (see :func:`_branch_not_taken`)."""
    if _taken_before_another(s, h.i):
        return NEXT_STEP
    return (_input_picked_otherwise(s, h.i) or _branch_not_taken(s, h.i) or _constant_of_a_class(s, h.i)
            or _renamed_as_is(s, h.i) or s.said(h.i, "values"))


def _renamed_as_is(s: _Search, i: int) -> Found | None:
    """Masking step ``i`` fills where its mask is True, the mask holds the values of a mask the
    reference fills by the other way round (it fills where they are False: ``~attention_mask``), and
    the name the line reads it by was given, on a line of its own, to a parameter of the function as
    it came (``key_padding_mask = attention_mask``): the new name's meaning turned round without the
    ``~`` (fairseq's True = padding for the contract's True = real token). That line ("renamed")."""
    import ast

    if func_name(s.att[i].func) not in _MASKING or not s.source:
        return None
    mine = _polarity(s.att, i)
    if mine is None or (held := tensor_of(s.att[mine[0]])) is None:
        return None
    shape = _lead_stripped(s.att[mine[0]].shape)
    held = held.reshape(shape).bool()
    turned = False
    for k, ref in enumerate(s.ref):
        theirs = _polarity(s.ref, k) if func_name(ref.func) in _MASKING else None
        if theirs is None or theirs[1] != mine[1] or _lead_stripped(s.ref[theirs[0]].shape) != shape:
            continue
        t = tensor_of(s.ref[theirs[0]])
        if t is not None and torch.equal(t.reshape(shape).bool(), ~held):
            turned = True
            break
    if not turned:
        return None
    try:
        tree = parsed(s.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    line = s.att[i].line
    around = [f for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              and f.lineno <= line <= (f.end_lineno or f.lineno)]
    if not around or not 0 < line <= len(s.trails.source_lines):
        return None
    f = max(around, key=lambda f: f.lineno)
    params = {a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)}
    statement = next((n for n in walk(f) if isinstance(n, ast.stmt) and n.lineno <= line <= (n.end_lineno or n.lineno)
                      and not isinstance(n, (ast.If, ast.For, ast.While, ast.With, ast.Try))), None)
    if statement is None:
        return None
    read = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    renames = [n for n in walk(f) if isinstance(n, ast.Assign) and n.lineno < line and len(n.targets) == 1
               and isinstance(n.targets[0], ast.Name) and n.targets[0].id in read - params
               and isinstance(n.value, ast.Name) and n.value.id in params]
    if len(renames) != 1:
        return None
    n = renames[0]
    return Found(n.lineno, s.trails.source_lines[n.lineno - 1].strip(), n.targets[0].id, tuple(s.att[mine[0]].shape),
                 name_shape(s.att[mine[0]].shape, s.axes), "renamed", n.value.id, "", _code(s.att[i].code))


def _taken_before_another(s: _Search, i: int) -> bool:
    """Step ``i`` is a mask applied ahead of another the reference applies first, or a bias built apart
    (:func:`_mask_taken_early`, :func:`_bias_built_apart`, :func:`_additive_mask_taken_early`), or a
    view or cast of such a step (fairseq's scores viewed as (B, H, T, S) for its padding fill)."""
    while True:
        if _mask_taken_early(s, i) or _bias_built_apart(s, i) or _additive_mask_taken_early(s, i):
            return True
        step = s.att[i]
        if func_name(step.func) not in LAYOUTS | CASTS or len(step.parents) != 1:
            return False
        i = step.parents[0]


@functools.lru_cache(maxsize=8)
def _class_constants(source: str) -> dict[str, list[tuple[int, float]]]:
    """The numbers a class body of ``source`` gives its attributes (``fill = 0.0``; a dataclass
    field's default, ``ignore_index: int = -100``; ``float("-inf")``): attribute -> (line, value)."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    found: dict[str, list[tuple[int, float]]] = {}
    for cls in walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        for node in cls.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                target, value = node.target.id, node.value
            else:
                continue
            number = _number_written(value)
            if number is not None:
                found.setdefault(target, []).append((node.lineno, number))
    return found


_ARITH_OPS = {"Add": lambda x, y: x + y, "Sub": lambda x, y: x - y, "Mult": lambda x, y: x * y,
              "Div": lambda x, y: x / y, "Pow": lambda x, y: x ** y}
_MATH_CALLS = {"sqrt": math.sqrt, "log": math.log, "exp": math.exp, "log2": math.log2}


def _arithmetic_pieces(code: str) -> list:
    """The largest pieces of plain arithmetic in statement ``code`` (numbers written, ``math.sqrt``,
    + - * / **) that read one variable and nothing else, each with that variable's name: ``1.0 -
    smoothing`` of ``loss = (1.0 - smoothing) * loss``."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []

    def names(node) -> set | None:
        """The variables plain arithmetic ``node`` reads, or None when it is not plain arithmetic."""
        if isinstance(node, ast.Constant):
            return set() if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
        if isinstance(node, ast.Name):
            return {node.id}
        parts = []
        if isinstance(node, ast.BinOp) and type(node.op).__name__ in _ARITH_OPS:
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            parts = [node.operand]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "math" and node.func.attr in _MATH_CALLS and len(node.args) == 1 and not node.keywords:
            parts = [node.args[0]]
        else:
            return None
        read = set()
        for part in parts:
            got = names(part)
            if got is None:
                return None
            read |= got
        return read

    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call)):
            read = names(node)
            if read is not None and len(read) == 1:
                found.append((node, next(iter(read))))
                continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def _shape_of(node, name: str) -> str:
    """Piece ``node``'s arithmetic with its variable ``name`` and its numbers as floats: two pieces
    with the same shape compute the same function of their variables."""
    import ast

    class Rename(ast.NodeTransformer):
        def visit_Name(self, n):
            return ast.copy_location(ast.Name(id="_" if n.id == name else n.id, ctx=ast.Load()), n)

        def visit_Constant(self, n):
            value = float(n.value) if isinstance(n.value, (int, float)) and not isinstance(n.value, bool) else n.value
            return ast.copy_location(ast.Constant(value=value), n)

    import copy
    return ast.dump(Rename().visit(copy.deepcopy(node)), annotate_fields=False)


def _evaluated(node, name: str, value: float) -> float | None:
    """Plain arithmetic ``node`` (see :func:`_arithmetic_pieces`) with ``name`` holding ``value``."""
    import ast

    try:
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(value)
        if isinstance(node, ast.BinOp):
            left, right = _evaluated(node.left, name, value), _evaluated(node.right, name, value)
            if left is None or right is None:
                return None
            return float(_ARITH_OPS[type(node.op).__name__](left, right))
        if isinstance(node, ast.UnaryOp):
            inner = _evaluated(node.operand, name, value)
            return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
        if isinstance(node, ast.Call):
            inner = _evaluated(node.args[0], name, value)
            return None if inner is None else float(_MATH_CALLS[node.func.attr](inner))
    except (ArithmeticError, ValueError, TypeError, OverflowError):
        return None
    return None


def _solved(node, name: str, target: float) -> float | None:
    """The value of ``name`` for which piece ``node`` gives ``target``, when the piece is a straight
    line in it (``-(span - 1)``, ``1 - eps``); else None."""
    f0, f1, f2 = (_evaluated(node, name, x) for x in (0.0, 1.0, 2.0))
    if f0 is None or f1 is None or f2 is None or _same_number(f0, f1) or not math.isclose(f2 - f1, f1 - f0, rel_tol=1e-9):
        return None
    return (target - f0) / (f1 - f0)


def _function_node_at(source: str, line: int):
    """The innermost function (``ast.FunctionDef``) of ``source`` that holds ``line``; None when none
    does or the source does not parse."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    around = [f for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              and f.lineno <= line <= (f.end_lineno or f.lineno)]
    return max(around, key=lambda f: f.lineno) if around else None


def _parameter_names(f) -> set[str]:
    return {a.arg for a in (*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs)}


def _assigned_before(source: str, name: str, line: int) -> int | None:
    """The line of the last plain assignment ``name = …`` before ``line`` in the function that holds
    ``line``, when it reads no tensor's shape (a size); None when ``name`` is a parameter there."""
    import ast

    f = _function_node_at(source, line)
    if f is None:
        return None
    if name in _parameter_names(f):
        return None
    found = None
    for node in walk(f):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = [node.target]
        else:
            continue
        if node.lineno < line and len(targets) == 1 and isinstance(targets[0], ast.Name) and targets[0].id == name:
            if found is None or node.lineno > found.lineno:
                found = node
    if found is None or any(isinstance(n, ast.Attribute) and n.attr in ("shape", "size") for n in ast.walk(found.value)):
        return None
    return found.lineno


def _number_written(node) -> float | None:
    """The number an expression writes: a literal (``-100``, ``0.0``) or ``float("-inf")``."""
    import ast

    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        try:
            return float(node.args[0].value)
        except ValueError:
            return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _same_number(a: float, b: float) -> bool:
    return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _only_the_number_differs(s: _Search, i: int, value: float) -> float | None:
    """Attempt step ``i`` holds a reference step's values of its shape except where it holds
    ``value``, and there the reference holds one other number: that number (a fill of 0 where the
    reference fills -inf), else None."""
    t = tensor_of(s.att[i])
    if t is None or not t.numel():
        return None
    t = t.double()
    here = t == value
    if not here.any() or here.all():
        return None
    for ref in s.ref:
        r = tensor_of(ref)
        if r is None or tuple(r.shape) != tuple(t.shape):
            continue
        r = r.double()
        same = torch.isclose(t, r, rtol=RTOL, atol=ATOL, equal_nan=True) | ((t == r) & ~torch.isfinite(t))
        if same.all() or not here[~same].all() or not (~same).any():
            continue
        theirs = r[~same].unique()
        if theirs.numel() == 1:
            return float(theirs[0])
    return None


def _constant_of_a_class(s: _Search, i: int) -> Found | None:
    """Step ``i``'s wrong values come from a number a class body sets (``fill = 0.0`` read as
    ``self.fill``; a dataclass field's default, ``cfg.ignore_index``), read on the step's line: the
    reference's step of that operation reads another number under that name, or the step holds the
    reference's values except where it holds that number. The line that chose the number: the class
    attribute's, or, for an object the function built (``cfg = LossConfig(...)``) without passing the
    field the function has as a parameter of its own, that call."""
    import ast

    if not s.source:
        return None
    constants = _class_constants(s.source)
    step = s.att[i]
    if not constants or not 0 < step.line <= len(s.trails.source_lines):
        return None
    try:
        line_tree = ast.parse(s.trails.source_lines[step.line - 1].strip())
    except SyntaxError:
        return None
    reads = [(n.value.id, n.attr) for n in ast.walk(line_tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.attr in constants]
    steps = [i] + [p for p in step.parents if s.att[p].line == step.line]
    for obj, attr in reads:
        for k in steps:
            for a in s.att[k].scalars:
                if a.name and a.name != f"{obj}.{attr}":
                    continue
                written = next((c for c in constants[attr] if _same_number(c[1], a.value)), None)
                if written is None:
                    continue
                theirs = next((b.value for r in s.ref if func_name(r.func) == func_name(s.att[k].func)
                               for b in r.scalars if b.key == a.key and b.name and names_of(b.name) & {attr}
                               and not _same_number(b.value, a.value)), None)
                if theirs is None:
                    theirs = _only_the_number_differs(s, i, a.value)
                if theirs is None:
                    continue
                line = written[0]
                if obj != "self":
                    line = _built_without(s.source, step.line, obj, attr) or line
                return Found(line, s.trails.source_lines[line - 1].strip(), f"{obj}.{attr}", (), _number(a.value),
                             "scalar", attr, _number(theirs), _code(step.code))
    return None


def _built_without(source: str, line: int, obj: str, attr: str) -> int | None:
    """In the function holding ``line``, which has a parameter ``attr``: the line that makes ``obj``
    with a call that does not pass ``attr`` (the function's own value left out), or None."""
    import ast

    f = _function_node_at(source, line)
    if f is None:
        return None
    if attr not in _parameter_names(f):
        return None
    for node in walk(f):
        if isinstance(node, ast.Assign) and node.lineno < line and any(isinstance(t, ast.Name) and t.id == obj for t in node.targets) \
                and isinstance(node.value, ast.Call) and all(k.arg != attr for k in node.value.keywords) \
                and not any(isinstance(x, ast.Name) and x.id == attr for x in node.value.args):
            return node.lineno
    return None


def _input_picked_otherwise(s: _Search, i: int) -> Found | None:
    """Step ``i``'s wrong values come from a case input picked, on another line, into a shape the
    reference never picks it in: its sizes in the same order with the broadcast axes elsewhere
    (``attention_mask[:, None, :, None]``, (B, 1, T, 1), where the reference takes (B, 1, 1, T):
    the mask on the query rows), and no step of the attempt takes it as the reference does. The
    pick is where it goes wrong."""
    step = s.att[i]
    for p in sorted(_ancestors(i, s.att)):
        pick = s.att[p]
        if pick.parents or len(pick.inputs) != 1 or func_name(pick.func) not in PICKS or pick.line == step.line \
                or pick.dtype != "bool":
            continue  # (a mask: where its broadcast axes sit says which of the scores it masks)
        source = pick.inputs[0]
        taken = [r for r, ref in enumerate(s.ref) if source in ref.inputs]
        shapes = {tuple(s.ref[r].shape) for r in taken}
        if not taken or tuple(pick.shape) in shapes or any(
                source in a.inputs and tuple(a.shape) in shapes for a in s.att):
            continue
        sizes = [d for d in pick.shape if d != 1]
        like = [r for r in taken if len(s.ref[r].shape) == len(pick.shape)
                and [d for d in s.ref[r].shape if d != 1] == sizes]
        if not like or len(sizes) == len(pick.shape):
            continue
        r = like[0]
        return Found(pick.line, pick.code, s.trails.name_of(s.att, p), tuple(pick.shape), name_shape(pick.shape, s.axes),
                     "layout", s.trails.name_of(s.ref, r), name_shape(s.ref[r].shape, s.axes), _code(s.ref[r].code))
    return None


def _branch_not_taken(s: _Search, i: int) -> Found | None:
    """Step ``i`` goes wrong where the reference has read a case input that no step of the attempt
    reads in this call, and the file has an ``if`` / ``elif`` whose condition names that input (as
    the reference's code names it) and whose body, which reads it too, did not run (``elif
    attention_mask is not None:`` after ``if is_causal:``, the padding left out whenever the mask
    is causal; its ``else`` did not run either): the condition that left it out ("guarded", its
    line)."""
    import ast

    if not s.source:
        return None
    read = {k for a in s.att for k in a.inputs}
    step = s.att[i]
    wanted = {k for r, ref in enumerate(s.ref) for k in ref.inputs} - read
    if not wanted:
        return None
    names, ref_code = set(), ""
    for ref in s.ref:
        if set(ref.inputs) & wanted:
            names |= set(re.findall(r"[A-Za-z_]\w*", ref.code))
            ref_code = ref_code or ref.code
    try:
        tree = parsed(s.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ran = {n for a in s.att for n in (a.stack or [a.line])}
    spans = _function_spans(s.source)
    for node in walk(tree):
        if not isinstance(node, ast.If) or not node.body:
            continue
        tested = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & names
        first, last = node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno
        if node.orelse:  # (an `else` that ran instead made what goes on: what it does is the story)
            last = node.orelse[-1].end_lineno or node.orelse[-1].lineno
        if not tested or any(first <= n <= last for n in ran):
            continue  # (the body ran)
        used = {n.id for b in node.body for n in ast.walk(b) if isinstance(n, ast.Name)}
        span = _span_of(spans, node.lineno)
        if not tested & used or span is None or not any(span[0] <= n <= span[1] for n in ran):
            continue  # (its body never reads the input, or its function never ran)
        return Found(node.lineno, s.source.splitlines()[node.lineno - 1].strip(), s.trails.name_of(s.att, i),
                     tuple(step.shape), name_shape(step.shape, s.axes), "guarded", "", "", _code(ref_code))
    return None


def _mask_as_numbers(s: _Search, h: _Here) -> Found | None:
    """A case input the reference takes as a bool mask (it makes bool steps from it: ``~mask``),
    maybe a view of it, cast to the numbers 1 / 0 on one line and used in arithmetic (``+ - *``) on
    another (a helper's ``mask.to(scores.dtype)`` added to the scores): the cast is where the mask
    became numbers, the line to fix. Asked of the cast (when it matches nothing) and of the step
    that uses it."""
    if func_name(h.step.func) in CASTS:
        casts = [h.i]
    elif func_name(h.step.func) in _ELEMENTWISE and s.matched[h.i] is None:
        casts = [p for p in h.step.parents if func_name(s.att[p].func) in CASTS]
    else:
        return None
    for c in casts:
        cast = s.att[c]
        if cast.dtype == "bool" or (s.matched[c] is not None and s.ref[s.matched[c][0]].dtype != "bool"):
            continue
        if not any(func_name(s.att[u].func) in _ELEMENTWISE and s.att[u].line != cast.line and s.matched[u] is None
                   for u in s.children.get(c, [])):
            continue
        top = c  # up through the picks and views of the input it casts (mask[:, None, None, :].float())
        while len(s.att[top].parents) == 1 and not s.att[top].inputs and func_name(s.att[s.att[top].parents[0]].func) in PICKS:
            top = s.att[top].parents[0]
        if s.att[top].parents or len(s.att[top].inputs) != 1:
            continue
        x = s.att[top].inputs[0]
        if not any(x in r.inputs and r.dtype == "bool" for r in s.ref):
            continue
        t = tensor_of(cast)
        if t is None or not bool(((t == 0) | (t == 1)).all()):
            continue
        return s.said(c, "mask_as_numbers")
    return None


ADDITIVE_BLOCK = -1e4  # an additive mask blocks with -inf or a large negative number (finfo.min, -1e9)


def _additive_mask_taken_early(s: _Search, i: int) -> bool:
    """Step ``i`` adds to the scores an additive mask made without the inputs (0 where allowed,
    -inf or a large negative number where blocked: CLIP's build_attention_mask) whose allowed
    positions are a mask the reference fills by, and a masking step is applied to its result later:
    the masks one at a time, in another order or form than the reference's one fill, whose first
    result the reference never holds (as :func:`_mask_taken_early` for a bool mask). What the later
    mask does tells."""
    step = s.att[i]
    if func_name(step.func) != "add" or len(step.parents) != 2:
        return False
    if not any(func_name(s.att[c].func) in _MASKING | LATE for c in _past_layouts(s, i)):
        return False  # (through views: fairseq's (B * H, T, S) scores viewed as (B, H, T, S) for the padding fill)
    bias = [p for p in step.parents if s.att[p].free and s.att[p].dtype != "bool"]
    data = [p for p in step.parents if p not in bias and s.matched[p] is not None]
    if len(bias) != 1 or len(data) != 1 or (b := tensor_of(s.att[bias[0]])) is None:
        return False
    allowed, blocked = b == 0, b <= ADDITIVE_BLOCK
    if not bool((allowed | blocked).all()) or bool(allowed.all()) or not bool(allowed.any()):
        return False
    shape = _lead_stripped(s.att[bias[0]].shape)
    allowed = allowed.reshape(shape)
    for r, ref in enumerate(s.ref):
        if ref.dtype != "bool" or _lead_stripped(ref.shape) != shape or (t := tensor_of(ref)) is None:
            continue
        t = t.reshape(shape).bool()
        if not (torch.equal(t, allowed) or torch.equal(t, ~allowed)):
            continue
        users = [k for k, u in enumerate(s.ref) if r in u.parents]
        users += [k for k, u in enumerate(s.ref) if any(q in u.parents for q in users if func_name(s.ref[q].func) in _INVERTS)]
        if any(func_name(s.ref[k].func) in _MASKING | {"and", "bitwise_and", "logical_and"} for k in users):
            return True
    return False


def _past_layouts(s: _Search, i: int) -> list[int]:
    """The steps that take in step ``i``'s result, looking through views and casts of it."""
    found, todo, seen = [], list(s.children.get(i, [])), set()
    while todo:
        c = todo.pop(0)
        if c in seen:
            continue
        seen.add(c)
        if func_name(s.att[c].func) in LAYOUTS | CASTS and len(s.att[c].parents) == 1:
            todo.extend(s.children.get(c, []))
        else:
            found.append(c)
    return found


def _bias_built_apart(s: _Search, i: int) -> bool:
    """Step ``i`` fills a start value made without the inputs (zeros) by a mask, and what it makes
    is added to another tensor later: an additive mask built apart (Hugging Face's
    ``torch.zeros(...).masked_fill(~mask, finfo.min)``), which the reference never holds; where
    it is added tells whether it is right."""
    step = s.att[i]
    if func_name(step.func) not in _MASKING or not any(s.att[p].free and s.constant[p] for p in step.parents):
        return False
    made = {i}
    for j in range(i + 1, len(s.att)):
        later = s.att[j]
        if not any(p in made for p in later.parents):
            continue
        if func_name(later.func) in ("add", "sub") and any(p not in made and not s.att[p].free for p in later.parents):
            mine = _polarity(s.att, i)  # and it fills where the reference blocks
            return mine is not None and _as_the_reference_masks(s, *mine)
        made.add(j)
    return False


_MASKING = {"where", "masked_fill"}
_INVERTS = {"bitwise_not", "invert", "logical_not"}


def _fills_where_true(result, data, mask) -> bool | None:
    """Whether a masking step that made ``result`` from ``data`` filled where ``mask`` is True
    (False: where it is False; None: it did neither, or the shapes do not say)."""
    try:
        m = mask.bool().expand(result.shape)
        data = data.expand(result.shape)
    except (RuntimeError, ValueError):
        return None
    if not bool(m.any()) or bool(m.all()):
        return None
    kept_true = close(result[m], data[m])
    kept_false = close(result[~m], data[~m])
    if kept_true == kept_false:
        return None
    return kept_false


def _polarity(steps: list[Step], k: int) -> tuple[int, bool] | None:
    """(the bool parent, whether masking step ``k`` fills where it is True), from the values."""
    step = steps[k]
    result = tensor_of(step)
    masks = [p for p in step.parents if steps[p].dtype == "bool"]
    data = [p for p in step.parents if steps[p].dtype != "bool" and tuple(steps[p].shape) == tuple(step.shape)]
    if result is None or len(masks) != 1 or not data:
        return None
    mask = tensor_of(steps[masks[0]])
    for d in data:
        t = tensor_of(steps[d])
        if mask is None or t is None:
            return None
        where = _fills_where_true(result.reshape(step.shape), t.reshape(steps[d].shape), mask.reshape(steps[masks[0]].shape))
        if where is not None:
            return masks[0], where
    return None


def _mask_taken_early(s: _Search, i: int) -> bool:
    """Step ``i`` masks the scores with a mask the reference makes and applies the same way round
    (it fills where the reference's use of that mask fills), and another masking step is applied
    to its result later: the masks in another order than the reference's (causal first, then the
    padding), whose first result the reference never holds. What the later mask does tells."""
    step = s.att[i]
    if func_name(step.func) not in _MASKING:
        return False
    if not any(func_name(s.att[c].func) in _MASKING | LAYOUTS | CASTS for c in s.children.get(i, [])):
        return False
    mine = _polarity(s.att, i)
    if mine is None:
        return False
    data = [p for p in step.parents if p != mine[0] and s.att[p].dtype != "bool" and not (_fill(s.att[p]) or s.att[p].free and s.constant[p])]
    if not data or any(s.matched[p] is None for p in data):
        return False
    return _as_the_reference_masks(s, *mine)


def _lead_stripped(shape) -> tuple[int, ...]:
    """``shape`` without its leading 1s: ``future.unsqueeze(0)`` broadcasts as ``future`` does."""
    shape = tuple(shape)
    while shape and shape[0] == 1:
        shape = shape[1:]
    return shape


def _as_the_reference_masks(s: _Search, mask: int, fills_true: bool) -> bool:
    """Whether the attempt's bool ``mask`` holds one of the reference's tensors that a masking step
    of the reference fills by, on the same side (``fills_true``: where it is True)."""
    for r, exact in s.trails.cands[mask]:  # the reference's tensor it holds, and how the reference uses it
        if not exact or _lead_stripped(s.ref[r].shape) != _lead_stripped(s.att[mask].shape):
            continue  # (in another layout: a padding mask laid along the queries is that mask, wrong)
        for k, ref in enumerate(s.ref):
            if func_name(ref.func) not in _MASKING:
                continue
            given = [q for q in ref.parents if q == r or r in s.ref[q].parents and func_name(s.ref[q].func) in _INVERTS]
            theirs = _polarity(s.ref, k) if given else None
            if theirs is None or theirs[0] not in given:
                continue
            flipped = theirs[0] != r
            if (theirs[1] != flipped) == fills_true:
                return True
    return False


STEP_RULES = (_output_holds_another_value, _mask_as_numbers, _zero_angles, _wrong_start, _not_the_story, _returned_ahead_input, _wrong_argument,
              _empty_slice, _raw_input_rule, _lined_up, _cast_left_out,
              _layout, _masks_joined, _blamed_input, _wrong_input, _passed_through, _cause_elsewhere, _reused_callee,
              _bare_values)


def _short_output(s: _Search):
    """Every step has a counterpart, and an output holds an earlier stage of the reference's output
    of its name (or the right values in another dtype): see :meth:`_Trails.short`."""
    if s.raised_at is None and s.outputs is not None:
        found = s.trails.short(s.outputs)
        if found is not None and found.reason == "short" and s.source:
            # a value a loop builds (a running accumulator), returned a step short: the missing
            # step comes after the loop, where it is returned
            a = next((k for k, st in enumerate(s.att) if st.line == found.line and tuple(st.shape) == found.shape), None)
            where = None if a is None else (tuple(s.att[a].stack or ()), s.trails.att_part[a])
            runs = sum(1 for k, st in enumerate(s.att) if st.line == found.line
                       and (tuple(st.stack or ()), s.trails.att_part[k]) == where and s.att[k].func == s.att[a].func)
            back = _return_after(s.source, s.att[a]) if runs > 1 else None
            if back is not None and back[0] > found.line:
                found = dataclasses.replace(found, line=back[0], code=back[1])
            early = _taken_early(s, a) if a is not None else None
            if early is not None:
                found = early
        return found
    return None


def _taken_early(s: _Search, a: int) -> Found | None:
    """The output (step ``a``) holds an earlier stage of the reference's, and before it the attempt
    took a step the reference takes only after that stage, on values the reference never holds
    (top-p on the whole distribution, then top-k: the cut that should come last came first and
    did nothing): that step's line, where the order goes wrong."""
    if s.matched[a] is None:
        return None
    after = {func_name(r.func) for r in s.ref[s.matched[a][0] + 1:]} - LAYOUTS - CASTS - PICKS - COPIES
    for j in range(a):
        step = s.att[j]
        if s.matched[j] is None and not step.free and s.recovers(j) and func_name(step.func) in after \
                and tensor_of(step) is not None and step.dtype == s.att[a].dtype:
            return s.said(j, "values")
    return None


def _result_in_other_layout(s: _Search):
    """Every value has a counterpart, but a result comes out in another layout: the earliest step of
    that layout on the way to it."""
    turned = _output_layout(s.att, s.matched, s.ref)
    if turned is None:
        return None
    p, r = turned
    step, ref_step = s.att[p], s.ref[r]
    return Found(step.line, step.code, assigned(step.code), tuple(step.shape), name_shape(step.shape, s.axes),
                 "layout", assigned(ref_step.code), name_shape(ref_step.shape, s.axes))


def _stops_short(s: _Search):
    """Every step has a counterpart, yet the result is wrong: the attempt stops short of the end;
    or it ends where the reference does, and a plain number differs on a step that holds the
    reference's values up to the trail's tolerance (eps 1e-5 for 1e-6: see :func:`_number_apart`)."""
    if s.raised_at is not None or not s.att or s.matched[-1] is None:
        return None
    if s.matched[-1][0] == len(s.ref) - 1:
        return _number_apart(s)
    last, ref_last = s.att[-1], s.ref[-1]
    return Found(last.line, last.code, assigned(last.code), tuple(last.shape), name_shape(last.shape, s.axes),
                 "short", assigned(s.ref[s.matched[-1][0]].code), name_shape(ref_last.shape, s.axes),
                 _code(ref_last.code))


def _number_apart(s: _Search):
    """The first step lined up with the reference's whose plain number differs (see
    :meth:`_Trails.numbers`): where the values differ by less than the trail tells apart."""
    if not s.source:
        return None
    for i in range(len(s.att)):
        if s.matched[i] is None or not s.att[i].scalars:
            continue
        r = s.trails.counterpart(i)
        if r is not None and s.ref[r].scalars:
            found = s.trails.numbers(i, r)
            if found is not None:
                return found
    return None


def _raised(s: _Search):
    """It raised: the step that made a tensor of a shape the reference never has, read by the
    raising line (:meth:`_Trails.raised_on`), else the raising line itself."""
    if s.raised_at is None:
        return None
    made = s.trails.raised_on(s.raised_at, s.source)
    if made is not None:
        return made
    last = next((step for step in reversed(s.att) if step.line == s.raised_at), None)
    code = last.code if last is not None else ""
    shape = tuple(last.shape) if last is not None else ()
    return Found(s.raised_at, code, assigned(code), shape, name_shape(shape, s.axes) if shape else "", "raised")


def _returns_later_stage(s: _Search):
    """Every value has a counterpart, yet a function of the file that the reference defines too
    returns a later stage than the reference's (the blocked positions for the allowed ones, which its
    caller then uses consistently): see :meth:`_Trails.ahead_of_return`."""
    for k, m in enumerate(s.matched):
        found = s.trails.ahead_of_return(k, m[0]) if m is not None else None
        if found is not None:
            return found
    return None


END_RULES = (_short_output, _result_in_other_layout, _stops_short, _raised, _returns_later_stage)


def _built_with_callables(s: _Search, i: int, found: Found) -> Found:
    """``found``, a step left out ("input", "skipped"), said of step ``i``'s own line, where that line
    only calls a callable it was handed (``reduce(lambda acc, f: f(acc), fns, x)``, ``for f in
    self.stages: x = f(x)``: a pipeline applying its stages), and the step was
    run from a statement of the attempt that calls a local variable the same function made by a call
    (``kv_path = compose(self.wkv_b, …)`` then ``kv_path(c_kv)``): the line that chose the stages,
    the one that made that variable. Else ``found`` as it is."""
    import ast

    step = s.att[i]
    stack = list(step.stack or ())
    if not s.source or found.reason not in ("input", "skipped") or found.line != step.line or len(stack) < 2 \
            or not 0 < step.line <= len(s.trails.source_lines):
        return found  # (a step left out: the stages are where it belongs; a wrong argument is the call's)
    try:
        tree = parsed(s.source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return found
    handed = False
    for node in walk(tree):
        if not isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if not node.lineno <= step.line <= (node.end_lineno or node.lineno):
            continue
        params = {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
        body = node.body if isinstance(node.body, list) else [node.body]
        params |= {t.id for b in body for loop in ast.walk(b) if isinstance(loop, ast.For)
                   for t in ast.walk(loop.target) if isinstance(t, ast.Name)}  # (for f in self.stages: x = f(x))
        handed = handed or any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id in params
                               and c.lineno == step.line for b in body for c in ast.walk(b))
    if not handed:
        return found
    outer = stack[0]
    functions = [f for f in walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and f.lineno <= outer <= (f.end_lineno or f.lineno)]
    if not functions:
        return found
    function = max(functions, key=lambda f: f.lineno)  # the statement's own function
    if function.lineno <= step.line <= (function.end_lineno or function.lineno):
        return found  # (the applier is written in that function itself)
    called = {c.func.id for c in ast.walk(function) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
              and c.lineno == outer}
    made = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and n.lineno < outer and isinstance(n.value, ast.Call)
            and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and n.targets[0].id in called]
    if len(made) != 1 or made[0].lineno != (made[0].end_lineno or made[0].lineno):
        return found
    line = made[0].lineno
    return dataclasses.replace(found, line=line, code=s.trails.source_lines[line - 1].strip())


def _first_wrong(trails: _Trails, axes: dict[str, int], raised_at: int | None,
                 outputs: tuple[dict[str, int], dict[str, int]] | None, source: str, ref_source: str) -> Found | None:
    """:func:`find` on the two trails compared, its shapes written with ``axes``: the first answer of
    :data:`STEP_RULES` on the attempt's steps in order, else of :data:`END_RULES`."""
    search = _Search(trails, axes, raised_at, outputs, source, ref_source)
    for i in range(len(trails.att)):
        here = _Here(search, i)
        for rule in STEP_RULES:
            said = rule(search, here)
            if said is NEXT_STEP:
                break
            if said is NO_LINE:
                return None
            if said is not None:
                return _built_with_callables(search, i, said)
    for rule in END_RULES:
        found = rule(search)
        if found is not None:
            return found
    return None


def attribute_line(source: str, attr: str) -> int | None:
    """The line of ``source`` that sets ``self.<attr>`` (the only one), or None: where a layer that
    a contract check is about is made."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None
    lines = {node.lineno for node in ast.walk(tree) if isinstance(node, (ast.Assign, ast.AnnAssign))
             for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
             if isinstance(t, ast.Attribute) and t.attr == attr and isinstance(t.value, ast.Name) and t.value.id == "self"}
    return lines.pop() if len(lines) == 1 else None


def initialised_line(source: str, attr: str) -> int | None:
    """The one line of ``source`` that initialises ``self.<attr>``'s parameters in place
    (``nn.init.zeros_(self.lora_A.weight)``, ``self.lora_B.weight.data.normal_()``), or None."""
    import ast

    try:
        tree = parsed(source)
    except (SyntaxError, ValueError):
        return None

    def reads_attr(node) -> bool:
        return any(isinstance(n, ast.Attribute) and n.attr == attr and isinstance(n.value, ast.Name)
                   and n.value.id == "self" for n in ast.walk(node))

    def initialises(call) -> bool:  # nn.init.<f>_(self.<attr>…) or self.<attr>….<f>_()
        f = call.func
        if not isinstance(f, ast.Attribute) or not f.attr.endswith("_") or f.attr.endswith("__"):
            return False
        if isinstance(f.value, ast.Attribute) and f.value.attr == "init" or isinstance(f.value, ast.Name) and f.value.id == "init":
            return bool(call.args) and reads_attr(call.args[0])
        return reads_attr(f.value)

    lines = {node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and initialises(node)}
    return lines.pop() if len(lines) == 1 else None


def locate(found: Found, attempt: list[Step], reference: list[Step], matcher: Matcher | None = None) -> int | None:
    """The attempt step ``found`` is about: the first step of its line and shape (for wrong values,
    the first of those that match nothing the reference makes; where it raised, the last step)."""
    if found.reason == "raised":
        return len(attempt) - 1 if attempt else None
    candidates = [j for j, s in enumerate(attempt) if s.line == found.line and tuple(s.shape) == tuple(found.shape)]
    if found.reason in ("values", "made") and len(candidates) > 1:
        matcher = matcher or Matcher(reference)
        for j in candidates:
            t = tensor_of(attempt[j])
            if t is not None and matcher.match(t) is None:
                return j
    return candidates[0] if candidates else None
