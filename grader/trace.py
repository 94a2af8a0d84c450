"""A trail of tensor operations with the source line that made each result.

:class:`Tracer` is a ``TorchFunctionMode``: every torch function a piece of code calls passes
through it. For each call whose result is a tensor derived from the traced inputs (the case's
tensors and the module's parameters), it keeps a :class:`Step`: the line of the traced file that
made it (the innermost frame in that file: a call inside ``nn.Linear`` is charged to the user's
``self.q_proj(x)`` line), the function, the shape, which earlier steps it was computed from, and its
values. The child records the attempt's trail this way, the grading process the reference's; the
divergence finder (:mod:`.divergence`) compares the two.
"""

from __future__ import annotations

import linecache
import sys
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode

MAX_STEPS = 400  # a trail longer than this is cut (a loop over tokens)
MAX_VALUES = 20_000  # values kept per step; bigger tensors keep their shape only
_SKIP = {"__get__", "__set__", "size", "dim", "numel", "__len__", "__bool__", "__index__", "__int__", "__float__",
         "item", "tolist", "is_floating_point", "data_ptr", "stride", "element_size", "__repr__", "__format__"}


@dataclass
class Step:
    line: int
    code: str
    func: str
    shape: list[int]
    dtype: str
    parents: list[int] = field(default_factory=list)  # indices of earlier steps it was computed from
    values: list[float] | None = None  # flattened float64, None when too big
    free: bool = False  # made by the file without the inputs (a mask from torch.ones(T, T) …)

    def to_data(self) -> list:
        return [self.line, self.code, self.func, self.shape, self.dtype, self.parents, self.values, self.free]

    @classmethod
    def from_data(cls, data) -> "Step":
        line, code, func, shape, dtype, parents, values, free = data
        if not (isinstance(line, int) and isinstance(code, str) and isinstance(func, str) and isinstance(shape, list)
                and all(isinstance(n, int) for n in shape) and isinstance(parents, list)
                and all(isinstance(p, int) for p in parents) and (values is None or isinstance(values, list))
                and isinstance(free, bool)):
            raise ValueError("malformed trail step")
        return cls(line, code[:200], func[:80], shape, str(dtype)[:20], parents, values, free)


def _tensors(obj, out):
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors(o, out)
    return out


class Tracer(TorchFunctionMode):
    """Record the steps derived from ``sources`` that a file's lines make (see the module doc)."""

    def __init__(self, sources, filename: str):
        super().__init__()
        self.filename = filename
        self.keep = list(sources)  # keep the tensors alive: their ids must not be reused
        self.index: dict[int, int] = {id(t): -1 for t in sources}  # tensor id -> step (-1: a source)
        self.steps: list[Step] = []
        self.raised_at: int | None = None  # the line of the file where an exception left
        self.marks: list[tuple[int, str]] = []  # (first step, label) of each part of a run (see mark())

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name in _SKIP or len(self.steps) >= MAX_STEPS:
            return out
        try:
            self._record(name, args, kwargs, out)
        except Exception:  # recording must never change what the code computes
            pass
        return out

    def _where(self) -> tuple[int, str] | None:
        frame = sys._getframe(3)
        while frame is not None:
            if frame.f_code.co_filename == self.filename:
                return frame.f_lineno, linecache.getline(self.filename, frame.f_lineno).strip()
            frame = frame.f_back
        return None

    def _record(self, name, args, kwargs, out) -> None:
        inputs = _tensors((args, kwargs), [])
        parents = [self.index[id(t)] for t in inputs if id(t) in self.index]
        results = _tensors(out, [])
        if not results:
            return
        if not parents:  # made without the inputs: kept (as free) when the file makes it, a mask say
            where = self._where()
            if where is None or len(results) != 1 or results[0].dim() < 2:
                return
            self._step(where, name, results[0], [], free=True)
            return
        free = all(p >= 0 and self.steps[p].free for p in parents)
        where = self._where()
        if where is None:  # made outside the file (the grader's clone of an input): derived, not a step
            for result in results:
                if id(result) not in self.index:
                    self.index[id(result)] = max(parents)
                    self.keep.append(result)
            return
        for result in results[:1] if not isinstance(out, (list, tuple)) else results:
            if id(result) in self.index and self.index[id(result)] == -1:
                continue  # an in-place op on a source
            self._step(where, name, result, parents, free)

    def _step(self, where, name, result, parents, free: bool) -> None:
        data = result.detach()
        values = None
        if data.numel() <= MAX_VALUES and data.device.type != "meta" and not data.is_complex():
            values = data.to("cpu", torch.float64).flatten().tolist()
        self.steps.append(Step(where[0], where[1], name, list(data.shape), str(data.dtype).replace("torch.", ""),
                               sorted({p for p in parents if p >= 0}), values, free))
        self.index[id(result)] = len(self.steps) - 1
        self.keep.append(result)

    def mark_outputs(self, outputs) -> dict[str, int]:
        """The steps that made the named outputs of a run (``{"out": tensor}``), by output name."""
        found = {}
        if isinstance(outputs, dict):
            for key, value in outputs.items():
                tensors = _tensors(value, [])
                if tensors and id(tensors[0]) in self.index and self.index[id(tensors[0])] >= 0:
                    found[str(key)[:80]] = self.index[id(tensors[0])]
        return found

    def note_exception(self, exc: BaseException) -> None:
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == self.filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        self.raised_at = line


def mark(label: str) -> None:
    """Note in every active :class:`Tracer` that the steps from here on belong to ``label`` (one call
    of a script of calls: "step 3 (pos 6..8)"); nothing when none is active."""
    for mode in torch.overrides._get_current_function_mode_stack():
        if isinstance(mode, Tracer):
            mode.marks.append((len(mode.steps), str(label)[:80]))
