"""What the divergence finder says and the reading of trail steps its two halves share.

:mod:`.divergence` lines the attempt's trail up with the reference's; :mod:`.explain` reads the two
files for a cause on another line. Both read a step's values the same way (:func:`tensor_of`, a
masking fill as -inf), compare them the same way (:func:`close`), spell torch functions alike
(:func:`func_name`, :func:`op_name`) and answer with a :class:`Found`. They live here so that
neither module imports the other to get them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from attnprep.grader.tensors import ATOL, RTOL
from attnprep.grader.trace import Step

FILL = -1e8  # at or below: a masked entry, as -inf


# the same operation spelt otherwise: x * s and s * x, x / s and x.div(s), an in-place form
# (the reflected forms of the operations that do not commute, s / x or s - x, stay apart)
_SAME_FUNC = {"radd": "add", "rmul": "mul", "truediv": "div", "iadd": "add", "imul": "mul", "isub": "sub",
              "itruediv": "div", "amax": "max", "amin": "min", "bmm": "matmul", "mm": "matmul"}


# ... and what the file writes for the reflected forms, which read as the operation's own name
_AS_WRITTEN = {"amax": "max", "amin": "min", "rsub": "sub", "rdiv": "div", "rtruediv": "div", "rmatmul": "matmul",
               "rpow": "pow"}

# what only moves a tensor's values around: into other axes, or copied along an axis; and casts
LAYOUTS = {"reshape", "view", "flatten", "unflatten", "contiguous", "transpose", "permute", "t", "mT", "unsqueeze",
           "squeeze", "movedim", "moveaxis", "swapaxes", "swapdims", "clone"}
COPIES = {"expand", "expand_as", "broadcast_to", "repeat", "repeat_interleave", "tile"}
CASTS = {"to", "float", "double", "long", "int", "type", "type_as"}
# what takes a part of a tensor as it is, or moves it: one head of an input
PICKS = LAYOUTS | CASTS | {"getitem", "select", "narrow", "unbind", "chunk", "split", "tensor_split"}


@dataclass(frozen=True)
class Found:
    line: int
    code: str
    name: str  # the variable the line assigns ("q"), or "" when it assigns none
    shape: tuple[int, ...]
    named: str  # the shape in axis names, "(B, T, H, D)"
    reason: str  # "layout", "values", "raised", "incomplete", "skipped", "scalar", "made", "role", "short", or
    # a cause grader/explain.py finds ("guarded", "twice", "start", …), "raised_first": a key of [divergence]
    ref_name: str = ""  # the reference's counterpart, when one is known
    ref_named: str = ""
    ref_code: str = ""
    part: str = ""  # in a script of calls, the call the line goes wrong in ("step 3 (pos 6..8)")


def tensor_of(step: Step) -> torch.Tensor | None:
    """The step's values in its shape; a complex step as its real view ``(…, 2)``. A large negative
    fill (-1e9, finfo.min) reads as -inf: a mask filled either way is one convention."""
    shape = list(step.shape) + ([2] if step.dtype.startswith("complex") else [])
    if step.values is None or len(step.values) != math.prod(shape):
        return None
    t = step.values.reshape(shape)
    return t.masked_fill(t <= FILL, -math.inf)


def is_constant(t: torch.Tensor | None) -> bool:
    """A tensor of one repeated value (all -inf, all zeros): matching one is no sign of being back on
    track, any wrong input gives it (exp(m - m_new) of a running max started at -inf is 0)."""
    return t is not None and t.numel() > 1 and bool((t.flatten() == t.flatten()[0]).all())


def func_name(name: str) -> str:
    """A torch function's name without the spelling: ``__rmul__``, ``mul_`` and ``mul`` are ``mul``."""
    bare = name.strip("_")
    return _SAME_FUNC.get(bare, bare)


def op_name(name: str) -> str:
    """A torch function's name as the file writes the operation, for reading the file: also
    ``s - x`` (``__rsub__``) is ``sub`` and ``amax`` is ``max``."""
    bare = name.strip("_")
    return func_name(_AS_WRITTEN.get(bare, bare))


def tolerance(b: torch.Tensor, eps: float = 0.0) -> tuple[float, float]:
    """(rtol, atol) of :func:`close` against ``b``: the grader's tolerance (ten times), its absolute
    part scaled down for a tensor whose values are all tiny (mean(x²) of inputs near 1e-3 is about
    1e-6, where eps decides), and widened to a few ulps when either side was computed in a low
    precision (``eps``)."""
    finite = b[torch.isfinite(b)]
    scale = min(1.0, float(finite.abs().max())) if finite.numel() else 1.0
    return max(RTOL * 10, 4 * eps), max(ATOL * 10 * scale, 4 * eps * scale)


def close(a: torch.Tensor, b: torch.Tensor, eps: float = 0.0) -> bool:
    """Equal up to :func:`tolerance` of ``b``."""
    rtol, atol = tolerance(b, eps)
    return bool(torch.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True).all())


def first_close_window(t: torch.Tensor, axis: int, part: torch.Tensor, eps: float = 0.0,
                       tol: tuple[float, float] | None = None) -> int | None:
    """The first ``start`` where ``t.narrow(axis, start, n)`` is :func:`close` to ``part`` (``n`` its
    size along ``axis``, every other axis the same as ``t``'s), or None: every window compared at
    once, a few million elements at a time (a long input has hundreds of windows; comparing them one
    at a time took minutes on flash's long cases). ``tol``: ``tolerance(part, eps)`` when the caller
    has it already."""
    n = part.shape[axis]
    windows = t.shape[axis] - n + 1
    if windows < 1:
        return None
    rtol, atol = tol if tol is not None else tolerance(part, eps)
    # a window must hold the first line along the axis (every other index 0): the few that do are compared whole
    corner = (0,) * axis + (slice(None),) + (0,) * (t.dim() - axis - 1)
    line = torch.isclose(t[corner].unfold(0, n, 1), part[corner], rtol=rtol, atol=atol, equal_nan=True).all(dim=1)
    starts = line.nonzero().flatten().tolist()
    if len(starts) <= 8:
        return next((s for s in starts if bool(torch.isclose(t.narrow(axis, s, n), part, rtol=rtol, atol=atol,
                                                                 equal_nan=True).all())), None)
    want = part.movedim(axis, -1).unsqueeze(axis)  # (…, 1, …, n): the window axis broadcast
    chunk = max(1, 4_000_000 // max(1, part.numel()))
    for first in range(0, windows, chunk):
        count = min(chunk, windows - first)
        got = t.narrow(axis, first, count + n - 1).unfold(axis, n, 1)  # (…, count, …, n)
        same = torch.isclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        hits = same.movedim(axis, 0).reshape(count, -1).all(dim=1).nonzero()
        if hits.numel():
            return first + int(hits[0])
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


def names_of(name: str) -> set[str]:
    return {n.strip() for n in name.split(",") if n.strip()}
