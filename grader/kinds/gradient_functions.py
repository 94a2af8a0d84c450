"""Kind ``gradient_functions``: a backward pass written by hand, graded by the gradients it returns.

A :mod:`tensor_functions` kind (cases, outputs, mistakes as edits, all as data) whose outputs are
gradients. ``[grading] autograd`` declares what they are the gradients of: ``forward``, a function of
the reference solution; ``cotangent``, the input that is the upstream gradient; ``wrt``, the inputs
the gradients are taken of, in the order of ``outputs``. The other inputs, in call order, are the
forward's arguments (and the case's ``args`` its keywords). The expected outputs are autograd's
gradients of ``sum(forward(...) * cotangent)`` in float64, not the hand-written reference's values:
the reference is graded like any attempt (tests check it), and its edits are the named mistakes.

Autograd inside the attempt (a tensor made to require gradients, ``backward``, ``torch.autograd.grad``,
``torch.func``) is the built-in (:class:`~attnprep.grader.forbidden.AutogradWatch`).
``[grading] tolerances`` gives ``[rtol, atol]`` per dtype of the inputs (float32 rounds a sum of
products, float64 must be exact to ~1e-12).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import torch

from attnprep.grader.cases import Case
from attnprep.grader.forbidden import AutogradWatch
from attnprep.grader.kinds.tensor_functions import TensorFunctions, TensorGrading


@dataclass(frozen=True, kw_only=True)
class GradientGrading(TensorGrading):
    autograd: dict[str, Any]  # forward (a function of the solution), cotangent, wrt
    tolerances: dict[str, list[float]] = field(default_factory=dict)  # dtype -> [rtol, atol]


class GradientFunctions(TensorFunctions):
    Grading = GradientGrading

    def _make_cases(self, ci: int) -> list[Case]:
        return [dataclasses.replace(c, tolerance=self._tolerance_of(c)) for c in super()._make_cases(ci)]

    def _tolerance_of(self, case: Case) -> tuple[float, float] | None:
        """The dtype's tolerance, or the large-input one of tensor_functions where that is looser."""
        own = self.grading.tolerances.get(case.dtype)
        if own is not None:
            own = (float(own[0]), float(own[1]))
        if own is None or case.tolerance is None:
            return own or case.tolerance
        return max(own[0], case.tolerance[0]), max(own[1], case.tolerance[1])

    def run(self, attempt, case: Case) -> dict[str, Any]:
        with AutogradWatch(self.seen_builtins):
            return super().run(attempt, case)

    def _forward(self):
        """The reference's forward function, compiled from its file here (as :meth:`solution`)."""
        path = self.exercise.solution_path
        namespace: dict[str, Any] = {"__name__": "attnprep_reference"}
        exec(compile(path.read_text(encoding="utf-8"), str(path.resolve()), "exec"), namespace)  # our own reference
        return namespace[self.grading.autograd["forward"]]

    def reference(self, ci: int, zero_bias=frozenset()):
        """Autograd's gradients of the reference's forward on the case's values, in float64."""
        forward = self._forward()
        return lambda case: self.gradients(forward, case.inputs)

    def gradients(self, forward, inputs: dict[str, Any]) -> dict[str, torch.Tensor]:
        cotangent, wrt = self.grading.autograd["cotangent"], list(self.grading.autograd["wrt"])
        with torch.enable_grad():
            tensors = {k: v.detach().double().requires_grad_(k in wrt) if v.is_floating_point() else v
                       for k, v in inputs.items() if isinstance(v, torch.Tensor)}
            out = forward(*(t for k, t in tensors.items() if k != cotangent), **inputs["_args"])
            grads = torch.autograd.grad(out, [tensors[k] for k in wrt], tensors[cotangent].detach())
        return dict(zip(self.outputs, (g.detach() for g in grads)))


KIND = GradientFunctions
