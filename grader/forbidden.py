"""Built-ins an exercise forbids, recognised by what runs rather than by the Python name called.

A :class:`ForbiddenOps` is a ``TorchDispatchMode``: every aten op the attempt runs passes through
it below the Python API, so ``torch.softmax``, ``F.softmax``, ``Tensor.softmax``, ``nn.Softmax``,
``F.softmin``, ``torch.special.softmax`` and ``torch.ops.aten._softmax`` all show up as the one op
``aten._softmax`` (and ``log_softmax``, ``CrossEntropyLoss`` as ``aten._log_softmax``). The names
come from the exercise's data (``[grading] forbidden``: aten op -> what the report calls it); a kind
enters one around each call of the attempt and hands what it saw to the child's built-in list.

An :class:`AutogradWatch` (a ``TorchFunctionMode``) sees autograd itself used inside a call: the
built-in of an exercise whose job is a backward pass.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


class ForbiddenOps(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch wraps a mode's __torch_dispatch__ in dynamo.disable by default, and its first call
        # imports torch._dynamo (seconds); nothing is compiled while an attempt is graded
        return False

    def __init__(self, names: dict[str, str], seen: set[str]):
        super().__init__()
        self.names = dict(names)  # "aten._softmax" -> "softmax"
        self.seen = seen  # filled with "softmax (aten._softmax)"
        self._ops: dict = {}  # op overload -> its packet's name (formatting it for every op costs more than the op)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        op = self._ops.get(func)
        if op is None:
            op = self._ops[func] = str(getattr(func, "overloadpacket", func))
        if op in self.names:
            self.seen.add(f"{self.names[op]} ({op})")
        return func(*args, **(kwargs or {}))


class AutogradWatch(TorchFunctionMode):
    """Autograd used inside a call: a tensor made to require gradients, ``backward`` or
    ``torch.autograd.grad`` called (``torch.func.vjp`` / ``grad`` and ``torch.autograd.functional``
    call them too), or a result that joins an autograd graph. Where a hand-written backward pass is
    the exercise, autograd is its built-in. The attempt runs under ``no_grad``: a plain tensor
    computation never builds a graph, so nothing here fires on hand-written code."""

    def __init__(self, seen: set[str]):
        super().__init__()
        self.seen = seen
        self.calls = {torch.Tensor.backward: "Tensor.backward", torch.autograd.grad: "torch.autograd.grad",
                      torch.autograd.backward: "torch.autograd.backward",
                      torch.Tensor.requires_grad_: "Tensor.requires_grad_"}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = self.calls.get(func)
        if name is not None and (func is not torch.Tensor.requires_grad_ or (args[1] if len(args) > 1 else kwargs.get("requires_grad", True))):
            self.seen.add(f"autograd ({name})")
        out = func(*args, **kwargs)
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                self.seen.add("autograd (a graph built)")
                break
        return out
