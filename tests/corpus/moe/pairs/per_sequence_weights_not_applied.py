# attnprep: moe
# expect: wrong_output
# diagnosis: moe_routing_per_sequence + moe_weights_not_applied
"""Routes each sequence by its mean router logits and sums the chosen experts' outputs without
their weights: index-based dispatch over (B, T) positions."""

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
        logits = self.gate(x)                                            # (B, T, E)
        pooled = logits.mean(dim=1, keepdim=True).expand(B, T, -1)       # (B, T, E)
        _, idx = torch.topk(pooled, self.top_k, dim=-1)                  # (B, T, k)
        flat, idx = x.reshape(-1, C), idx.reshape(B * T, -1)
        out = torch.zeros_like(flat)
        for e, expert in enumerate(self.experts):
            tok, _ = torch.where(idx == e)
            out.index_add_(0, tok, expert(flat[tok]))
        return out.view(B, T, C)
