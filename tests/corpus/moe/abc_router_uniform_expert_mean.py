# attnprep: moe
# expect: wrong_output
# diagnosis: moe_outputs_averaged
"""An abc.ABC `Router` with `select(logits) -> (idx, weights)` and a `TopKRouter` subclass; the
combine step is a `Combiner` strategy object chosen in __init__. The router's weights are computed
right, but the `MeanCombiner` picked ignores them and averages the chosen experts' outputs."""

import abc

import torch
import torch.nn as nn
import torch.nn.functional as F


class Router(abc.ABC):
    @abc.abstractmethod
    def select(self, logits): ...


class TopKRouter(Router):
    def __init__(self, k):
        self.k = k

    def select(self, logits):
        top, idx = logits.topk(self.k, dim=-1)
        return idx, top.softmax(-1)


class MeanCombiner:
    def combine(self, outs, weights):
        return outs.mean(dim=1)


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1 = nn.Linear(d_model, d_ff, bias=False)
        self.w2 = nn.Linear(d_ff, d_model, bias=False)
        self.w3 = nn.Linear(d_model, d_ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])
        self.router, self.combiner = TopKRouter(top_k), MeanCombiner()

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        idx, weights = self.router.select(self.gate(flat))
        all_out = torch.stack([e(flat) for e in self.experts], dim=1)  # (N, E, C)
        chosen = all_out.gather(1, idx[..., None].expand(-1, -1, C))  # (N, k, C)
        return self.combiner.combine(chosen, weights).view(B, T, C)
# bug-line: 31
