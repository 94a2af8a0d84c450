# attnprep: moe
# expect: passed
"""Correct: the token-choice dispatch of Megablocks / JetMoE done with plain torch: the (token, slot)
pairs sorted by expert with a stable argsort, `torch.bincount(minlength=E)` giving the group sizes,
`torch.split` cutting the sorted rows into per-expert groups, a generator expression running each
expert on its group, and index_add_ scattering the weighted rows back."""

import torch
import torch.nn as nn
import torch.nn.functional as F


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
        self.num_experts, self.top_k = num_experts, top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        flat = x.reshape(-1, C)
        logits = self.gate(flat)
        top_logits, top_idx = logits.topk(self.top_k, dim=-1)
        weights = top_logits.softmax(-1)
        expert_of = top_idx.reshape(-1)  # (N*k,)
        token_of = torch.arange(flat.shape[0], device=x.device).repeat_interleave(self.top_k)
        order = torch.argsort(expert_of, stable=True)
        sizes = torch.bincount(expert_of, minlength=self.num_experts).tolist()
        rows = token_of[order]
        w = weights.reshape(-1)[order].unsqueeze(-1)
        groups = torch.split(flat[rows], sizes)
        ys = torch.cat(tuple(self.experts[e](g) for e, g in enumerate(groups)), dim=0)
        out = torch.zeros_like(flat).index_add_(0, rows, ys * w)
        return out.view(B, T, C), logits.view(B, T, -1)
