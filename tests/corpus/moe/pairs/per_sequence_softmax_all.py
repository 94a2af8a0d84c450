# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_softmax_all_experts
"""Pools the router logits over the sequence, softmax over all experts, and the chosen
probabilities not renormalised: two slips of a first MoE written from memory."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Expert(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, d_ff, bias=False)
        self.up_proj = nn.Linear(d_model, d_ff, bias=False)
        self.down_proj = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    def __init__(self, d_model, d_ff, num_experts, top_k):
        super().__init__()
        self.top_k = top_k
        self.gate = nn.Linear(d_model, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d_model, d_ff) for _ in range(num_experts)])

    def forward(self, x):
        B, T, C = x.shape
        probs = F.softmax(self.gate(x).mean(dim=1), dim=-1)   # (B, E)
        w, idx = probs.topk(self.top_k, dim=-1)                # (B, k), not renormalised
        out = torch.zeros_like(x)
        for b in range(B):
            for j in range(self.top_k):
                out[b] += w[b, j] * self.experts[int(idx[b, j])](x[b])
        return out
