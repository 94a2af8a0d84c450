"""Kind ``plain_module``: one ``nn.Module`` of the contract whose ``forward(x)`` maps ``x (..., d_in)``
token by token (a feed-forward block, an adapter, a projection …): no mask, no cache.

The module is built from each graded config; its parameters are mapped to the contract's roles as
the attention modules' are (:mod:`attnprep.grader.weights`: by name, by the aliases a role declares
in ``[contract] params`` (``aliases = ["gate_proj"]``), else by shape, the grading process choosing
among same-shaped layers by a probe; a layer stacking several roles is mapped by rows) and loaded
with seeded weights. It is called on ``x`` of rank 2, 3 and 4, and once with the module and ``x``
in bfloat16, compared with the exact result to four bfloat16 ulps at 1 (it must come back
in bfloat16). Probes: batch (a sample alone equals its row of the batch), eval (a second call gives
the same output), gradients, device.

Mistakes are named edits of the reference solution (``[grading] edits``: knob -> a list of
``{old, new}`` replacements, each ``old`` found exactly once in ``solutions/<id>.py``); two knobs at
once are both edits made together. A knob ``mistake:part`` is a sub-variant of ``mistake``.

Exercise data (``[grading]``): ``configs`` (the constructor's arguments), ``input`` and ``output``
(the config sizes that are ``x``'s and the output's last dim, default ``d_model``: a LoRA layer's
``in_features`` / ``out_features``), ``knobs`` and ``edits``.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from attnprep.grader.cases import Case, again, alone, generator, low_precision, x_of
from attnprep.grader.copies import module_copy
from attnprep.grader.kinds.attention_module import AttentionModule, ModuleGrading
from attnprep.grader.kinds.base import first
from attnprep.grader.edits import EditError, EditedReference, edited_source, knobs_of  # noqa: F401  (kinds built on this one import them here)

LOW = ("bfloat16", torch.bfloat16)
MAIN = x_of("(2, 7, d)")


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) of four ulps at 1 of ``dtype`` against the exact result: every product and sum
    inside the module rounds to ``dtype``; outputs are of order 1 or below."""
    eps = torch.finfo(dtype).eps
    return 4 * eps, 4 * eps


@dataclass(frozen=True, kw_only=True)
class PlainGrading(ModuleGrading):
    edits: dict[str, list[dict]] = field(default_factory=dict)  # knob -> its {old, new} edits of the solution
    input: str = "d_model"  # the config size that is x's last dim
    output: str = ""  # the config size that is the output's last dim ("": input's)
    fill: str = ""  # the reference's mask fill as written (float("-inf")): each variant is tried with -1e9 too


