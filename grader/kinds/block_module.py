"""Kind ``block_module``: an ``nn.Module`` made of sub-layers around a causal self-attention (a
transformer block: norms, attention, feed-forward, residuals) whose ``forward(x, attention_mask=None)``
returns ``(B, T, d_model)``; the attention is always causal, so there is no ``is_causal`` flag.

Everything is the ``plain_module`` kind's except the inputs: the parameters, linear and norm alike,
mapped to the contract's roles by name, by the aliases a role declares (Hugging Face's
``input_layernorm``), by the last part of a nested name (``self_attn.q_proj``), else by shape, the
grading process choosing among same-shaped layers by a probe (two norms of one shape are tried in both
assignments); the mistakes are named edits of the reference solution (``[grading] edits``), two at
once both edits. The cases are the token-sequence cases every attention module gets, those with the
causal flag (unpadded, right- and left-padded, one token) with their causality, padding, batch and
eval probes; gradients are graded on the unpadded case (a padded query row whose keys are all masked
would make NaN there).

Exercise data (``[grading]``): ``configs`` (the constructor's arguments), ``kv_heads`` (the KV head
count, an expression of the config), ``knobs`` and ``edits``.
"""

from __future__ import annotations

from typing import Any

import torch

from attnprep.grader.cases import Case, again, plus_causal, rows, sequence_cases, to_case
from attnprep.grader.kinds.attention_module import AttentionModule
from attnprep.grader.kinds.base import ATTENTION_STAGES, first
from attnprep.grader.kinds.plain_module import PlainModule


class BlockModule(PlainModule):
    traits = frozenset({"attention", "rows"})  # a causal self-attention inside; no low precision case
    probes = frozenset({"causality", "padding", "batch", "eval", "gradients", "device", "softmax_rows"})
    stages = ATTENTION_STAGES  # q, kᵀ, scores … of its attention in the shapes panel
    forward_key = "block_module.forward_signature"
    forward_positional = 2  # x, attention_mask

    # --- shared -------------------------------------------------------------------------------

    def _make_cases(self, ci: int) -> list[Case]:
        d_model = self.configs[ci]["d_model"]
        made = sequence_cases({"x": (d_model,)}, self.seed, ci)
        cases = []
        for s in made:
            if not s.is_causal and s.check != "eval":  # the block is causal: these are its causal twins
                continue
            if s.check == "eval":  # a second call of the unpadded case
                s.base = plus_causal(s.base)
                s.name = again(s.base)
            inputs = {"x": s.tensors["x"], "attention_mask": s.mask}
            cases.append(to_case(s, inputs, lambda positions: {"out": rows(positions, 1, 3)}))
        return cases

    def expected_shapes(self, ci: int, case: Case) -> dict[str, tuple[int, ...]]:
        B, T = case.queries.shape
        return {"out": (B, T, self.configs[ci]["d_model"])}

    def axis_names(self, ci: int, case: Case) -> dict[str, int]:
        """``(B, T, C)``, ``(B, H, T, D)`` and the config's other sizes by their own names (``d_ff``)."""
        sizes = {k: v for k, v in self.sizes(ci).items() if isinstance(v, int) and not isinstance(v, bool)}
        return {**sizes, **AttentionModule.axis_names(self, ci, case)}

    @staticmethod
    def call(module, case: Case):
        i = case.inputs  # the child compares them before and after: a change in place is named
        return module(i["x"], i["attention_mask"])

    def head_counts(self, ci: int) -> tuple[int, ...]:
        return AttentionModule.head_counts(self, ci)  # a fused qkv layer, per-head layers

    # --- child --------------------------------------------------------------------------------

    def run(self, attempt, case: Case) -> dict[str, Any]:
        return {"out": first(self.call(attempt, case))}

    # --- parent -------------------------------------------------------------------------------

    def _runner(self, cls: type, ci: int, zero_bias):
        module = self._module(cls, ci, zero_bias, "float32")
        return lambda case: {"out": first(self.call(module, case))}

    def trail_reference(self, ci: int, zero_bias=frozenset()):
        return self.reference(ci, zero_bias)

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        T = case.queries.shape[1]
        allowed = torch.ones(T, T, dtype=torch.bool).tril()
        mask = case.inputs["attention_mask"]
        return allowed if mask is None else allowed & mask[sample][None, :]


KIND = BlockModule
