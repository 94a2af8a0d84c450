"""Built-ins an exercise forbids, recognised by what runs rather than by the Python name called.

A :class:`ForbiddenOps` watches aten ops by their kernels: an op that runs reaches its kernel,
whichever Python name called it, or none (``torch.softmax``, ``F.softmax``, ``Tensor.softmax``,
``nn.Softmax``, ``F.softmin``, ``torch.special.softmax``, ``torch.ops.aten._softmax``, a call under
``torch._C.DisableTorchFunction()``, a TorchScript function all run the one op ``aten._softmax``;
``log_softmax`` and ``CrossEntropyLoss`` run ``aten._log_softmax``). The names come from the
exercise's data (``[grading] forbidden``: aten op -> what the report calls it); a kind enters one
around each call of the attempt and hands what it saw to the child's built-in list.

The first watch of an op in a process (or :func:`watch`, which the grading process calls before it
forks any child, for the ops every child watches) puts a small Python kernel in front of the op's own, for
each dispatch key a tensor reaches it with (CPU, CUDA, Meta, nested …; see
``torch.library.get_kernel``): it notes the op for every watch entered at the time and calls the
op's own kernel. Every other op runs as it would unwatched. (A ``TorchDispatchMode``, which this
was, makes every aten op a Python call, about 6 µs each: a quarter of a grading child's time.) An
op whose only kernel is a decomposition (``CompositeImplicitAutograd``, e.g. ``cross_entropy_loss``)
has no kernel of its own to watch: the ops it decomposes into run theirs. The watch holds for
every thread of the process while it is entered (a dispatch mode held for its own thread only).

An :class:`AutogradWatch` (a ``TorchFunctionMode``) sees autograd itself used inside a call: the
built-in of an exercise whose job is a backward pass.
"""

from __future__ import annotations

import threading
import warnings

import torch
from torch.overrides import TorchFunctionMode

# Where a tensor of this process can reach an op's kernel (those this torch build knows).
_KEYS = tuple(k for k in ("CPU", "CUDA", "Meta", "NestedTensorCPU", "NestedTensorCUDA", "MkldnnCPU", "SparseCPU",
                          "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "QuantizedCPU", "QuantizedCUDA", "MPS", "XPU")
              if k in torch._C.DispatchKey.__members__)
_entered: list[tuple[dict[str, str], set[str]]] = []  # the watches entered and not yet exited
_watched: set[str] = set()  # the ops ("aten._softmax") whose kernels have a watch in front, in this process
_libraries: dict[str, torch.library.Library] = {}  # namespace -> the registrations (alive as long as they are)


class _Within(threading.local):
    depth = 0  # watched kernels running in this thread, one inside the other


_within = _Within()


def _noting(op: str, kernel):
    """The kernel put in front of ``kernel`` (an overload of ``op``'s, at one dispatch key). An op
    that a watched op's own kernel runs (``_safe_softmax`` runs ``_softmax``) is that op's doing:
    the one the attempt called is noted, not what it is made of (as a dispatch mode saw it)."""

    def noted(keyset, *args, **kwargs):
        if not _within.depth:
            for names, seen in tuple(_entered):
                shown = names.get(op)
                if shown is not None:
                    seen.add(f"{shown} ({op})")
        _within.depth += 1
        try:
            return kernel.call_boxed(keyset, *args, **kwargs)
        finally:
            _within.depth -= 1

    return noted


def _watch(op: str) -> None:
    """Put the noting kernel in front of every kernel of ``op`` ("aten._softmax"), once per process.
    An op this torch build does not have is skipped: nothing can run it."""
    if op in _watched:
        return
    _watched.add(op)
    namespace, _, name = op.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        overloads = packet.overloads()
    except (AttributeError, RuntimeError):
        return
    library = _libraries.get(namespace)
    if library is None:
        library = _libraries[namespace] = torch.library.Library(namespace, "IMPL")
    with warnings.catch_warnings():  # "Overriding a previously registered kernel": that is the point
        warnings.simplefilter("ignore")
        for overload in overloads:
            qualified = f"{namespace}::{name}" + ("" if overload == "default" else f".{overload}")
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"):
                continue  # a decomposition: a kernel in front would replace its autograd (see the module)
            for key in _KEYS:
                if torch._C._dispatch_has_computed_kernel_for_dispatch_key(qualified, key):
                    kernel = torch.library.get_kernel(qualified, key)
                    library.impl(qualified.split("::")[1], _noting(op, kernel), key, with_keyset=True)


def watch(names) -> None:
    """Put the noting kernel in front of the kernels of each op of ``names`` now (see :func:`_watch`),
    rather than at the first :class:`ForbiddenOps` entered. The grading process does it once for the
    ops every child watches (``engine.warm_up``): a forked child inherits the kernels in place, where
    putting them there itself cost each child 10-14 ms of CPU (the dispatcher's tables written on
    pages it shares with the grading process, copied on write). Outside a watch the kernel only calls
    the op's own (nothing is entered, nothing is noted): the op's results are the same."""
    for op in names:
        _watch(op)


class ForbiddenOps:
    """While entered, notes in ``seen`` each op of ``names`` that runs, as "softmax (aten._softmax)"."""

    def __init__(self, names: dict[str, str], seen: set[str]):
        self.names = dict(names)  # "aten._softmax" -> "softmax"
        self.seen = seen  # filled with "softmax (aten._softmax)"
        self._entry = (self.names, self.seen)

    def __enter__(self):
        for op in self.names:
            _watch(op)
        _entered.append(self._entry)
        return self

    def __exit__(self, *exc):
        for i in range(len(_entered) - 1, -1, -1):
            if _entered[i] is self._entry:
                del _entered[i]
                break
        return False


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