class PlainModule(AttentionModule):
    Grading = PlainGrading
    traits = frozenset({"low_precision"})  # no attention: none of AttentionModule's
    probes = frozenset({"batch", "eval", "gradients", "device"})
    pair_knobs = True  # two knobs at once: both edits made together
    mask_fills = False
    stages = ()  # no attention stages (q, kᵀ, scores …) in the shapes panel
    leaf_names = True  # a block nested in a wrapper (torchtune's self.mlp.w1) is still mapped by name
    forward_key = "plain_module.forward_signature"
    forward_positional = 1  # x

    def __init__(self, exercise, seed: int):
        super().__init__(exercise, seed)
        self.input = self.grading.input
        self.edits: dict[str, list[dict]] = {k: list(v) for k, v in self.grading.edits.items()}
        self.edited = EditedReference(exercise.solution_path, self.edits, self.grading.fill)
        self._cases: dict[int, list[Case]] = {}
        self._low: tuple[Any, torch.nn.Module] | None = None  # (the attempt, its low-precision copy), child

    # --- shared -------------------------------------------------------------------------------

    def cases(self, ci: int) -> list[Case]:
        if ci not in self._cases:
            self._cases[ci] = self._make_cases(ci)
        return self._cases[ci]

    def _make_cases(self, ci: int) -> list[Case]:
        d = self.configs[ci][self.input]
        g = generator(self.seed, ci, "plain module cases")

        def case(name: str, x: torch.Tensor, **more) -> Case:
            lead = x.shape[:-1]
            B, T = (1, lead[0]) if len(lead) == 1 else (lead[0], lead[-1])
            return Case(name, {"x": x}, torch.ones(B, T, dtype=torch.bool), (T, T), **more)

        main = torch.randn(2, 7, d, generator=g)
        low = torch.randn(2, 7, d, generator=g).to(LOW[1])
        return [
            case(MAIN, main, observe=True, grads=True),
            case(x_of("(5, d)"), torch.randn(5, d, generator=g)),
            case(x_of("(2, 3, 4, d)"), torch.randn(2, 3, 4, d, generator=g)),
            case(x_of("(3, 5, d) * 4", "large_activations"), 4 * torch.randn(3, 5, d, generator=g)),
            case(x_of("(1, 1, d)"), torch.randn(1, 1, d, generator=g)),
            case(low_precision("bfloat16", "(2, 7, d)"), low, dtype=LOW[0], tolerance=tolerance(LOW[1])),
            # the probes: a sample alone, a second call
            case(alone(None, 2), main[1:2].clone(), base=MAIN, base_rows=(1, 2), check="batch"),
            case(again(MAIN), main.clone(), base=MAIN, check="eval"),
        ]

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        x = case.inputs["x"]
        out = self.grading.output or self.input
        return {"out": (*x.shape[:-1], self.sizes(ci)[out])}

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """Sizes by the names shapes are written with: ``(N, d_model)``, ``(B, T, d_model)``,
        ``(B, S, T, d_model)``, and the config's other sizes by their own names (``d_ff``)."""
        lead = tuple(case.inputs["x"].shape[:-1])
        names = {1: ("N",), 2: ("B", "T"), 3: ("B", "S", "T")}.get(len(lead), ())
        sizes = {k: v for k, v in self.sizes(ci).items() if isinstance(v, int) and not isinstance(v, bool)}
        return {**dict(zip(names, lead)), **sizes}

    @staticmethod
    def call(module, case: Case):
        return module(case.inputs["x"])

    def head_counts(self, ci: int) -> tuple[int, ...]:
        return ()  # no heads: no per-head layers (stacked layers are still mapped by rows)

    # --- child --------------------------------------------------------------------------------

    def run(self, attempt, case: Case) -> dict[str, Any]:
        module = attempt
        if case.dtype != "float32":  # a copy in that dtype, made once per built attempt, after its weights are loaded
            if self._low is None or self._low[0] is not attempt:
                self._low = (attempt, module_copy(attempt).to(getattr(torch, case.dtype)))
            module = self._low[1]
        return {"out": first(self.call(module, case))}

    # --- parent -------------------------------------------------------------------------------

    def variant_class(self, knobs: tuple[str, ...], fill: float | None = None) -> type:
        """The reference's class with the edits of ``knobs`` made and its mask fill (``[grading]
        fill``, every mask's) written as ``fill`` (compiled once per knob set and fill)."""
        return self.edited.namespace(knobs, fill)[self.object]

    def _module(self, cls: type, ci: int, zero_bias, dtype: str) -> torch.nn.Module:
        """``cls`` built for config ``ci`` with the seeded weights; for a low precision, in float64
        with the weights rounded to that dtype (the exact result of the attempt's own numbers)."""
        module = cls(*self.args(ci)).eval()
        with torch.no_grad():
            for role, tensors in self.role_weights(ci, zero_bias).items():
                sub = module.get_submodule(role)
                for name, value in tensors.items():
                    if dtype != "float32":
                        value = value.to(getattr(torch, dtype))
                    getattr(sub, name).data = value.double() if dtype != "float32" else value.clone()
        return module

    def _runner(self, cls: type, ci: int, zero_bias):
        modules: dict[str, torch.nn.Module] = {}

        def call(case: Case):
            if case.dtype not in modules:
                modules[case.dtype] = self._module(cls, ci, zero_bias, case.dtype)
            x = case.inputs["x"]
            return self._outputs(modules[case.dtype], case, x if case.dtype == "float32" else x.double())

        return call

    def _outputs(self, module, case: Case, x: torch.Tensor) -> dict[str, Any]:
        """The named outputs of ``module`` on ``x`` (a kind that grades more than forward adds them)."""
        return {"out": first(module(x))}

    def reference(self, ci: int, zero_bias=frozenset()):
        return self._runner(self.solution(), ci, zero_bias)

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        """The reference run as the attempt is (for the divergence finder): float32 weights, the
        module converted to the case's dtype and called on its input as it is."""
        module = self._module(self.solution(), ci, zero_bias, "float32")

        def call(case: Case):
            m = module if case.dtype == "float32" else copy.deepcopy(module).to(getattr(torch, case.dtype))
            return {"out": first(self.call(m, case))}

        return call

    def variant(self, ci: int, zero_bias, knob, fill: float):
        """The reference with the mistake ``knob`` (or the knobs of a tuple, made together), its masks
        filled with ``fill`` where ``[grading] fill`` names the reference's (a padded query row whose
        keys are all masked is then uniform, as with any finite fill, not NaN); compiled when first
        called: two knobs whose edits clash raise there, which names nothing."""
        knobs = knobs_of(knob)
        if not knobs:
            return self.reference(ci, zero_bias)
        runner = None

        def call(case: Case):
            nonlocal runner
            if runner is None:
                masking = self.grading.fill and isinstance(fill, float) and fill <= -1e4  # a mask's fill, not a placeholder
                runner = self._runner(self.variant_class(knobs, fill if masking else None), ci, zero_bias)
            return runner(case)

        return call


KIND = PlainModule
