"""Built-ins an exercise forbids, recognised by what runs rather than by the Python name called.

A :class:`ForbiddenOps` is a ``TorchDispatchMode``: every aten op the attempt runs passes through
it below the Python API, so ``torch.softmax``, ``F.softmax``, ``Tensor.softmax``, ``nn.Softmax``,
``F.softmin``, ``torch.special.softmax`` and ``torch.ops.aten._softmax`` all show up as the one op
``aten._softmax`` (and ``log_softmax``, ``CrossEntropyLoss`` as ``aten._log_softmax``). The names
come from the exercise's data (``[grading] forbidden``: aten op -> what the report calls it); a kind
enters one around each call of the attempt and hands what it saw to the child's built-in list.
"""

from __future__ import annotations

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
