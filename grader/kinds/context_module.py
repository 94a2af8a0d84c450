"""Kind ``context_module``: an ``nn.Module`` that attends from one sequence to another,
``forward(x, context, context_mask=None)`` -> ``(B, T, d_model)``.

Queries come from ``x (B, T, d_model)``, keys and values from ``context (B, S, d_context)``;
``context_mask (B, S)`` bool (True = real) masks padded context tokens as keys. There is no causal
mask and no padded query: every output row is graded. Everything else is the ``attention_module``
kind's (this is a subclass): the parameters mapped to the contract's roles by name, else by shape
with the mapping probe answered on the grading side, seeded weights, the dropout argument optional.

Exercise data (``[grading]``): ``configs`` with the constructor's arguments and the two lengths
``T`` (queries) and ``S`` (context tokens); ``defaults``, sizes a config leaves to the
constructor's default (``d_context = "d_model"``); ``knobs``, the mistakes tried, in order. A
config with ``T == S`` keeps every case square (its ``T=1`` case has one context token), so that
slips which only compute at equal lengths and widths (keys projected from ``x``) compute there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from attnprep.grader import variants
from attnprep.grader.cases import (LEFT_PADDED, PADDED, PLAIN, T1, Case, again_in_eval, alone, changed, generator, left_mask,
                                   lengths_mask, rows)
from attnprep.grader.kinds.attention_module import AttentionModule, ModuleGrading
from attnprep.grader.kinds.base import ModuleConfig


def _linear(weights, role, x):
    w = weights[role]
    return F.linear(x, w["weight"], w.get("bias"))


def cross(sizes: dict, weights: dict, x, context, context_mask, mistake: str = "", fill: float = float("-inf")):
    """Multi-head cross-attention with the mistakes as knobs (see :mod:`attnprep.grader.variants`): one,
    or two made together."""
    mistake = variants.slips(mistake)
    B, T, C = x.shape
    S = context.shape[1]
    H = sizes["num_heads"]
    D = C // H
    from_x = variants.pick({"cross_kv_from_x": "kv", "cross_kv_from_x:k": "k", "cross_kv_from_x:v": "v"}, mistake, "")
    q = _linear(weights, "q_proj", x)
    k = _linear(weights, "k_proj", x if "k" in from_x else context)
    v = _linear(weights, "v_proj", x if "v" in from_x else context)

    def split(t):
        n = t.shape[1]
        if mistake == "split_heads_no_transpose":
            return t.reshape(B, H, n, D)
        return t.view(B, n, H, D).transpose(1, 2)  # (B, H, n, D)

    q, k, v = split(q), split(k), split(v)
    scale = variants.head_scale(D, mistake, {"scale_d_model": 1 / math.sqrt(C),
                                             "cross_scale_d_context": 1 / math.sqrt(sizes["d_context"]),
                                             "cross_scale_d_context:per_head": 1 / math.sqrt(sizes["d_context"] // H)})
    causal = mistake == "cross_causal_mask"  # tril(ones(T, S)): the decoder's self-attention mask copied
    out = variants.attend(q, k, v, context_mask, causal, scale, mistake, fill)  # (B, H, T, D)
    if mistake == "merge_heads_no_transpose":
        out = out.reshape(B, T, C)
    else:
        out = out.transpose(1, 2).reshape(B, T, C)
    return out if mistake == "output_proj_skipped" else _linear(weights, "o_proj", out)


@dataclass(frozen=True, eq=False, kw_only=True)
class ContextConfig(ModuleConfig):
    T: int  # the queries' length
    S: int  # the context's length


class ContextModule(AttentionModule):
    Grading = ModuleGrading  # its variants are cross(): no model, kv_heads or fused form of its own
    Config = ContextConfig
    probes = frozenset({"padding", "batch", "eval", "gradients", "device", "softmax_rows"})
    pair_knobs = True  # its variants take two knobs at once (variants.slips)
    mask_fills = False  # … and one fill for every mask (not a variants.MaskFills)
    forward_key = "context_module.forward_signature"  # forward(x, context, context_mask=None)

    def cases(self, ci: int) -> list[Case]:
        c = self.sizes(ci)
        return context_cases(c["d_model"], c["d_context"], c["T"], c["S"], self.seed, ci)

    def config_params(self, ci: int) -> dict[str, Any]:
        return self.sizes(ci)

    @staticmethod
    def call(module, case: Case):
        i = case.inputs
        mask = i["context_mask"]
        return module(i["x"].clone(), i["context"].clone(), None if mask is None else mask.clone())

    def variant(self, ci: int, zero_bias, knob: str, fill: float):
        sizes = self.sizes(ci)
        weights = self.role_weights(ci, zero_bias)

        def call(case: Case):
            i = case.inputs
            try:
                return {"out": cross(sizes, weights, i["x"], i["context"], i["context_mask"], knob, fill)}
            except RuntimeError:  # the slip raises at these sizes: it computes nothing to compare
                return {"out": torch.full((0,), math.nan)}

        return call

    def allowed(self, case: Case, sample: int) -> torch.Tensor:
        T, S = case.seq
        mask = case.inputs["context_mask"]
        allowed = torch.ones(T, S, dtype=torch.bool)
        return allowed if mask is None else allowed & mask[sample][None, :]


def context_cases(d_model: int, d_context: int, T: int, S: int, seed: int, ci: int) -> list[Case]:
    """Right- and left-padded contexts, one query, the perturbations of the padding, batch and eval
    probes. Every query row is real and graded; a padded context token is a key nobody may see."""
    g = generator(seed, ci)
    square = T == S

    def draw(B: int, t: int, s: int) -> dict[str, torch.Tensor]:
        return {"x": torch.randn(B, t, d_model, generator=g), "context": torch.randn(B, s, d_context, generator=g)}

    def case(name, tensors, mask, **kw) -> Case:
        B, t = tensors["x"].shape[:2]
        everywhere = torch.ones(B, t, dtype=torch.bool)
        unchanged = {"out": rows(everywhere, 1, 3)} if kw.get("base") else None
        return Case(name=name, inputs={**tensors, "context_mask": mask}, queries=everywhere,
                    seq=(t, tensors["context"].shape[1]), graded={"out": rows(everywhere, 1, 3)},
                    unchanged=unchanged, **kw)

    def repad(tensors, mask) -> dict[str, torch.Tensor]:
        """The same inputs with new values at the padded context tokens."""
        fresh = torch.randn(tensors["context"].shape, generator=g)
        return {"x": tensors["x"], "context": torch.where(mask[..., None], tensors["context"], fresh)}

    right = lengths_mask([S, max(1, S - 3), 1], S)  # (3, S): a full row, a shorter one, one token
    left = left_mask([0, min(3, S - 1), S - 1], S)  # (3, S): padding first, as for batched generate
    one = 1 if square else S  # the T=1 case's context length
    one_mask = lengths_mask([one, max(1, one - 2)], one)
    main, padded, lpadded, single = draw(2, T, S), draw(3, T, S), draw(3, T, S), draw(2, 1, one)
    cases = [
        case(PLAIN, main, None),
        case(PADDED, padded, right, observe=True, picture=True),
        case(LEFT_PADDED, lpadded, left, picture=True),
        case(T1, single, one_mask),
        # perturbations
        case(changed(PADDED, "padding"), repad(padded, right), right, base=PADDED, check="padding"),
        case(changed(LEFT_PADDED, "padding"), repad(lpadded, left), left, base=LEFT_PADDED, check="padding"),
        case(alone(None, 2), {k: v[1:2].clone() for k, v in padded.items()}, right[1:2].clone(), base=PADDED,
             base_rows=(1, 2), check="batch"),
        case(again_in_eval(PLAIN), main, None, base=PLAIN, check="eval"),
    ]
    if not one_mask.all():
        cases.insert(-2, case(changed(T1, "padding"), repad(single, one_mask), one_mask, base=T1, check="padding"))
    return cases


KIND = ContextModule
