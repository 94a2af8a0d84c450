# attnprep: moe
# expect: wrong_output
# diagnosis: moe_outputs_averaged
"""Picks each token's top_k experts right, then averages their outputs (a mean over the k slots)
instead of weighting them by the router."""

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
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        h = x.view(-1, C)
        _, idx = self.gate(h).topk(self.top_k, dim=-1)          # (N, k)
        slots = h.new_zeros(h.shape[0], self.top_k, C)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.where(idx == e)
            slots[tok, slot] = expert(h[tok])
        return slots.mean(dim=1).view(B, T, C)
# bug-line: 38
